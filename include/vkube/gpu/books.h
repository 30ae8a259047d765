// The pool's books (share.h's TenantBooks) read from host objects, as
// `vkube list` shows them: who deserves, holds, borrows, lends and waits for
// how many GPUs. Pure values: no I/O, no threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/gpu/share.h"

namespace vkube::gpu {

// The text of the kShareFlag argument of a container of a control-plane
// StatefulSet; nullopt when none has it.
std::optional<std::string> share_flag(const nlohmann::json& statefulset);

// A tenant's share from its host namespace's kShareAnnotation, else from the
// kShareFlag argument of a container of its control-plane StatefulSet, else
// the default (deserved 0). Either object may be null. kInvalid (the
// parse_gpu_share message) when the share found does not parse.
Result<GpuShare> host_share(const nlohmann::json& ns, const nlohmann::json& statefulset);

// The pool's GPUs in thousandths: 1000 per GPU of each node
// (NodeGpus::of_node), so a GPU in MIG mode counts once.
int64_t pool_capacity(const nlohmann::json& nodes);

struct PoolBooks {
  std::vector<TenantBooks> tenants;  // sorted by namespace, settled
  int64_t capacity = 0;              // pool_capacity
  // Tenants whose share does not parse (they are booked with the default
  // share): namespace -> why.
  std::map<std::string, std::string> bad_shares;
};

// The books from the `items` of host LISTs. A tenant is a namespace labelled
// vkube.io/tenant, or one holding a StatefulSet so labelled (a Helm release);
// other namespaces' pods are not booked. Its pods that ask for GPUs
// (request_of; usage_of's milli) are booked as allocated when bound and not
// terminating, reclaiming when bound and terminating, pending when not bound;
// finished pods (Succeeded, Failed) not at all. Then settle(capacity).
PoolBooks pool_books(const nlohmann::json& namespaces, const nlohmann::json& statefulsets,
                     const nlohmann::json& pods, const nlohmann::json& nodes);

}  // namespace vkube::gpu
