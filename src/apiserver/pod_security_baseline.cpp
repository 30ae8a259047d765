// The baseline checks of the Pod Security Standards (pod_security_policy.h).
// Each reads the fields kube's check reads and words its result as kube does,
// so a tenant sees kube's own message; the version gates follow kube's policy
// versions (a check's behaviour at v1.x is what kube v1.x enforced).
#include <algorithm>
#include <set>

#include "pod_security_check.h"

namespace vkube::apiserver::pod_security::check {

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

}  // namespace vkube::apiserver::pod_security::check
