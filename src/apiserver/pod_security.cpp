// Pod Security admission (kube's PodSecurity plugin, enforce mode): pods that
// break the namespace's level are refused at create with kube's message, so a
// tenant learns at `kubectl apply`, not when the host refuses the pod. The
// level is the namespace label pod-security.kubernetes.io/enforce, else the
// server's default (baseline for tenants, privileged for the host).
#include <algorithm>
#include <set>

#include "object.h"
#include "server_impl.h"

namespace vkube::apiserver {

namespace {

// Capabilities the baseline level allows a container to add.
const std::set<std::string>& allowed_capabilities() {
  static const std::set<std::string> kAllowed = {
      "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",      "MKNOD",
      "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT"};
  return kAllowed;
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "\"" : ", \"") + s + "\"";
  return out;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// "container \"a\"" or "containers \"a\", \"b\"".
std::string containers_phrase(const std::vector<std::string>& names) {
  return (names.size() == 1 ? "container " : "containers ") + quoted_list(names);
}

// The baseline violations of `spec`, as "check (detail)" in kube's order.
std::vector<std::string> baseline_violations(const json& spec) {
  std::vector<std::string> out;
  std::vector<const json*> containers;
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"})
    if (auto cs = spec.find(list); cs != spec.end() && cs->is_array())
      for (const json& c : *cs)
        if (c.is_object()) containers.push_back(&c);
  auto name_of = [](const json& c) { return c.value("name", ""); };

  // capabilities_baseline
  std::vector<std::string> cap_containers;
  std::set<std::string> bad_caps;
  for (const json* c : containers) {
    const json sc = c->value("securityContext", json::object());
    const json add = sc.is_object()
                         ? sc.value("capabilities", json::object()).value("add", json::array())
                         : json::array();
    bool bad = false;
    for (const json& cap : add)
      if (cap.is_string() && !allowed_capabilities().count(cap.get<std::string>())) {
        bad_caps.insert(cap.get<std::string>());
        bad = true;
      }
    if (bad) cap_containers.push_back(name_of(*c));
  }
  if (!cap_containers.empty())
    out.push_back("non-default capabilities (" + containers_phrase(cap_containers) +
                  " must not include " + quoted_list({bad_caps.begin(), bad_caps.end()}) +
                  " in securityContext.capabilities.add)");
  // hostNamespaces
  std::vector<std::string> host_ns;
  for (const char* f : {"hostNetwork", "hostPID", "hostIPC"})
    if (spec.value(f, false)) host_ns.push_back(std::string(f) + "=true");
  if (!host_ns.empty()) out.push_back("host namespaces (" + joined(host_ns) + ")");
  // hostPathVolumes
  std::vector<std::string> host_paths;
  if (auto vs = spec.find("volumes"); vs != spec.end() && vs->is_array())
    for (const json& v : *vs)
      if (v.is_object() && v.contains("hostPath")) host_paths.push_back(v.value("name", ""));
  if (!host_paths.empty())
    out.push_back("hostPath volumes (" +
                  std::string(host_paths.size() == 1 ? "volume " : "volumes ") +
                  quoted_list(host_paths) + ")");
  // hostPorts
  std::vector<std::string> port_containers, ports;
  for (const json* c : containers) {
    bool any = false;
    for (const json& p : c->value("ports", json::array()))
      if (p.is_object() && p.value("hostPort", 0) != 0) {
        ports.push_back(std::to_string(p.value("hostPort", 0)));
        any = true;
      }
    if (any) port_containers.push_back(name_of(*c));
  }
  if (!port_containers.empty())
    out.push_back("hostPort (" + containers_phrase(port_containers) +
                  (port_containers.size() == 1 ? " uses " : " use ") +
                  (ports.size() == 1 ? "hostPort " : "hostPorts ") + joined(ports) + ")");
  // privileged
  std::vector<std::string> privileged;
  for (const json* c : containers) {
    const json sc = c->value("securityContext", json::object());
    if (sc.is_object() && sc.value("privileged", false)) privileged.push_back(name_of(*c));
  }
  if (!privileged.empty())
    out.push_back("privileged (" + containers_phrase(privileged) +
                  " must not set securityContext.privileged=true)");
  // seccompProfile_baseline
  const json psc = spec.value("securityContext", json::object());
  if (psc.is_object() &&
      psc.value("seccompProfile", json::object()).value("type", "") == "Unconfined")
    out.push_back(
        "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")");
  std::vector<std::string> unconfined;
  for (const json* c : containers) {
    const json sc = c->value("securityContext", json::object());
    if (sc.is_object() &&
        sc.value("seccompProfile", json::object()).value("type", "") == "Unconfined")
      unconfined.push_back(name_of(*c));
  }
  if (!unconfined.empty())
    out.push_back("seccompProfile (" + containers_phrase(unconfined) +
                  " must not set securityContext.seccompProfile.type to \"Unconfined\")");
  return out;
}

// The restricted level's checks on top of baseline, as "check (detail)".
std::vector<std::string> restricted_violations(const json& spec) {
  std::vector<std::string> out;
  std::vector<const json*> containers;
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"})
    if (auto cs = spec.find(list); cs != spec.end() && cs->is_array())
      for (const json& c : *cs)
        if (c.is_object()) containers.push_back(&c);
  auto name_of = [](const json& c) { return c.value("name", ""); };
  auto sc_of = [](const json& holder) {
    json sc = holder.value("securityContext", json::object());
    return sc.is_object() ? sc : json::object();
  };
  const json psc = sc_of(spec);

  // allowPrivilegeEscalation
  std::vector<std::string> escalating;
  for (const json* c : containers)
    if (sc_of(*c).value("allowPrivilegeEscalation", true) != false)
      escalating.push_back(name_of(*c));
  if (!escalating.empty())
    out.push_back("allowPrivilegeEscalation != false (" + containers_phrase(escalating) +
                  " must set securityContext.allowPrivilegeEscalation=false)");
  // capabilities_restricted
  std::vector<std::string> no_drop, bad_add_containers;
  std::set<std::string> bad_add;
  for (const json* c : containers) {
    const json caps = sc_of(*c).value("capabilities", json::object());
    bool drops_all = false;
    for (const json& d : caps.value("drop", json::array())) drops_all |= d == "ALL";
    if (!drops_all) no_drop.push_back(name_of(*c));
    bool bad = false;
    for (const json& a : caps.value("add", json::array()))
      if (a.is_string() && a != "NET_BIND_SERVICE") {
        bad_add.insert(a.get<std::string>());
        bad = true;
      }
    if (bad) bad_add_containers.push_back(name_of(*c));
  }
  std::vector<std::string> cap_details;
  if (!no_drop.empty())
    cap_details.push_back(containers_phrase(no_drop) +
                          " must set securityContext.capabilities.drop=[\"ALL\"]");
  if (!bad_add_containers.empty())
    cap_details.push_back(containers_phrase(bad_add_containers) + " must not include " +
                          quoted_list({bad_add.begin(), bad_add.end()}) +
                          " in securityContext.capabilities.add");
  if (!cap_details.empty()) {
    std::string d;
    for (const auto& x : cap_details) d += (d.empty() ? "" : "; ") + x;
    out.push_back("unrestricted capabilities (" + d + ")");
  }
  // runAsNonRoot: the pod's true covers containers that do not say false.
  const bool pod_non_root = psc.value("runAsNonRoot", false) == true;
  std::vector<std::string> root_ok;
  for (const json* c : containers) {
    const json v = sc_of(*c).value("runAsNonRoot", json());
    if (v == false || (!pod_non_root && v != true)) root_ok.push_back(name_of(*c));
  }
  if (!root_ok.empty())
    out.push_back(std::string("runAsNonRoot != true (") + (pod_non_root ? "" : "pod or ") +
                  containers_phrase(root_ok) + " must set securityContext.runAsNonRoot=true)");
  // runAsUser
  std::vector<std::string> as_root;
  for (const json* c : containers)
    if (sc_of(*c).value("runAsUser", int64_t{-1}) == 0) as_root.push_back(name_of(*c));
  if (psc.value("runAsUser", int64_t{-1}) == 0)
    out.push_back("runAsUser=0 (pod must not set runAsUser=0)");
  if (!as_root.empty())
    out.push_back("runAsUser=0 (" + containers_phrase(as_root) + " must not set runAsUser=0)");
  // seccompProfile_restricted: RuntimeDefault or Localhost, the pod's or each container's.
  auto confined = [](const json& sc) {
    const std::string t = sc.value("seccompProfile", json::object()).value("type", "");
    return t == "RuntimeDefault" || t == "Localhost";
  };
  const bool pod_confined = confined(psc);
  std::vector<std::string> unset;
  for (const json* c : containers) {
    const json sc = sc_of(*c);
    if (!confined(sc) && (!pod_confined || sc.contains("seccompProfile")))
      unset.push_back(name_of(*c));
  }
  if (!unset.empty())
    out.push_back(
        std::string("seccompProfile (") + (pod_confined ? "" : "pod or ") +
        containers_phrase(unset) +
        " must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")");
  // restrictedVolumes
  static const std::set<std::string> kAllowedVolumes = {
      "configMap", "csi",   "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
      "projected", "secret"};
  std::vector<std::string> bad_volumes;
  std::set<std::string> bad_types;
  if (auto vs = spec.find("volumes"); vs != spec.end() && vs->is_array())
    for (const json& v : *vs) {
      if (!v.is_object()) continue;
      for (auto it = v.begin(); it != v.end(); ++it)
        if (it.key() != "name" && !kAllowedVolumes.count(it.key())) {
          bad_volumes.push_back(v.value("name", ""));
          bad_types.insert(it.key());
        }
    }
  if (!bad_volumes.empty())
    out.push_back("restricted volume types (" +
                  std::string(bad_volumes.size() == 1 ? "volume " : "volumes ") +
                  quoted_list(bad_volumes) + (bad_volumes.size() == 1 ? " uses" : " use") +
                  " restricted volume type" + (bad_types.size() == 1 ? " " : "s ") +
                  quoted_list({bad_types.begin(), bad_types.end()}) + ")");
  return out;
}

}  // namespace

std::optional<ApiError> admit_pod_security(Context& c, const json& pod, const std::string& ns,
                                           const std::string& name) {
  const api::Resource& r = c.resource();
  if (r.plural != "pods" || !r.gv.group.empty() || ns.empty()) return std::nullopt;
  std::string level = c.server.options().pod_security;
  const Kind* ns_kind = c.server.registry().builtin("", "v1", "namespaces");
  if (auto kv = c.server.backend().get(Registry::key(*ns_kind, "", ns)); kv.is_ok()) {
    if (auto obj = decode_stored(*kv); obj.is_ok()) {
      const json labels = (*obj)["metadata"].value("labels", json::object());
      if (labels.is_object() && labels.contains("pod-security.kubernetes.io/enforce") &&
          labels["pod-security.kubernetes.io/enforce"].is_string())
        level = labels["pod-security.kubernetes.io/enforce"].get<std::string>();
    }
  }
  if (level != "baseline" && level != "restricted") return std::nullopt;
  const json spec = pod.value("spec", json::object());
  std::vector<std::string> v = baseline_violations(spec);
  if (level == "restricted")
    for (std::string& more : restricted_violations(spec)) v.push_back(std::move(more));
  if (v.empty()) return std::nullopt;
  return ApiError(
      Status(Code::kForbidden, "pods \"" + name + "\" is forbidden: violates PodSecurity \"" +
                                   level + ":latest\": " + joined(v)),
      {{"name", name}, {"kind", "pods"}});
}

}  // namespace vkube::apiserver
