// The checks of the Pod Security Standards (pod_security_policy.h). Each check
// reads the fields kube's check reads and words its result as kube does, so a
// tenant sees kube's own message; the version gates follow kube's policy
// versions (a check's behaviour at v1.x is what kube v1.x enforced).
#include <algorithm>
#include <set>

#include "pod_security_policy.h"

namespace vkube::apiserver::pod_security {

namespace {

using Names = std::vector<std::string>;

const json& member(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
std::string text(const json& j) {
  return j.is_string() ? j.get<std::string>() : "";
}
bool is_true(const json& j) {
  return j.is_boolean() && j.get<bool>();
}
bool is_false(const json& j) {
  return j.is_boolean() && !j.get<bool>();
}

std::string quote_all(const Names& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "\"" : ", \"") + s + "\"";
  return out;
}
std::string join_with(const Names& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}
const char* plural(const char* one, const char* many, size_t n) {
  return n == 1 ? one : many;
}
// "container \"a\"" or "containers \"a\", \"b\"".
std::string containers(const Names& names) {
  return std::string(plural("container", "containers", names.size())) + " " + quote_all(names);
}

// The pod being judged, and the version its checks run at.
struct Pod {
  const json& meta;
  const json& spec;
  int minor;
  const json& sc() const { return member(spec, "securityContext"); }
  bool windows() const { return text(member(member(spec, "os"), "name")) == "windows"; }
  // kube relaxes some checks for pods in a user namespace (hostUsers: false).
  bool user_namespace() const { return is_false(member(spec, "hostUsers")); }
  // Init, regular and ephemeral containers, in kube's visiting order.
  template <typename F>
  void each_container(F&& f) const {
    for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
      const json& cs = member(spec, list);
      if (!cs.is_array()) continue;
      for (const json& c : cs)
        if (c.is_object()) f(c, text(member(c, "name")), member(c, "securityContext"));
    }
  }
};

using Result = std::optional<Violation>;

// The pod and containers that set a field badly: "pod and containers \"a\"".
std::string setters(bool pod, const Names& bad) {
  Names who;
  if (pod) who.push_back("pod");
  if (!bad.empty()) who.push_back(containers(bad));
  return join_with(who, " and ");
}

Result app_armor(const Pod& p) {
  auto allowed_type = [](const std::string& t) {
    return t == "RuntimeDefault" || t == "Localhost";
  };
  std::set<std::string> values;
  bool pod_bad = false;
  if (const json& prof = member(p.sc(), "appArmorProfile"); !prof.is_null()) {
    if (!allowed_type(text(member(prof, "type")))) {
      pod_bad = true;
      values.insert(text(member(prof, "type")));
    }
  }
  Names bad;
  p.each_container([&](const json&, const std::string& name, const json& sc) {
    const json& prof = member(sc, "appArmorProfile");
    if (!prof.is_null() && !allowed_type(text(member(prof, "type")))) {
      bad.push_back(name);
      values.insert(text(member(prof, "type")));
    }
  });
  Names listed(values.begin(), values.end());
  Names annotations;
  static const std::string kPrefix = "container.apparmor.security.beta.kubernetes.io/";
  if (const json& a = member(p.meta, "annotations"); a.is_object())
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string v = text(it.value());
      if (it.key().rfind(kPrefix, 0) == 0 && !v.empty() && v != "runtime/default" &&
          v.rfind("localhost/", 0) != 0)
        annotations.push_back(it.key() + "=\"" + v + "\"");
    }
  std::string who = setters(pod_bad, bad);
  if (!annotations.empty()) {
    std::sort(annotations.begin(), annotations.end());
    listed.insert(listed.end(), annotations.begin(), annotations.end());
    who += std::string(who.empty() ? "" : " and ") +
           plural("annotation", "annotations", annotations.size());
  }
  if (who.empty()) return std::nullopt;
  return Violation{
      plural("forbidden AppArmor profile", "forbidden AppArmor profiles", listed.size()),
      who + " must not set AppArmor profile type to " + quote_all(listed)};
}

Result capabilities_baseline(const Pod& p) {
  static const std::set<std::string> kAllowed = {
      "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",      "MKNOD",
      "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT"};
  Names bad;
  std::set<std::string> caps;
  p.each_container([&](const json&, const std::string& name, const json& sc) {
    bool ok = true;
    const json& add = member(member(sc, "capabilities"), "add");
    if (add.is_array())
      for (const json& c : add)
        if (!kAllowed.count(text(c))) {
          ok = false;
          caps.insert(text(c));
        }
    if (!ok) bad.push_back(name);
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"non-default capabilities", containers(bad) + " must not include " +
                                                   quote_all({caps.begin(), caps.end()}) +
                                                   " in securityContext.capabilities.add"};
}

Result host_namespaces(const Pod& p) {
  Names set;
  for (const char* f : {"hostNetwork", "hostPID", "hostIPC"})
    if (is_true(member(p.spec, f))) set.push_back(std::string(f) + "=true");
  if (set.empty()) return std::nullopt;
  return Violation{"host namespaces", join_with(set, ", ")};
}

Result host_path_volumes(const Pod& p) {
  Names bad;
  if (const json& vs = member(p.spec, "volumes"); vs.is_array())
    for (const json& v : vs)
      if (!member(v, "hostPath").is_null()) bad.push_back(text(member(v, "name")));
  if (bad.empty()) return std::nullopt;
  return Violation{"hostPath volumes",
                   std::string(plural("volume", "volumes", bad.size())) + " " + quote_all(bad)};
}

Result host_ports(const Pod& p) {
  Names bad;
  std::set<std::string> ports;
  p.each_container([&](const json& c, const std::string& name, const json&) {
    bool ok = true;
    if (const json& ps = member(c, "ports"); ps.is_array())
      for (const json& port : ps)
        if (const json& hp = member(port, "hostPort"); hp.is_number_integer() && hp != 0) {
          ok = false;
          ports.insert(std::to_string(hp.get<int64_t>()));
        }
    if (!ok) bad.push_back(name);
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"hostPort", containers(bad) + " " + plural("uses", "use", bad.size()) + " " +
                                   plural("hostPort", "hostPorts", ports.size()) + " " +
                                   join_with({ports.begin(), ports.end()}, ", ")};
}

// v1.34+: probes and lifecycle handlers may not aim at another host.
Result host_probes(const Pod& p) {
  std::set<std::string> bad, hosts;
  p.each_container([&](const json& c, const std::string& name, const json&) {
    auto handler = [&](const json& h) {
      for (const char* action : {"httpGet", "tcpSocket"})
        if (std::string host = text(member(member(h, action), "host")); !host.empty()) {
          bad.insert(name);
          hosts.insert(host);
        }
    };
    for (const char* probe : {"livenessProbe", "readinessProbe", "startupProbe"})
      handler(member(c, probe));
    for (const char* hook : {"postStart", "preStop"}) handler(member(member(c, "lifecycle"), hook));
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"probe or lifecycle host",
                   containers({bad.begin(), bad.end()}) + " " + plural("uses", "use", bad.size()) +
                       " " +
                       plural("probe or lifecycle host", "probe or lifecycle hosts", hosts.size()) +
                       " " + quote_all({hosts.begin(), hosts.end()})};
}

Result privileged(const Pod& p) {
  Names bad;
  p.each_container([&](const json&, const std::string& name, const json& sc) {
    if (is_true(member(sc, "privileged"))) bad.push_back(name);
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"privileged", containers(bad) + " must not set securityContext.privileged=true"};
}

Result proc_mount_strict(const Pod& p) {
  Names bad;
  std::set<std::string> types;
  p.each_container([&](const json&, const std::string& name, const json& sc) {
    const json& pm = member(sc, "procMount");
    if (!pm.is_null() && text(pm) != "Default") {
      bad.push_back(name);
      types.insert(text(pm));
    }
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"procMount", containers(bad) + " must not set securityContext.procMount to " +
                                    quote_all({types.begin(), types.end()})};
}

// v1.35+ baseline lets a pod in its own user namespace unmask /proc.
Result proc_mount_baseline(const Pod& p) {
  if (p.minor >= 35 && p.user_namespace()) return std::nullopt;
  return proc_mount_strict(p);
}

Result se_linux_options(const Pod& p) {
  std::set<std::string> allowed = {"", "container_t", "container_init_t", "container_kvm_t"};
  if (p.minor >= 31) allowed.insert("container_engine_t");
  std::set<std::string> bad_types;
  bool user = false, role = false;
  auto valid = [&](const json& o) {
    bool ok = true;
    if (std::string t = text(member(o, "type")); !allowed.count(t)) {
      ok = false;
      bad_types.insert(t);
    }
    if (!text(member(o, "user")).empty()) {
      ok = false;
      user = true;
    }
    if (!text(member(o, "role")).empty()) {
      ok = false;
      role = true;
    }
    return ok;
  };
  const json& pod_opts = member(p.sc(), "seLinuxOptions");
  const bool pod_bad = !pod_opts.is_null() && !valid(pod_opts);
  Names bad;
  p.each_container([&](const json&, const std::string& name, const json& sc) {
    const json& o = member(sc, "seLinuxOptions");
    if (!o.is_null() && !valid(o)) bad.push_back(name);
  });
  if (!pod_bad && bad.empty()) return std::nullopt;
  Names data;
  if (!bad_types.empty())
    data.push_back(std::string(plural("type", "types", bad_types.size())) + " " +
                   quote_all({bad_types.begin(), bad_types.end()}));
  if (user) data.push_back("user may not be set");
  if (role) data.push_back("role may not be set");
  return Violation{"seLinuxOptions",
                   setters(pod_bad, bad) +
                       " set forbidden securityContext.seLinuxOptions: " + join_with(data, "; ")};
}

bool valid_seccomp(const std::string& t) {
  return t == "RuntimeDefault" || t == "Localhost";
}

// Before v1.19 the profile was named in alpha annotations.
Result seccomp_annotations(const Pod& p) {
  std::set<std::string> bad;
  const json& a = member(p.meta, "annotations");
  auto judge = [&](const std::string& key) {
    const json& v = member(a, key.c_str());
    if (v.is_null()) return;
    const std::string s = text(v);
    if (s != "runtime/default" && s != "docker/default" && s.rfind("localhost/", 0) != 0)
      bad.insert(key + "=\"" + s + "\"");
  };
  judge("seccomp.security.alpha.kubernetes.io/pod");
  p.each_container([&](const json&, const std::string& name, const json&) {
    judge("container.seccomp.security.alpha.kubernetes.io/" + name);
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"seccompProfile", std::string("forbidden ") +
                                         plural("annotation", "annotations", bad.size()) + " " +
                                         join_with({bad.begin(), bad.end()}, ", ")};
}

// Seccomp profiles set to something other than RuntimeDefault or Localhost;
// with `require`, also containers that leave it unset where the pod does.
Result seccomp_fields(const Pod& p, bool require) {
  std::set<std::string> values;
  bool pod_bad = false, pod_set = false;
  if (const json& prof = member(p.sc(), "seccompProfile"); !prof.is_null()) {
    const std::string t = text(member(prof, "type"));
    if (valid_seccomp(t)) {
      pod_set = true;
    } else {
      pod_bad = true;
      values.insert(t);
    }
  }
  Names bad, unset;
  p.each_container([&](const json&, const std::string& name, const json& sc) {
    const json& prof = member(sc, "seccompProfile");
    if (prof.is_null()) {
      if (!pod_set) unset.push_back(name);
    } else if (std::string t = text(member(prof, "type")); !valid_seccomp(t)) {
      bad.push_back(name);
      values.insert(t);
    }
  });
  if (pod_bad || !bad.empty())
    return Violation{"seccompProfile", setters(pod_bad, bad) +
                                           " must not set securityContext.seccompProfile.type to " +
                                           quote_all({values.begin(), values.end()})};
  if (require && !unset.empty())
    return Violation{"seccompProfile",
                     "pod or " + containers(unset) +
                         " must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
                         "\"Localhost\""};
  return std::nullopt;
}

Result seccomp_baseline(const Pod& p) {
  return p.minor >= 19 ? seccomp_fields(p, false) : seccomp_annotations(p);
}

Result sysctls(const Pod& p) {
  std::set<std::string> safe = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
                                "net.ipv4.ip_unprivileged_port_start"};
  if (p.minor >= 27) safe.insert("net.ipv4.ip_local_reserved_ports");
  if (p.minor >= 29)
    safe.insert({"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                 "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"});
  if (p.minor >= 32) safe.insert({"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"});
  if (p.minor >= 37)
    safe.insert({"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"});
  Names bad;
  if (const json& list = member(p.sc(), "sysctls"); list.is_array())
    for (const json& s : list)
      if (std::string name = text(member(s, "name")); !safe.count(name)) bad.push_back(name);
  if (bad.empty()) return std::nullopt;
  return Violation{"forbidden sysctls", join_with(bad, ", ")};
}

Result windows_host_process(const Pod& p) {
  auto host_process = [](const json& sc) {
    return is_true(member(member(sc, "windowsOptions"), "hostProcess"));
  };
  Names bad;
  p.each_container([&](const json&, const std::string& name, const json& sc) {
    if (host_process(sc)) bad.push_back(name);
  });
  const bool pod_bad = host_process(p.sc());
  if (!pod_bad && bad.empty()) return std::nullopt;
  return Violation{
      "hostProcess",
      setters(pod_bad, bad) + " must not set securityContext.windowsOptions.hostProcess=true"};
}

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
      bad.push_back(text(member(v, "name")));
      auto it = std::find_if(std::begin(kRestricted), std::end(kRestricted),
                             [&](const char* k) { return !member(v, k).is_null(); });
      types.insert(it == std::end(kRestricted) ? "unknown" : *it);
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

std::string LevelVersion::str() const {
  const char* l = level == Level::kRestricted ? "restricted"
                  : level == Level::kBaseline ? "baseline"
                                              : "privileged";
  return std::string(l) + ":" + (minor ? "v1." + std::to_string(*minor) : "latest");
}

std::vector<Violation> evaluate(const LevelVersion& lv, const json& pod_meta,
                                const json& pod_spec) {
  std::vector<Violation> out;
  if (lv.level == Level::kPrivileged) return out;
  const Pod pod{pod_meta, pod_spec, std::min(lv.minor.value_or(kNewestMinor), kNewestMinor)};
  const bool restricted = lv.level == Level::kRestricted;
  std::set<Result (*)(const Pod&)> replaced;
  if (restricted)
    for (const Check& c : checks())
      if (c.replaces && pod.minor >= c.replaces_since) replaced.insert(c.replaces);
  for (const Check& c : checks()) {
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
