// Reclaim and reservations: which pods to preempt so that a pod within its
// tenant's fair share fits (kube-scheduler's preemption, with victims drawn
// from tenants above their fair share instead of lower priorities alone),
// and whether a node's free GPUs are promised to pods waiting there.
// Pure functions over the scheduler's picture; the caller holds its lock.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "filters.h"
#include "node_info.h"
#include "tenants.h"

namespace vkube::scheduler {

// `n` as it will be once its terminating pods are gone and the pods waiting
// on it (`waiting`) hold what they need: their devices, CPU and memory
// taken in order. Waiting pods that do not fit are left out, and counted in
// *unplaced when given: the node is still being emptied for them.
NodeInfo future_of(const NodeInfo& n, const std::vector<const TenantLedger::Nomination*>& waiting,
                   gpu::Policy policy, int* unplaced = nullptr);

// Whether `pod` fits `n` once the node's other pods are gone: it passes the
// node's filters but room, and the node's allocatable CPU, memory and
// devices could hold it.
bool fits_empty(const NodeInfo& n, const PodInfo& pod, const Constraints& c, gpu::Policy policy);

struct ReclaimPlan {
  std::string node;
  std::vector<PodInfo> victims;  // in the order they were chosen
};

// Pods a pod may displace: of another tenant, from that tenant's
// `reclaimable` budget (thousandths it holds beyond its fair share, never
// taking it below), or of its own tenant with a lower priority.
// Per node, candidates go lowest priority first, then those marked
// borrowing, then the newest, until `pod` fits the node as it will be
// (future_of); the node whose victims are least important, most often marked
// borrowing, and fewest wins. nullopt when no node can be freed.
std::optional<ReclaimPlan> plan_reclaim(
    const std::map<std::string, std::unique_ptr<NodeInfo>>& nodes, const PodInfo& pod,
    const Constraints& c, gpu::Policy policy, const std::map<std::string, int64_t>& reclaimable,
    const TenantLedger& ledger);

}  // namespace vkube::scheduler
