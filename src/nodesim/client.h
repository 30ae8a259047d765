// How the simulated kubelets talk to the API server: in process, through the
// whole handler chain (authorization, admission, managedFields), as the
// kubelet would over HTTPS, plus the parallel writes that let the store's
// group commit absorb thousands of node registrations.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vkube/apiserver/apiserver.h"
#include "vkube/controllers/local_client.h"
#include "vkube/controllers/write_pool.h"

namespace vkube::nodesim {

using json = nlohmann::json;
using controllers::ApiResult;

// The simulated kubelets' client: a member of system:masters (vkube host's
// own component; a node identity would need the Node authorizer, which vkube
// does not have) whose writes are recorded under the field manager "kubelet".
using Client = controllers::LocalClient;
Client make_client(apiserver::ApiServer& api);
// The local volume provisioner's client (volumes.h): as privileged, its
// writes recorded under the field manager "vkube-local-provisioner".
Client make_provisioner_client(apiserver::ApiServer& api);

// API paths.
std::string node_path(std::string_view name = {}, std::string_view subresource = {});
std::string lease_path(std::string_view name = {});
std::string pod_path(std::string_view ns, std::string_view name, std::string_view subresource = {});
std::string claim_path(std::string_view ns, std::string_view name = {},
                       std::string_view subresource = {});
std::string volume_path(std::string_view name = {}, std::string_view subresource = {});

inline constexpr std::string_view kLeaseNamespace = "kube-node-lease";

// The string at `path` in `obj` ("" when absent or not a string).
std::string text_at(const json& obj, std::initializer_list<const char*> path);

}  // namespace vkube::nodesim
