// Shared by the Pod Security checks (pod_security_baseline.cpp and
// pod_security_restricted.cpp): lenient JSON readers (a field of the wrong
// type counts as unset, so no check throws), kube's wording helpers, and the
// checks themselves, which pod_security_restricted.cpp orders into kube's table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pod_security_policy.h"

namespace vkube::apiserver::pod_security::check {

using Names = std::vector<std::string>;

inline const json& member(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
inline std::string text(const json& j) {
  return j.is_string() ? j.get<std::string>() : "";
}
inline bool is_true(const json& j) {
  return j.is_boolean() && j.get<bool>();
}
inline bool is_false(const json& j) {
  return j.is_boolean() && !j.get<bool>();
}

inline std::string quote_all(const Names& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "\"" : ", \"") + s + "\"";
  return out;
}
inline std::string join_with(const Names& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}
inline const char* plural(const char* one, const char* many, size_t n) {
  return n == 1 ? one : many;
}
// "container \"a\"" or "containers \"a\", \"b\"".
inline std::string containers(const Names& names) {
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
inline std::string setters(bool pod, const Names& bad) {
  Names who;
  if (pod) who.push_back("pod");
  if (!bad.empty()) who.push_back(containers(bad));
  return join_with(who, " and ");
}

// Baseline checks (pod_security_baseline.cpp).
Result app_armor(const Pod& p);
Result capabilities_baseline(const Pod& p);
Result host_namespaces(const Pod& p);
Result host_path_volumes(const Pod& p);
Result host_ports(const Pod& p);
Result host_probes(const Pod& p);
Result privileged(const Pod& p);
Result proc_mount_strict(const Pod& p);
Result proc_mount_baseline(const Pod& p);
Result se_linux_options(const Pod& p);
bool valid_seccomp(const std::string& t);
Result seccomp_annotations(const Pod& p);
Result seccomp_fields(const Pod& p, bool require);
Result seccomp_baseline(const Pod& p);
Result sysctls(const Pod& p);
Result windows_host_process(const Pod& p);

// Restricted checks (pod_security_restricted.cpp).
Result allow_privilege_escalation(const Pod& p);
Result capabilities_restricted(const Pod& p);
Result restricted_volumes(const Pod& p);
Result run_as_non_root(const Pod& p);
Result run_as_user(const Pod& p);
Result seccomp_restricted(const Pod& p);

}  // namespace vkube::apiserver::pod_security::check
