// The restricted checks of the Pod Security Standards, and the table that
// runs them with the baseline ones (pod_security_baseline.cpp) in kube's
// order, a restricted check replacing the baseline check it tightens from the
// version kube made it do so.
#include <algorithm>
#include <set>

#include "pod_security_check.h"

namespace vkube::apiserver::pod_security {

namespace check {

Result allow_privilege_escalation(const Pod& p) {
  if (p.minor >= 25 && p.windows()) return std::nullopt;
  Names bad;
  p.each_container([&](const json&, const std::string& name, const json& sc) {
    if (!is_false(member(sc, "allowPrivilegeEscalation"))) bad.push_back(name);
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"allowPrivilegeEscalation != false",
                   containers(bad) + " must set securityContext.allowPrivilegeEscalation=false"};
}

Result capabilities_restricted(const Pod& p) {
  if (p.minor >= 25 && p.windows()) return std::nullopt;
  Names no_drop, adding;
  std::set<std::string> caps;
  p.each_container([&](const json&, const std::string& name, const json& sc) {
    const json& c = member(sc, "capabilities");
    const json& drop = member(c, "drop");
    bool drops_all = false;
    if (drop.is_array())
      for (const json& d : drop) drops_all |= text(d) == "ALL";
    if (!drops_all) no_drop.push_back(name);
    bool bad = false;
    if (const json& add = member(c, "add"); add.is_array())
      for (const json& a : add)
        if (text(a) != "NET_BIND_SERVICE") {
          bad = true;
          caps.insert(text(a));
        }
    if (bad) adding.push_back(name);
  });
  Names details;
  if (!no_drop.empty())
    details.push_back(containers(no_drop) +
                      " must set securityContext.capabilities.drop=[\"ALL\"]");
  if (!adding.empty())
    details.push_back(containers(adding) + " must not include " +
                      quote_all({caps.begin(), caps.end()}) +
                      " in securityContext.capabilities.add");
  if (details.empty()) return std::nullopt;
  return Violation{"unrestricted capabilities", join_with(details, "; ")};
}

Result restricted_volumes(const Pod& p) {
  static const char* const kAllowed[] = {"configMap", "csi",   "downwardAPI",           "emptyDir",
                                         "ephemeral", "image", "persistentVolumeClaim", "projected",
                                         "secret"};
  // In kube's order: a volume is named by the first of these it sets.
  static const char* const kRestricted[] = {"hostPath",
                                            "gcePersistentDisk",
                                            "awsElasticBlockStore",
                                            "gitRepo",
                                            "nfs",
                                            "iscsi",
                                            "glusterfs",
                                            "rbd",
                                            "flexVolume",
                                            "cinder",
                                            "cephfs",
                                            "flocker",
                                            "fc",
                                            "azureFile",
                                            "vsphereVolume",
                                            "quobyte",
                                            "azureDisk",
                                            "photonPersistentDisk",
                                            "portworxVolume",
                                            "scaleIO",
                                            "storageos"};
  Names bad;
  std::set<std::string> types;
  if (const json& vs = member(p.spec, "volumes"); vs.is_array())
    for (const json& v : vs) {
      if (std::any_of(std::begin(kAllowed), std::end(kAllowed),
                      [&](const char* k) { return !member(v, k).is_null(); }))
        continue;
      auto it = std::find_if(std::begin(kRestricted), std::end(kRestricted),
                             [&](const char* k) { return !member(v, k).is_null(); });
      // A volume that names no source is an emptyDir: kube defaults it so
      // before admission sees it (SetDefaults_Volume).
      if (it == std::end(kRestricted)) continue;
      bad.push_back(text(member(v, "name")));
      types.insert(*it);
    }
  if (bad.empty()) return std::nullopt;
  return Violation{"restricted volume types",
                   std::string(plural("volume", "volumes", bad.size())) + " " + quote_all(bad) +
                       " " + plural("uses", "use", bad.size()) + " " +
                       plural("restricted volume type", "restricted volume types", types.size()) +
                       " " + quote_all({types.begin(), types.end()})};
}

Result run_as_non_root(const Pod& p) {
  if (p.minor >= 35 && p.user_namespace()) return std::nullopt;
  const json& pod = member(p.sc(), "runAsNonRoot");
  const bool pod_bad = is_false(pod), pod_ok = is_true(pod);
  Names bad, unset;
  p.each_container([&](const json&, const std::string& name, const json& sc) {
    const json& v = member(sc, "runAsNonRoot");
    if (v.is_boolean()) {
      if (!v.get<bool>()) bad.push_back(name);
    } else if (!pod_ok) {
      unset.push_back(name);
    }
  });
  if (pod_bad || !bad.empty())
    return Violation{"runAsNonRoot != true",
                     setters(pod_bad, bad) + " must not set securityContext.runAsNonRoot=false"};
  if (!unset.empty())
    return Violation{"runAsNonRoot != true",
                     "pod or " + containers(unset) + " must set securityContext.runAsNonRoot=true"};
  return std::nullopt;
}

Result run_as_user(const Pod& p) {
  if (p.minor >= 35 && p.user_namespace()) return std::nullopt;
  auto root = [](const json& sc) {
    const json& u = member(sc, "runAsUser");
    return u.is_number_integer() && u.get<int64_t>() == 0;
  };
  Names bad;
  p.each_container([&](const json&, const std::string& name, const json& sc) {
    if (root(sc)) bad.push_back(name);
  });
  const bool pod_bad = root(p.sc());
  if (!pod_bad && bad.empty()) return std::nullopt;
  return Violation{"runAsUser=0", setters(pod_bad, bad) + " must not set runAsUser=0"};
}

Result seccomp_restricted(const Pod& p) {
  if (p.minor >= 25 && p.windows()) return std::nullopt;
  return seccomp_fields(p, true);
}

namespace {

// A check as kube registers it: the first version it applies at, and for a
// restricted check the version from which it replaces a baseline check.
struct Check {
  Level level;
  int since;
  Result (*run)(const Pod&);
  Result (*replaces)(const Pod&) = nullptr;
  int replaces_since = 0;
};

// Baseline checks sorted by kube's check ID, then restricted ones: the order
// kube reports violations in.
const std::vector<Check>& checks() {
  static const std::vector<Check> kChecks = {
      {Level::kBaseline, 0, app_armor},
      {Level::kBaseline, 0, capabilities_baseline},
      {Level::kBaseline, 0, host_namespaces},
      {Level::kBaseline, 0, host_path_volumes},
      {Level::kBaseline, 0, host_ports},
      {Level::kBaseline, 34, host_probes},
      {Level::kBaseline, 0, privileged},
      {Level::kBaseline, 0, proc_mount_baseline},
      {Level::kBaseline, 0, se_linux_options},
      {Level::kBaseline, 0, seccomp_baseline},
      {Level::kBaseline, 0, sysctls},
      {Level::kBaseline, 0, windows_host_process},
      {Level::kRestricted, 8, allow_privilege_escalation},
      {Level::kRestricted, 22, capabilities_restricted, capabilities_baseline, 22},
      {Level::kRestricted, 35, proc_mount_strict, proc_mount_baseline, 35},
      {Level::kRestricted, 0, restricted_volumes, host_path_volumes, 0},
      {Level::kRestricted, 0, run_as_non_root},
      {Level::kRestricted, 23, run_as_user},
      {Level::kRestricted, 19, seccomp_restricted, seccomp_baseline, 19},
  };
  return kChecks;
}

}  // namespace

}  // namespace check

const char* level_name(Level l) {
  return l == Level::kRestricted ? "restricted" : l == Level::kBaseline ? "baseline" : "privileged";
}

std::string LevelVersion::str() const {
  return std::string(level_name(level)) + ":" + (minor ? "v1." + std::to_string(*minor) : "latest");
}

std::vector<Violation> evaluate(const LevelVersion& lv, const json& pod_meta,
                                const json& pod_spec) {
  std::vector<Violation> out;
  if (lv.level == Level::kPrivileged) return out;
  const check::Pod pod{pod_meta, pod_spec, std::min(lv.minor.value_or(kNewestMinor), kNewestMinor)};
  const bool restricted = lv.level == Level::kRestricted;
  std::set<check::Result (*)(const check::Pod&)> replaced;
  if (restricted)
    for (const check::Check& c : check::checks())
      if (c.replaces && pod.minor >= c.replaces_since) replaced.insert(c.replaces);
  for (const check::Check& c : check::checks()) {
    if (pod.minor < c.since || (c.level == Level::kRestricted && !restricted)) continue;
    if (replaced.count(c.run) && c.level == Level::kBaseline) continue;
    if (auto v = c.run(pod)) out.push_back(std::move(*v));
  }
  return out;
}

std::string join(const std::vector<Violation>& v) {
  std::string out;
  for (const auto& x : v) {
    if (!out.empty()) out += ", ";
    out += x.reason;
    if (!x.detail.empty()) out += " (" + x.detail + ")";
  }
  return out;
}

std::string reasons(const std::vector<Violation>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x.reason;
  return out;
}

}  // namespace vkube::apiserver::pod_security
