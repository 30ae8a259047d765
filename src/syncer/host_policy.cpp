// The operator's host policy (see host_policy.h).
#include "vkube/syncer/host_policy.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "host_policy_nodes.h"

namespace vkube::syncer {

namespace {

using json = nlohmann::json;

constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";
constexpr std::string_view kDefaultScheduler = "default-scheduler";

// Labels and annotations host schedulers and queues read: the operator's
// (KAI, Kueue, Volcano, the scheduler-plugins' pod groups, Run:ai).
constexpr std::string_view kSchedulingPrefixes[] = {
    "kai.scheduler/", "kueue.x-k8s.io/", "scheduling.x-k8s.io/", "volcano.sh/",
    "scheduling.volcano.sh/", "scheduling.k8s.io/", "runai/",
    // KAI's binder's, on the pod it binds (a GPU share's group, what it got):
    // a tenant's own would misstate to KAI which shared GPU the pod holds,
    // and be written back over the binder's on every sync.
    "runai-gpu-group", "received-resource-type"};

std::string str(const json& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& sub(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

// What kube's DefaultTolerationSeconds gives every pod: allowed whatever the
// operator lists, or no pod could be admitted.
const std::vector<TolerationRule>& always_tolerated() {
  static const std::vector<TolerationRule> kRules = {
      {"node.kubernetes.io/not-ready", "", "NoExecute"},
      {"node.kubernetes.io/unreachable", "", "NoExecute"}};
  return kRules;
}

// Every toleration rule in force.
std::string tolerations_text(const HostPolicy& p) {
  std::vector<std::string> items;
  for (const TolerationRule& r : always_tolerated()) items.push_back(r.str());
  for (const TolerationRule& r : p.tolerations)
    if (std::find(always_tolerated().begin(), always_tolerated().end(), r) ==
        always_tolerated().end())
      items.push_back(r.str());
  return joined(items);
}

bool tolerated(const HostPolicy& p, const std::string& key, const std::string& op,
               const std::string& value, const std::string& effect) {
  auto allows = [&](const TolerationRule& r) {
    return r.key == key && (r.effect.empty() || r.effect == effect) &&
           (r.value.empty() || (op != "Exists" && r.value == value));
  };
  return std::any_of(always_tolerated().begin(), always_tolerated().end(), allows) ||
         std::any_of(p.tolerations.begin(), p.tolerations.end(), allows);
}

bool node_key_allowed(const HostPolicy& p, const std::string& key) {
  // The operator's own keys: every host pod already requires its value, so
  // the tenant's terms on them can only narrow the slice.
  if (p.node_selector.count(key)) return true;
  if (key == kHostnameLabel) return false;
  return std::any_of(p.node_label_keys.begin(), p.node_label_keys.end(), [&](const std::string& k) {
    return !k.empty() && k.back() == '*'
               ? key.starts_with(std::string_view(k).substr(0, k.size() - 1))
               : key == k;
  });
}

class Checker {
 public:
  explicit Checker(const HostPolicy& p) : p_(p) {}

  void node_key(const std::string& field, const std::string& key) {
    if (node_key_allowed(p_, key)) return;
    add(field,
        key == kHostnameLabel ? "node label \"" + key + "\" names one host node"
                              : "node label \"" + key + "\" is not allowed",
        joined(p_.node_label_keys));
  }

  // A topology key only groups nodes: the node's own name may be one.
  void topology_key(const std::string& field, const std::string& key) {
    if (key != kHostnameLabel) node_key(field, key);
  }

  void node_term(const std::string& field, const json& term) {
    const json& exprs = sub(term, "matchExpressions");
    if (exprs.is_array())
      for (size_t j = 0; j < exprs.size(); ++j)
        node_key(field + ".matchExpressions[" + std::to_string(j) + "].key", str(exprs[j], "key"));
    const json& fields = sub(term, "matchFields");
    if (fields.is_array())
      for (size_t j = 0; j < fields.size(); ++j)
        add(field + ".matchFields[" + std::to_string(j) + "]",
            "selecting host nodes by name is not allowed", "");
  }

  void pod_term(const std::string& field, const json& term) {
    const json& ns = sub(term, "namespaces");
    if ((ns.is_array() && !ns.empty()) || (sub(term, "namespaceSelector").is_object()))
      add(field, "namespaces and namespaceSelector would select the host's namespaces", "");
    topology_key(field + ".topologyKey", str(term, "topologyKey"));
  }

  void tolerations(const json& list) {
    if (!list.is_array()) return;
    for (size_t i = 0; i < list.size(); ++i) {
      const json& t = list[i];
      const std::string field = "tolerations[" + std::to_string(i) + "]";
      const std::string key = str(t, "key"), effect = str(t, "effect");
      const std::string op = str(t, "operator").empty() ? "Equal" : str(t, "operator");
      const std::string value = str(t, "value");
      if (key.empty()) {
        add(field, "operator " + op + " with no key tolerates every taint", tolerations_text(p_));
      } else if (!tolerated(p_, key, op, value, effect)) {
        TolerationRule asked{key, op == "Exists" ? "" : value, effect};
        add(field,
            "tolerating \"" + asked.str() + "\"" + (effect.empty() ? " (every effect)" : "") +
                " is not allowed",
            tolerations_text(p_));
      }
    }
  }

  void affinity(const json& a) {
    const json& na = sub(a, "nodeAffinity");
    const std::string nbase = "affinity.nodeAffinity.";
    const json& terms =
        sub(sub(na, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
    if (terms.is_array())
      for (size_t i = 0; i < terms.size(); ++i)
        node_term(nbase + "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[" +
                      std::to_string(i) + "]",
                  terms[i]);
    const json& preferred = sub(na, "preferredDuringSchedulingIgnoredDuringExecution");
    if (preferred.is_array())
      for (size_t i = 0; i < preferred.size(); ++i)
        node_term(nbase + "preferredDuringSchedulingIgnoredDuringExecution[" + std::to_string(i) +
                      "].preference",
                  sub(preferred[i], "preference"));
    for (const char* kind : {"podAffinity", "podAntiAffinity"}) {
      const json& pa = sub(a, kind);
      const std::string base = "affinity." + std::string(kind) + ".";
      const json& req = sub(pa, "requiredDuringSchedulingIgnoredDuringExecution");
      if (req.is_array())
        for (size_t i = 0; i < req.size(); ++i)
          pod_term(
              base + "requiredDuringSchedulingIgnoredDuringExecution[" + std::to_string(i) + "]",
              req[i]);
      const json& pref = sub(pa, "preferredDuringSchedulingIgnoredDuringExecution");
      if (pref.is_array())
        for (size_t i = 0; i < pref.size(); ++i)
          pod_term(base + "preferredDuringSchedulingIgnoredDuringExecution[" + std::to_string(i) +
                       "].podAffinityTerm",
                   sub(pref[i], "podAffinityTerm"));
    }
  }

  void add(std::string field, std::string message, std::string allowed, bool overridden = false) {
    out.push_back({std::move(field), std::move(message), std::move(allowed), overridden});
  }

  std::vector<PolicyViolation> out;

 private:
  const HostPolicy& p_;
};

bool scheduling_key(const HostPolicy& p, const std::string& key) {
  if (p.labels.count(key)) return true;
  return std::any_of(std::begin(kSchedulingPrefixes), std::end(kSchedulingPrefixes),
                     [&](std::string_view prefix) { return key.starts_with(prefix); });
}

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string_view::npos) j = text.size();
    std::string_view item = text.substr(i, j - i);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    i = j + 1;
  }
  if (out.size() == 1 && out[0] == "none") out.clear();
  return out;
}

Result<TolerationRule> parse_rule(std::string_view text) {
  TolerationRule r;
  std::string_view rest = text;
  if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    r.effect = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (r.effect != "NoSchedule" && r.effect != "PreferNoSchedule" && r.effect != "NoExecute")
      return Status::invalid("toleration \"" + std::string(text) + "\": effect must be " +
                             "NoSchedule, PreferNoSchedule or NoExecute");
  }
  if (auto eq = rest.find('='); eq != std::string_view::npos) {
    r.value = rest.substr(eq + 1);
    rest = rest.substr(0, eq);
  }
  r.key = rest;
  if (r.key.empty())
    return Status::invalid("toleration \"" + std::string(text) +
                           "\": a key is required (a toleration of every taint is never allowed)");
  return r;
}

Status check_node_key(const std::string& k) {
  if (k.empty() || k == "*")
    return Status::invalid("node label key \"" + k + "\": name a key or a prefix ending in *");
  if (k == kHostnameLabel)
    return Status::invalid("node label key \"" + k + "\" names one host node: never allowed");
  return Status::ok();
}

Status check_service_type(const std::string& t) {
  if (t != "ClusterIP" && t != "NodePort" && t != "LoadBalancer" && t != "ExternalName")
    return Status::invalid("service type \"" + t +
                           "\": must be ClusterIP, NodePort, LoadBalancer or ExternalName");
  return Status::ok();
}

Status check_volume_type(const std::string& t) {
  // A pod's volume source field: a lowerCamelCase name such as nfs or hostPath.
  if (t.empty() || !std::islower(static_cast<unsigned char>(t[0])) ||
      !std::all_of(t.begin(), t.end(),
                   [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)); }))
    return Status::invalid("\"" + t + "\" is not a volume type (e.g. nfs, hostPath)");
  return Status::ok();
}

Status check_runtime_class(const std::string& c) {
  const bool ok =
      !c.empty() && c.size() <= 253 && std::isalnum(static_cast<unsigned char>(c[0])) &&
      std::isalnum(static_cast<unsigned char>(c.back())) &&
      std::all_of(c.begin(), c.end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.';
      });
  return ok ? Status::ok()
            : Status::invalid("runtime class \"" + c + "\": must be a lowercase DNS subdomain");
}

template <typename Check>
Result<std::vector<std::string>> parse_checked(std::string_view text, Check check) {
  std::vector<std::string> items = split(text);
  for (const std::string& s : items) VKUBE_RETURN_IF_ERROR(check(s));
  return items;
}

// A list of strings at doc[key], each passing `check`.
Status strings_at(const json& doc, const char* key, Status (*check)(const std::string&),
                  std::vector<std::string>& out) {
  auto it = doc.find(key);
  if (it == doc.end()) return Status::ok();
  if (!it->is_array()) return Status::invalid(std::string(key) + ": must be a list");
  std::vector<std::string> items;
  for (const json& s : *it) {
    if (!s.is_string()) return Status::invalid(std::string(key) + ": entries must be strings");
    Status c = check(s.get<std::string>());
    if (!c.is_ok()) return Status::invalid(std::string(key) + ": " + c.message());
    items.push_back(s.get<std::string>());
  }
  out = std::move(items);
  return Status::ok();
}

}  // namespace

std::string TolerationRule::str() const {
  return key + (value.empty() ? "" : "=" + value) + (effect.empty() ? "" : ":" + effect);
}

std::vector<TolerationRule> default_toleration_rules() {
  return {{"node.kubernetes.io/not-ready", "", "NoExecute"},
          {"node.kubernetes.io/unreachable", "", "NoExecute"},
          {"node.kubernetes.io/disk-pressure", "", "NoSchedule"},
          {"node.kubernetes.io/memory-pressure", "", "NoSchedule"},
          {"node.kubernetes.io/pid-pressure", "", "NoSchedule"},
          {"nvidia.com/gpu", "", ""}};
}

std::vector<std::string> default_node_label_keys() {
  return {"nvidia.com/gpu.*",
          "nvidia.com/mig.*",
          "nvidia.com/cuda.*",
          "nvidia.com/mps.capable",
          "topology.kubernetes.io/zone",
          "topology.kubernetes.io/region",
          "kubernetes.io/arch",
          "kubernetes.io/os",
          "node.kubernetes.io/instance-type"};
}

std::string PolicyViolation::str(std::string_view prefix) const {
  return std::string(prefix) + field + ": " + message +
         (allowed.empty() ? "" : " (allowed: " + allowed + ")");
}

std::string join_violations(const std::vector<PolicyViolation>& v, std::string_view prefix) {
  std::string out;
  for (const PolicyViolation& x : v) out += (out.empty() ? "" : "; ") + x.str(prefix);
  return out;
}

std::vector<std::string> default_volume_types() {
  return {"configMap", "csi",   "downwardAPI",           "emptyDir",
          "ephemeral", "image", "persistentVolumeClaim", "projected",
          "secret"};
}

std::vector<PolicyViolation> pod_violations(const HostPolicy& policy, const json& spec) {
  Checker c(policy);
  if (const json& volumes = sub(spec, "volumes"); volumes.is_array())
    for (size_t i = 0; i < volumes.size(); ++i) {
      if (!volumes[i].is_object()) continue;
      for (auto it = volumes[i].begin(); it != volumes[i].end(); ++it) {
        if (it.key() == "name") continue;
        const auto& types = policy.volume_types;
        if (std::find(types.begin(), types.end(), it.key()) == types.end())
          c.add("volumes[" + std::to_string(i) + "]." + it.key(),
                "volume type " + it.key() + " is not allowed", joined(types));
      }
    }
  const std::string scheduler = str(spec, "schedulerName");
  if (!scheduler.empty() && scheduler != kDefaultScheduler && scheduler != policy.scheduler_name)
    c.add("schedulerName",
          "\"" + scheduler + "\" is not allowed: the operator chooses the host's scheduler",
          std::string(kDefaultScheduler) +
              (policy.scheduler_name.empty() ? "" : ", " + policy.scheduler_name),
          true);
  c.tolerations(sub(spec, "tolerations"));
  if (const json& sel = sub(spec, "nodeSelector"); sel.is_object())
    for (auto it = sel.begin(); it != sel.end(); ++it) {
      const std::string field = "nodeSelector[" + it.key() + "]";
      auto enforced = policy.node_selector.find(it.key());
      if (enforced == policy.node_selector.end())
        c.node_key(field, it.key());
      else if (!it->is_string() || it->get<std::string>() != enforced->second)
        // As kube's PodNodeSelector admission refuses a pod that conflicts
        // with its namespace's selector; the host copy gets the operator's.
        c.add(field,
              (it->is_string() ? "\"" + it->get<std::string>() + "\" " : std::string()) +
                  "conflicts with the tenant's node selector: its pods run only on its own nodes",
              node_selector_text(policy.node_selector), true);
    }
  c.affinity(sub(spec, "affinity"));
  if (const json& tsc = sub(spec, "topologySpreadConstraints"); tsc.is_array())
    for (size_t i = 0; i < tsc.size(); ++i)
      c.topology_key("topologySpreadConstraints[" + std::to_string(i) + "].topologyKey",
                     str(tsc[i], "topologyKey"));
  const std::string runtime = str(spec, "runtimeClassName");
  if (!runtime.empty() && std::find(policy.runtime_classes.begin(), policy.runtime_classes.end(),
                                    runtime) == policy.runtime_classes.end())
    c.add("runtimeClassName", "\"" + runtime + "\" is not allowed", joined(policy.runtime_classes));
  return std::move(c.out);
}

std::vector<std::string> stripped_keys(const HostPolicy& policy, const json& map) {
  std::vector<std::string> out;
  if (!map.is_object()) return out;
  for (auto it = map.begin(); it != map.end(); ++it)
    if (scheduling_key(policy, it.key())) out.push_back(it.key());
  return out;
}

Status apply_pod_policy(const HostPolicy& policy, json& host_pod) {
  json& spec = host_pod["spec"];
  std::vector<PolicyViolation> refused = pod_violations(policy, spec);
  std::erase_if(refused, [](const PolicyViolation& v) { return v.overridden; });
  if (!refused.empty())
    return Status(Code::kForbidden,
                  "refused by the tenant's host policy: " + join_violations(refused, "spec."));
  json& meta = host_pod["metadata"];
  for (const char* part : {"labels", "annotations"}) {
    auto it = meta.find(part);
    if (it == meta.end()) continue;
    for (const std::string& k : stripped_keys(policy, *it)) it->erase(k);
    if (it->empty() && policy.labels.empty()) meta.erase(part);
  }
  for (const auto& [k, v] : policy.labels) meta["labels"][k] = v;
  if (policy.scheduler_name.empty())
    spec.erase("schedulerName");
  else
    spec["schedulerName"] = policy.scheduler_name;
  // Priority is the tenant's as a whole: a tenant cannot outrank the others
  // by naming a class of its own.
  spec.erase("priority");
  spec.erase("priorityClassName");
  if (!policy.priority_class.empty()) spec["priorityClassName"] = policy.priority_class;
  // The tenant's slice: its own entries of other keys stay and narrow it.
  for (const auto& [k, v] : policy.node_selector) spec["nodeSelector"][k] = v;
  return Status::ok();
}

std::vector<PolicyViolation> service_violations(const HostPolicy& policy, const json& spec) {
  std::vector<PolicyViolation> out;
  const std::string type = str(spec, "type").empty() ? "ClusterIP" : str(spec, "type");
  if (type == "ExternalName") return out;
  const auto& types = policy.service_types;
  if (std::find(types.begin(), types.end(), type) == types.end()) {
    std::vector<std::string> allowed = types;
    allowed.push_back("ExternalName");
    out.push_back({"type", type + " is not allowed", joined(allowed), false});
  }
  if (const json& ips = sub(spec, "externalIPs"); ips.is_array() && !ips.empty())
    out.push_back({"externalIPs", "not allowed: the host's nodes would answer for these addresses",
                   "", false});
  return out;
}

bool tenant_only_service(const json& service) {
  return str(sub(service, "spec"), "type") == "ExternalName";
}

Status merge_policy_file(const json& doc, HostPolicy& policy) {
  if (doc.is_null()) return Status::ok();
  if (!doc.is_object()) return Status::invalid("the host policy must be a mapping");
  static const std::set<std::string> kKeys = {"allowedTolerations",    "allowedNodeSelectorKeys",
                                              "allowedRuntimeClasses", "allowedServiceTypes",
                                              "allowedVolumeTypes",    "nodeSelector"};
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!kKeys.count(it.key()))
      return Status::invalid("unknown field \"" + it.key() + "\" (known: allowedTolerations, " +
                             "allowedNodeSelectorKeys, allowedRuntimeClasses, " +
                             "allowedServiceTypes, allowedVolumeTypes, nodeSelector)");
  if (auto it = doc.find("nodeSelector"); it != doc.end())
    VKUBE_RETURN_IF_ERROR(merge_node_selector(*it, policy));
  if (auto it = doc.find("allowedTolerations"); it != doc.end()) {
    if (!it->is_array()) return Status::invalid("allowedTolerations: must be a list");
    std::vector<TolerationRule> rules;
    for (const json& t : *it) {
      Result<TolerationRule> r = TolerationRule{};
      if (t.is_string())
        r = parse_rule(t.get<std::string>());
      else if (t.is_object())
        r = parse_rule(TolerationRule{str(t, "key"), str(t, "value"), str(t, "effect")}.str());
      else
        return Status::invalid("allowedTolerations: entries are key[=value][:effect] or mappings");
      if (!r.is_ok()) return Status::invalid("allowedTolerations: " + r.status().message());
      rules.push_back(std::move(r).value());
    }
    policy.tolerations = std::move(rules);
  }
  VKUBE_RETURN_IF_ERROR(
      strings_at(doc, "allowedNodeSelectorKeys", check_node_key, policy.node_label_keys));
  VKUBE_RETURN_IF_ERROR(
      strings_at(doc, "allowedRuntimeClasses", check_runtime_class, policy.runtime_classes));
  VKUBE_RETURN_IF_ERROR(
      strings_at(doc, "allowedVolumeTypes", check_volume_type, policy.volume_types));
  return strings_at(doc, "allowedServiceTypes", check_service_type, policy.service_types);
}

Result<std::vector<TolerationRule>> parse_toleration_rules(std::string_view text) {
  std::vector<TolerationRule> out;
  for (const std::string& s : split(text)) {
    auto r = parse_rule(s);
    if (!r.is_ok()) return r.status();
    out.push_back(std::move(r).value());
  }
  return out;
}

Result<std::vector<std::string>> parse_node_label_keys(std::string_view text) {
  return parse_checked(text, check_node_key);
}

Result<std::vector<std::string>> parse_service_types(std::string_view text) {
  return parse_checked(text, check_service_type);
}

Result<std::vector<std::string>> parse_runtime_classes(std::string_view text) {
  return parse_checked(text, check_runtime_class);
}

}  // namespace vkube::syncer
