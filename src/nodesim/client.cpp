#include "client.h"

namespace vkube::nodesim {

Client make_client(apiserver::ApiServer& api) {
  return Client(api, "system:vkube-node-simulator",
                "kubelet/v1.32.0 (linux/amd64) vkube-node-simulator");
}

Client make_provisioner_client(apiserver::ApiServer& api) {
  return Client(api, "system:vkube-local-provisioner",
                "vkube-local-provisioner/v1.32.0 (linux/amd64) vkube-node-simulator");
}

std::string node_path(std::string_view name, std::string_view subresource) {
  std::string p = "/api/v1/nodes";
  if (!name.empty()) p.append("/").append(name);
  if (!subresource.empty()) p.append("/").append(subresource);
  return p;
}

std::string lease_path(std::string_view name) {
  std::string p = "/apis/coordination.k8s.io/v1/namespaces/";
  p.append(kLeaseNamespace).append("/leases");
  if (!name.empty()) p.append("/").append(name);
  return p;
}

std::string pod_path(std::string_view ns, std::string_view name, std::string_view subresource) {
  std::string p = "/api/v1/namespaces/";
  p.append(ns).append("/pods/").append(name);
  if (!subresource.empty()) p.append("/").append(subresource);
  return p;
}

std::string claim_path(std::string_view ns, std::string_view name, std::string_view subresource) {
  std::string p = "/api/v1/namespaces/";
  p.append(ns).append("/persistentvolumeclaims");
  if (!name.empty()) p.append("/").append(name);
  if (!subresource.empty()) p.append("/").append(subresource);
  return p;
}

std::string volume_path(std::string_view name, std::string_view subresource) {
  std::string p = "/api/v1/persistentvolumes";
  if (!name.empty()) p.append("/").append(name);
  if (!subresource.empty()) p.append("/").append(subresource);
  return p;
}

std::string text_at(const json& obj, std::initializer_list<const char*> path) {
  const json* v = &obj;
  for (const char* p : path) {
    if (!v->is_object()) return {};
    auto it = v->find(p);
    if (it == v->end()) return {};
    v = &*it;
  }
  return v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace vkube::nodesim
