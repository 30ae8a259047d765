// Pod Security admission (kube's PodSecurity plugin): the namespace's
// pod-security.kubernetes.io/{enforce,warn,audit}[-version] labels pick a
// level per mode. Pods that break the enforce level are refused with kube's
// message, so a tenant learns at `kubectl apply`, not when the host refuses
// the pod; the warn level answers Warning headers, for pods and for the
// workloads that template them (kube never refuses a Deployment, it warns).
// Unlabelled namespaces enforce the server's level (baseline for tenants,
// privileged for the host). That level is also the operator's ceiling: a
// tenant admin may label a namespace stricter, never looser (docs/security.md),
// so a looser enforce label is clamped to it, with a warning when it is set.
// vkube keeps no audit log, so the audit labels are checked for validity only.
#include <algorithm>
#include <map>
#include <regex>

#include "builtin/field_errors.h"
#include "errors.h"
#include "object.h"
#include "pod_security_check.h"
#include "pod_security_policy.h"
#include "server_impl.h"

namespace vkube::apiserver {

namespace ps = pod_security;

namespace pod_security {

std::optional<Level> parse_level(const std::string& s) {
  if (s == "privileged") return Level::kPrivileged;
  if (s == "baseline") return Level::kBaseline;
  if (s == "restricted") return Level::kRestricted;
  return std::nullopt;
}

namespace {

const char* const kPrefix = "pod-security.kubernetes.io/";

// nullopt for "latest"; false when `s` is neither "latest" nor "v1.x".
bool parse_version(const std::string& s, std::optional<int>* minor) {
  *minor = std::nullopt;
  if (s == "latest") return true;
  static const std::regex kVersion("^v1\\.(0|[1-9][0-9]{0,8})$");
  std::smatch m;
  if (!std::regex_match(s, m, kVersion)) return false;
  *minor = std::stoi(m[1].str());
  return true;
}

int strictness(Level l) {
  return static_cast<int>(l);
}

}  // namespace

Policy policy_from_labels(const json& labels, const Policy& defaults,
                          std::vector<LabelError>* errors) {
  Policy p = defaults;
  if (!labels.is_object()) return p;
  auto label = [&](const std::string& mode) -> const json* {
    auto it = labels.find(kPrefix + mode);
    return it == labels.end() || !it->is_string() ? nullptr : &*it;
  };
  bool enforce_set = false, warn_set = false, warn_version_set = false;
  struct Mode {
    const char* name;
    LevelVersion* lv;
    Level on_error;
  };
  for (const Mode& m :
       {Mode{"enforce", &p.enforce, Level::kRestricted},
        Mode{"audit", &p.audit, Level::kPrivileged}, Mode{"warn", &p.warn, Level::kPrivileged}}) {
    const std::string mode = m.name;
    if (const json* v = label(mode)) {
      const std::string s = v->get<std::string>();
      auto level = parse_level(s);
      m.lv->level = level.value_or(m.on_error);
      if (mode == "enforce") enforce_set = level.has_value();
      if (mode == "warn") warn_set = true;
      if (!level)
        errors->push_back({kPrefix + mode, s, "must be one of privileged, baseline, restricted"});
    }
    if (const json* v = label(mode + "-version")) {
      const std::string s = v->get<std::string>();
      if (mode == "warn") warn_version_set = true;
      if (!parse_version(s, &m.lv->minor))
        errors->push_back({kPrefix + mode + "-version", s, "must be \"latest\" or \"v1.x\""});
    }
  }
  // A namespace that enforces more than the warn default also warns at it.
  if (!warn_set && enforce_set && strictness(p.enforce.level) > strictness(p.warn.level)) {
    p.warn.level = p.enforce.level;
    if (!warn_version_set) p.warn.minor = p.enforce.minor;
  }
  return p;
}

std::vector<LevelVersion> enforced_levels(const LevelVersion& label, Level ceiling) {
  const LevelVersion top{ceiling, std::nullopt};
  if (ceiling == Level::kPrivileged || label == top) return {label};
  if (strictness(label.level) < strictness(ceiling)) return {top};
  // A stricter level pinned to an old version may admit what the ceiling's
  // latest refuses (restricted:v1.0 has no probe-host check): both must hold.
  return {label, top};
}

}  // namespace pod_security

namespace {

const std::map<std::string, std::vector<std::string>>& templated_kinds() {
  // group/resource -> path to the pod template.
  static const std::map<std::string, std::vector<std::string>> kKinds = {
      {"/replicationcontrollers", {"spec", "template"}},
      {"/podtemplates", {"template"}},
      {"apps/replicasets", {"spec", "template"}},
      {"apps/deployments", {"spec", "template"}},
      {"apps/statefulsets", {"spec", "template"}},
      {"apps/daemonsets", {"spec", "template"}},
      {"batch/jobs", {"spec", "template"}},
      {"batch/cronjobs", {"spec", "jobTemplate", "spec", "template"}},
  };
  return kKinds;
}

using ps::check::member;

ps::Policy defaults(Context& c) {
  // The server's level is enforced, warned and audited by default (kube's
  // AdmissionConfiguration with all three defaults set alike), so a Deployment
  // whose pods the level would refuse is answered with a warning.
  ps::Policy p;
  p.enforce.level =
      ps::parse_level(c.server.options().pod_security).value_or(ps::Level::kPrivileged);
  p.warn = p.audit = p.enforce;
  return p;
}

// The operator's level: what no namespace label may loosen.
ps::Level ceiling(Context& c) {
  return defaults(c).enforce.level;
}

// `lv` raised to the ceiling where it is below it. Warn levels are clamped
// too, so a workload whose pods would be refused is warned about even where
// warn is labelled looser.
ps::LevelVersion clamped(const ps::LevelVersion& lv, ps::Level top) {
  return ps::enforced_levels(lv, top).front();
}

// kube's namespace labels say nothing of a ceiling; the tenant admin who sets
// a looser one learns here that it is not honoured.
void warn_below_ceiling(Context& c, const json& ns) {
  const json& label =
      member(member(member(ns, "metadata"), "labels"), "pod-security.kubernetes.io/enforce");
  if (!label.is_string()) return;
  const auto level = ps::parse_level(label.get<std::string>());
  const ps::Level top = ceiling(c);
  if (!level || static_cast<int>(*level) >= static_cast<int>(top)) return;
  c.warnings.push_back("pod-security.kubernetes.io/enforce=" + label.get<std::string>() +
                       " is below this tenant's ceiling \"" + ps::level_name(top) +
                       "\" and is not honoured: pods in namespace \"" + name_of(ns) +
                       "\" are held to PodSecurity \"" + ps::LevelVersion{top, std::nullopt}.str() +
                       "\"");
}

// The labels of namespace `ns`, or nullopt when it cannot be read.
std::optional<json> namespace_labels(Context& c, const std::string& ns) {
  const Kind* ns_kind = c.server.registry().builtin("", "v1", "namespaces");
  auto kv = c.server.backend().get(Registry::key(*ns_kind, "", ns));
  if (!kv.is_ok()) return std::nullopt;
  auto obj = decode_stored(*kv);
  if (!obj.is_ok()) return std::nullopt;
  return member(member(*obj, "metadata"), "labels");
}

// Only a change of images or of the set of containers is judged again on a
// pod update (kube's isSignificantPodUpdate): metadata and status writes to a
// running pod must not be refused because its namespace became stricter.
bool significant_update(const json& pod, const json& old) {
  const json &spec = member(pod, "spec"), &old_spec = member(old, "spec");
  for (const char* list : {"containers", "initContainers"}) {
    const json &a = member(spec, list), &b = member(old_spec, list);
    const size_t n = a.is_array() ? a.size() : 0;
    if (n != (b.is_array() ? b.size() : 0)) return true;
    for (size_t i = 0; i < n; ++i)
      if (member(a[i], "image") != member(b[i], "image")) return true;
  }
  const json &eph = member(spec, "ephemeralContainers"),
             &old_eph = member(old_spec, "ephemeralContainers");
  if (!eph.is_array()) return false;
  for (const json& e : eph) {
    auto same = [&](const json& o) { return member(o, "name") == member(e, "name"); };
    auto it =
        old_eph.is_array() ? std::find_if(old_eph.begin(), old_eph.end(), same) : old_eph.end();
    if (!old_eph.is_array() || it == old_eph.end() || member(*it, "image") != member(e, "image"))
      return true;
  }
  return false;
}

std::optional<ApiError> label_errors(Context& c, const std::string& name,
                                     const std::vector<ps::LabelError>& errors) {
  FieldErrors fe;
  for (const auto& e : errors)
    fe.push_back(
        {FieldError::Type::kInvalid, "metadata.labels[" + e.label + "]", e.message, e.value});
  return invalid(c.resource(), name, fe);
}

// The warnings kube gives when a namespace's enforce level tightens: which
// existing pods the new level would refuse, grouped by what they break.
void warn_existing_pods(Context& c, const std::string& ns, const ps::LevelVersion& enforce) {
  const Kind* pod_kind = c.server.registry().builtin("", "v1", "pods");
  storage::ListOptions o;
  o.prefix = Registry::key(*pod_kind, ns, "");
  auto listed = c.server.backend().list(o);
  if (!listed.is_ok()) {
    c.warnings.push_back("failed to list pods while checking new PodSecurity enforce level");
    return;
  }
  constexpr size_t kMaxPods = 3000;  // kube's namespaceMaxPodsToCheck
  struct Seen {
    std::string first;
    int count = 0;
  };
  std::map<std::string, Seen> by_reason;
  size_t checked = 0;
  for (const auto& kv : listed->items) {
    if (checked == kMaxPods) break;
    ++checked;
    auto pod = decode_stored(kv);
    if (!pod.is_ok()) continue;
    auto v = ps::evaluate(enforce, member(*pod, "metadata"), member(*pod, "spec"));
    if (v.empty()) continue;
    Seen& s = by_reason[ps::reasons(v)];
    const std::string name = name_of(*pod);
    if (s.count++ == 0 || name < s.first) s.first = name;
  }
  if (checked < listed->items.size())
    c.warnings.push_back("new PodSecurity enforce level only checked against the first " +
                         std::to_string(checked) + " of " + std::to_string(listed->items.size()) +
                         " existing pods");
  if (by_reason.empty()) return;
  c.warnings.push_back("existing pods in namespace \"" + ns +
                       "\" violate the new PodSecurity enforce level \"" + enforce.str() + "\"");
  std::vector<std::string> lines;
  for (const auto& [reason, s] : by_reason) {
    std::string who = s.first;
    if (s.count == 2) who += " (and 1 other pod)";
    if (s.count > 2) who += " (and " + std::to_string(s.count - 1) + " other pods)";
    lines.push_back(who + ": " + reason);
  }
  std::sort(lines.begin(), lines.end());
  for (auto& l : lines) c.warnings.push_back(std::move(l));
}

std::optional<ApiError> admit_namespace_labels(Context& c, const json& ns, const json* old) {
  if (!c.info.subresource.empty()) return std::nullopt;
  const std::string name = name_of(ns);
  std::vector<ps::LabelError> errors, old_errors;
  const ps::Policy p =
      ps::policy_from_labels(member(member(ns, "metadata"), "labels"), defaults(c), &errors);
  if (!old) {
    if (!errors.empty()) return label_errors(c, name, errors);
    warn_below_ceiling(c, ns);
    return std::nullopt;
  }
  const ps::Policy was =
      ps::policy_from_labels(member(member(*old, "metadata"), "labels"), defaults(c), &old_errors);
  auto same_errors = [&] {
    return errors.size() == old_errors.size() &&
           std::equal(errors.begin(), errors.end(), old_errors.begin(),
                      [](auto& a, auto& b) { return a.label == b.label && a.value == b.value; });
  };
  if (!errors.empty() && (old_errors.empty() || !same_errors()))
    return label_errors(c, name, errors);
  warn_below_ceiling(c, ns);
  // What was and is enforced, not what the labels say: relabelling below the
  // ceiling changes nothing.
  const ps::LevelVersion now = clamped(p.enforce, ceiling(c)),
                         before = clamped(was.enforce, ceiling(c));
  if (now == before || now.level == ps::Level::kPrivileged) return std::nullopt;
  if (now.minor == before.minor && static_cast<int>(now.level) <= static_cast<int>(before.level))
    return std::nullopt;
  warn_existing_pods(c, name, now);
  return std::nullopt;
}

void warn(Context& c, const ps::LevelVersion& lv, const json& meta, const json& spec) {
  auto v = ps::evaluate(lv, meta, spec);
  if (v.empty()) return;
  std::string w = "would violate PodSecurity \"" + lv.str() + "\": " + ps::join(v);
  if (std::find(c.warnings.begin(), c.warnings.end(), w) == c.warnings.end())
    c.warnings.push_back(std::move(w));
}

}  // namespace

std::optional<ApiError> admit_pod_security(Context& c, const json& obj, const json* old) {
  const api::Resource& r = c.resource();
  if (r.is_custom) return std::nullopt;
  if (r.plural == "namespaces" && r.gv.group.empty()) return admit_namespace_labels(c, obj, old);
  const std::string& ns = c.info.namespace_;
  if (ns.empty()) return std::nullopt;
  const bool is_pod = r.plural == "pods" && r.gv.group.empty();
  const json* meta = &member(obj, "metadata");
  const json* spec = &member(obj, "spec");
  if (is_pod) {
    static const char* const kIgnored[] = {"exec", "attach",      "binding", "eviction",
                                           "log",  "portforward", "proxy",   "status"};
    const std::string& sub = c.info.subresource;
    if (std::find(std::begin(kIgnored), std::end(kIgnored), sub) != std::end(kIgnored))
      return std::nullopt;
    if (old && !significant_update(obj, *old)) return std::nullopt;
  } else {
    auto it = templated_kinds().find(r.gv.group + "/" + r.plural);
    if (it == templated_kinds().end() || !c.info.subresource.empty()) return std::nullopt;
    const json* t = &obj;
    for (const auto& step : it->second) t = &member(*t, step.c_str());
    if (t->is_null()) return std::nullopt;
    meta = &member(*t, "metadata");
    spec = &member(*t, "spec");
  }
  std::vector<ps::LabelError> ignored;
  auto labels = namespace_labels(c, ns);
  const ps::Policy p = ps::policy_from_labels(labels ? *labels : json(), defaults(c), &ignored);
  const ps::Level top = ceiling(c);
  if (is_pod) {
    for (const ps::LevelVersion& lv : ps::enforced_levels(p.enforce, top)) {
      auto v = ps::evaluate(lv, *meta, *spec);
      if (v.empty()) continue;
      const std::string name = name_of(obj);
      return ApiError(
          Status(Code::kForbidden, "pods \"" + name + "\" is forbidden: violates PodSecurity \"" +
                                       lv.str() + "\": " + ps::join(v)),
          {{"name", name}, {"kind", "pods"}});
    }
  }
  warn(c, clamped(p.warn, top), *meta, *spec);
  return std::nullopt;
}

}  // namespace vkube::apiserver
