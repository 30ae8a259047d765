#include "daemonset_nodes.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>

namespace vkube::controllers::daemonset {

namespace {

const json& field(const json& obj, const char* key) {
  static const json null;
  if (!obj.is_object()) return null;
  auto it = obj.find(key);
  return it == obj.end() ? null : *it;
}

std::string string_field(const json& obj, const char* key) {
  const json& v = field(obj, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::optional<int64_t> parse_int(const std::string& s) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

bool contains(const json& values, const std::string& v) {
  if (!values.is_array()) return false;
  return std::any_of(values.begin(), values.end(),
                     [&](const json& x) { return x.is_string() && x.get<std::string>() == v; });
}

// One NodeSelectorRequirement against a value lookup (labels or fields).
bool requirement_matches(const json& req,
                         const std::function<std::optional<std::string>(const std::string&)>& get,
                         bool fields) {
  const std::string op = string_field(req, "operator");
  const json& values = field(req, "values");
  std::optional<std::string> v = get(string_field(req, "key"));
  if (op == "In") return v && contains(values, *v);
  if (op == "NotIn") return !v || !contains(values, *v);
  if (fields) return false;  // fields support In and NotIn only
  if (op == "Exists") return v.has_value();
  if (op == "DoesNotExist") return !v.has_value();
  if (op == "Gt" || op == "Lt") {
    if (!v || !values.is_array() || values.size() != 1 || !values[0].is_string()) return false;
    auto have = parse_int(*v);
    auto want = parse_int(values[0].get<std::string>());
    if (!have || !want) return false;
    return op == "Gt" ? *have > *want : *have < *want;
  }
  return false;
}

const json& node_labels(const json& node) {
  return field(field(node, "metadata"), "labels");
}

bool term_matches(const json& term, const json& node) {
  const json& exprs = field(term, "matchExpressions");
  const json& fields = field(term, "matchFields");
  const bool has_exprs = exprs.is_array() && !exprs.empty();
  const bool has_fields = fields.is_array() && !fields.empty();
  if (!has_exprs && !has_fields) return false;
  const json& labels = node_labels(node);
  auto label = [&](const std::string& k) -> std::optional<std::string> {
    const json& v = field(labels, k.c_str());
    if (!v.is_string()) return std::nullopt;
    return v.get<std::string>();
  };
  auto node_field = [&](const std::string& k) -> std::optional<std::string> {
    if (k != "metadata.name") return std::nullopt;
    return string_field(field(node, "metadata"), "name");
  };
  if (has_exprs)
    for (const json& r : exprs)
      if (!requirement_matches(r, label, false)) return false;
  if (has_fields)
    for (const json& r : fields) {
      if (string_field(r, "key") != "metadata.name") return false;
      if (!requirement_matches(r, node_field, true)) return false;
    }
  return true;
}

// kube's GetRequiredNodeAffinity(pod).Match(node).
bool fits_node_affinity(const json& spec, const json& node) {
  const json& selector = field(spec, "nodeSelector");
  if (selector.is_object()) {
    const json& labels = node_labels(node);
    for (auto& [k, v] : selector.items()) {
      const json& have = field(labels, k.c_str());
      if (!have.is_string() || have != v) return false;
    }
  }
  const json& required = field(field(field(spec, "affinity"), "nodeAffinity"),
                               "requiredDuringSchedulingIgnoredDuringExecution");
  if (required.is_null()) return true;
  return node_selector_matches(required, node);
}

// The first taint with an effect `effects` accepts that no toleration covers.
bool has_untolerated(const json& taints, const json& tolerations,
                     const std::function<bool(const std::string&)>& effects) {
  if (!taints.is_array()) return false;
  for (const json& taint : taints) {
    if (!effects(string_field(taint, "effect"))) continue;
    bool tolerated =
        tolerations.is_array() && std::any_of(tolerations.begin(), tolerations.end(),
                                              [&](const json& t) { return tolerates(t, taint); });
    if (!tolerated) return true;
  }
  return false;
}

void add_or_update_toleration(json& spec, json toleration) {
  json& list = spec["tolerations"];
  if (!list.is_array()) list = json::array();
  for (json& t : list) {
    bool same = string_field(t, "key") == string_field(toleration, "key") &&
                string_field(t, "effect") == string_field(toleration, "effect") &&
                string_field(t, "operator") == string_field(toleration, "operator") &&
                string_field(t, "value") == string_field(toleration, "value");
    if (same) {
      t = std::move(toleration);  // e.g. without a template's tolerationSeconds
      return;
    }
  }
  list.push_back(std::move(toleration));
}

}  // namespace

bool node_selector_matches(const json& node_selector, const json& node) {
  const json& terms = field(node_selector, "nodeSelectorTerms");
  if (!terms.is_array()) return false;
  return std::any_of(terms.begin(), terms.end(),
                     [&](const json& term) { return term_matches(term, node); });
}

bool tolerates(const json& toleration, const json& taint) {
  const std::string effect = string_field(toleration, "effect");
  if (!effect.empty() && effect != string_field(taint, "effect")) return false;
  const std::string key = string_field(toleration, "key");
  if (!key.empty() && key != string_field(taint, "key")) return false;
  const std::string op = string_field(toleration, "operator");
  if (op == "Exists") return true;
  if (op.empty() || op == "Equal")
    return string_field(toleration, "value") == string_field(taint, "value");
  return false;
}

void add_daemon_tolerations(json& spec) {
  auto exists = [](const char* key, const char* effect) {
    return json{{"key", key}, {"operator", "Exists"}, {"effect", effect}};
  };
  add_or_update_toleration(spec, exists("node.kubernetes.io/not-ready", "NoExecute"));
  add_or_update_toleration(spec, exists("node.kubernetes.io/unreachable", "NoExecute"));
  add_or_update_toleration(spec, exists("node.kubernetes.io/disk-pressure", "NoSchedule"));
  add_or_update_toleration(spec, exists("node.kubernetes.io/memory-pressure", "NoSchedule"));
  add_or_update_toleration(spec, exists("node.kubernetes.io/pid-pressure", "NoSchedule"));
  add_or_update_toleration(spec, exists("node.kubernetes.io/unschedulable", "NoSchedule"));
  const json& host_network = field(spec, "hostNetwork");
  if (host_network.is_boolean() && host_network.get<bool>())
    add_or_update_toleration(spec, exists("node.kubernetes.io/network-unavailable", "NoSchedule"));
}

Placement placement(const json& node, const json& ds) {
  const std::string node_name = string_field(field(node, "metadata"), "name");
  json spec = field(field(field(ds, "spec"), "template"), "spec");
  if (!spec.is_object()) spec = json::object();
  const std::string pinned = string_field(spec, "nodeName");
  if (!pinned.empty() && pinned != node_name) return {};
  add_daemon_tolerations(spec);
  if (!fits_node_affinity(spec, node)) return {};
  const json& taints = field(field(node, "spec"), "taints");
  const json& tolerations = field(spec, "tolerations");
  bool untolerated = has_untolerated(taints, tolerations, [](const std::string& e) {
    return e == "NoSchedule" || e == "NoExecute";
  });
  if (!untolerated) return {true, true};
  // A pod already there may stay unless a NoExecute taint would evict it.
  bool evicting =
      has_untolerated(taints, tolerations, [](const std::string& e) { return e == "NoExecute"; });
  return {false, !evicting};
}

void pin_to_node(json& spec, const std::string& node_name) {
  json term = {
      {"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node_name}}}}}};
  json& affinity = spec["affinity"];
  if (!affinity.is_object()) affinity = json::object();
  json& node_affinity = affinity["nodeAffinity"];
  if (!node_affinity.is_object()) node_affinity = json::object();
  json& required = node_affinity["requiredDuringSchedulingIgnoredDuringExecution"];
  if (!required.is_object()) required = json::object();
  required["nodeSelectorTerms"] = json::array({std::move(term)});
}

std::string target_node(const json& pod) {
  const json& spec = field(pod, "spec");
  std::string node = string_field(spec, "nodeName");
  if (!node.empty()) return node;
  const json& terms = field(field(field(field(spec, "affinity"), "nodeAffinity"),
                                  "requiredDuringSchedulingIgnoredDuringExecution"),
                            "nodeSelectorTerms");
  if (!terms.is_array()) return {};
  for (const json& term : terms) {
    const json& fields = field(term, "matchFields");
    if (!fields.is_array()) continue;
    for (const json& r : fields) {
      if (string_field(r, "key") != "metadata.name" || string_field(r, "operator") != "In")
        continue;
      const json& values = field(r, "values");
      if (!values.is_array() || values.size() != 1 || !values[0].is_string()) return {};
      return values[0].get<std::string>();
    }
  }
  return {};
}

}  // namespace vkube::controllers::daemonset
