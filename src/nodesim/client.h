// How the simulated kubelets talk to the API server: in process, through the
// whole handler chain (authorization, admission, managedFields), as the
// kubelet would over HTTPS, plus the parallel writes that let the store's
// group commit absorb thousands of node registrations.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vkube/apiserver/apiserver.h"
#include "vkube/controllers/local_client.h"
#include "vkube/controllers/write_pool.h"

namespace vkube::nodesim {

using json = nlohmann::json;
using controllers::ApiResult;

class Client {
 public:
  explicit Client(apiserver::ApiServer& api) : api_(api) {}

  // Calls METHOD target and decodes the answer. Thread-safe. The caller is a
  // member of system:masters (vkube host's own component) whose writes are
  // recorded under the field manager "kubelet".
  ApiResult call(std::string_view method, std::string_view target, const json& body = nullptr,
                 std::string_view content_type = "application/json");

 private:
  apiserver::ApiServer& api_;
};

// Runs fn(0) .. fn(n-1) on `pool` and the calling thread; returns when all
// are done.
void parallel(controllers::WritePool& pool, size_t n, const std::function<void(size_t)>& fn);

// API paths.
std::string node_path(std::string_view name = {}, std::string_view subresource = {});
std::string lease_path(std::string_view name = {});
std::string pod_path(std::string_view ns, std::string_view name, std::string_view subresource = {});

inline constexpr std::string_view kLeaseNamespace = "kube-node-lease";

}  // namespace vkube::nodesim
