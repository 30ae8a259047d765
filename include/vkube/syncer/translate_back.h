// What flows from the host back to the tenant: pure functions, tested.
#pragma once

#include <nlohmann/json.hpp>

namespace vkube::syncer {

// The tenant pod's status from its host pod: phase, reason, message,
// conditions, host and pod IPs, start time, QoS class and container
// statuses (init, regular, ephemeral), and the vkube.io/GPUBorrowing
// condition while the host pod borrows GPUs (gpu_sharing.h). The node name
// the host chose is spec.nodeName of the host pod; the syncer writes it to
// the tenant pod.
nlohmann::json tenant_pod_status(const nlohmann::json& host_pod);

// The tenant's view of a host node that runs its pods (a virtual node): same
// name, the host node's capacity, allocatable, conditions, addresses and
// nodeInfo, its GPU labels (nvidia.com/*, GFD's) and well-known topology
// labels, its GPU device annotation, and a label vkube.io/virtual-node=true.
// Taints, pod CIDRs and provider IDs stay on the host: tenants do not
// schedule onto these nodes, they see where their pods run.
nlohmann::json virtual_node(const nlohmann::json& host_node);

}  // namespace vkube::syncer
