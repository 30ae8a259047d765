// RuntimeClass admission (kube's RuntimeClass plugin) for pod creates: a pod
// naming a RuntimeClass that does not exist is refused, and one that exists
// gives the pod its overhead and scheduling (node selector and tolerations),
// with kube's messages where they conflict with what the pod says.
#include <algorithm>

#include "object.h"
#include "server_impl.h"

namespace vkube::apiserver {

namespace {

ApiError forbidden(const std::string& name, const std::string& why) {
  return ApiError(Status(Code::kForbidden, "pods \"" + name + "\" is forbidden: " + why),
                  {{"name", name}, {"kind", "pods"}});
}

const json& at(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// Adds the class's node selector and tolerations to the pod's spec; Forbidden
// where both name a node-selector key with different values.
std::optional<ApiError> merge_scheduling(const std::string& name, json& spec,
                                         const json& scheduling) {
  const json& selector = at(scheduling, "nodeSelector");
  if (selector.is_object()) {
    json& mine = spec["nodeSelector"];
    if (!mine.is_object()) mine = json::object();
    for (auto it = selector.begin(); it != selector.end(); ++it) {
      if (auto p = mine.find(it.key()); p != mine.end() && *p != it.value()) {
        auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
        return forbidden(name, "conflict: runtimeClass.scheduling.nodeSelector[" + it.key() +
                                   "] = " + text(it.value()) + "; pod.spec.nodeSelector[" +
                                   it.key() + "] = " + text(*p));
      }
      mine[it.key()] = it.value();
    }
  }
  const json& tolerations = at(scheduling, "tolerations");
  if (tolerations.is_array() && !tolerations.empty()) {
    json& mine = spec["tolerations"];
    if (!mine.is_array()) mine = json::array();
    for (const json& t : tolerations)
      if (std::find(mine.begin(), mine.end(), t) == mine.end()) mine.push_back(t);
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> admit_runtime_class(Context& c, json& pod) {
  const api::Resource& r = c.resource();
  if (r.plural != "pods" || !r.gv.group.empty() || !c.info.subresource.empty()) return std::nullopt;
  json& spec = pod["spec"];
  if (!spec.is_object()) return std::nullopt;
  const std::string name = name_of(pod);
  const json& class_name = at(spec, "runtimeClassName");
  json runtime_class;
  if (class_name.is_string()) {
    const std::string rc = class_name.get<std::string>();
    const Kind* kind = c.server.registry().builtin("node.k8s.io", "v1", "runtimeclasses");
    auto kv = kind ? c.server.backend().get(Registry::key(*kind, "", rc))
                   : Result<storage::KeyValue>(Status::not_found(rc));
    if (!kv.is_ok() && kv.status().code() == Code::kNotFound)
      return forbidden(name, "pod rejected: RuntimeClass \"" + rc + "\" not found");
    if (!kv.is_ok()) return ApiError(kv.status());
    auto obj = decode_stored(*kv);
    if (!obj.is_ok()) return ApiError(obj.status());
    runtime_class = std::move(*obj);
  }
  const json& fixed = at(at(runtime_class, "overhead"), "podFixed");
  const json& overhead = at(spec, "overhead");
  if (!fixed.is_null()) {
    if (!overhead.is_null() && overhead != fixed)
      return forbidden(name,
                       "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined "
                       "Overhead");
    spec["overhead"] = fixed;
  } else if (!overhead.is_null()) {
    return forbidden(name,
                     "pod rejected: Pod Overhead set without corresponding RuntimeClass defined "
                     "Overhead");
  }
  return merge_scheduling(name, spec, at(runtime_class, "scheduling"));
}

}  // namespace vkube::apiserver
