// A tenant's GPU share (share.h) on a real host: the queue objects of the
// host's GPU scheduler that stand for it, and what the syncer must put on
// every host pod so that scheduler admits it through them (issue 38).
// Pure values: no I/O.
//
//   vkube  `vkube host`'s own scheduler reads the share from the tenant's
//          namespace annotation; no queue objects, nothing on pods
//   kai    KAI Scheduler (scheduling.run.ai/v2 Queue): one leaf queue per
//          tenant, vkube-<tenant>, under the pool's parent queue vkube-pool;
//          pods get schedulerName kai-scheduler and kai.scheduler/queue
//   kueue  Kueue (kueue.x-k8s.io/v1beta1): a ClusterQueue vkube-<tenant> in
//          the cohort vkube-pool admitting only the tenant's host namespace,
//          a LocalQueue "vkube" there, and the ResourceFlavors they name;
//          pods get kueue.x-k8s.io/queue-name (Kueue's plain-pod integration)
//
// The mapping, and what cannot map, is in docs/gpu-queues.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/gpu/share.h"

namespace vkube::gpu {

enum class HostQueueMode { kVkube, kKai, kKueue };

// "vkube", "kai" or "kueue"; kInvalid naming the choices otherwise.
Result<HostQueueMode> parse_host_queue_mode(std::string_view text);
std::string_view host_queue_mode_name(HostQueueMode mode);

// The pool every tenant's queue belongs to: KAI's parent queue, Kueue's cohort.
inline constexpr std::string_view kPoolQueue = "vkube-pool";
// Kueue's LocalQueue in each tenant's host namespace.
inline constexpr std::string_view kLocalQueue = "vkube";
inline constexpr std::string_view kKaiQueueLabel = "kai.scheduler/queue";
inline constexpr std::string_view kKaiPreemptibilityLabel = "kai.scheduler/preemptibility";
inline constexpr std::string_view kKaiSchedulerName = "kai-scheduler";
inline constexpr std::string_view kKueueQueueLabel = "kueue.x-k8s.io/queue-name";
// Kueue's flavors: cpu and memory (not shared out; the namespace's
// ResourceQuota caps them), and GPUs of any model.
inline constexpr std::string_view kDefaultFlavor = "vkube-default";
inline constexpr std::string_view kGpuFlavor = "vkube-gpu";

// The tenant's cluster-scoped queue: KAI Queue or Kueue ClusterQueue.
std::string tenant_queue_name(std::string_view tenant);

// The objects to create on the host for `share`, in create order: KAI, the
// parent queue vkube-pool (its GPU quota this tenant's deserved share; the
// caller sums all tenants' with kai_pool_queue) then the tenant's queue;
// Kueue, the ResourceFlavors (shared by all tenants), the ClusterQueue, then
// the LocalQueue in `host_namespace`. Empty for kVkube. Each carries the
// labels app.kubernetes.io/managed-by=vkube (and vkube.io/tenant on the
// tenant's own) and the share as the annotation vkube.io/gpu-share.
std::vector<nlohmann::json> host_queue_objects(HostQueueMode mode, const GpuShare& share,
                                               std::string_view tenant,
                                               std::string_view host_namespace);

// KAI's parent queue of the pool, guaranteeing the sum of its tenants'
// deserved GPUs (KAI hands a parent's guarantee down to its children).
nlohmann::json kai_pool_queue(int64_t deserved_milli);

// What the syncer injects into every host pod of the tenant (the `vkube
// serve` flags --host-scheduler-name and --host-pod-labels), and the GPU
// fraction translation the mode needs (--host-gpu-sharing of `vkube serve`;
// empty: leave the operator's).
struct HostQueuePodPolicy {
  std::string scheduler_name;
  std::map<std::string, std::string> labels;
  std::string fractions;
};
HostQueuePodPolicy host_queue_pod_policy(HostQueueMode mode, const GpuShare& share,
                                         std::string_view tenant);

// What of `share` the mode cannot express, one sentence each ("" none).
std::vector<std::string> host_queue_notes(HostQueueMode mode, const GpuShare& share);

// The CustomResourceDefinitions the mode writes objects of, as
// <plural>.<group>, with the group/version served.
struct QueueCrd {
  std::string name;           // "clusterqueues.kueue.x-k8s.io"
  std::string group_version;  // "kueue.x-k8s.io/v1beta1"
  std::string plural;         // "clusterqueues"
};
std::vector<QueueCrd> host_queue_crds(HostQueueMode mode);

// The collection URL of one of host_queue_objects' objects
// ("/apis/kueue.x-k8s.io/v1beta1/namespaces/vkube-a/localqueues"); "" for
// another kind.
std::string host_queue_collection(const nlohmann::json& obj);

}  // namespace vkube::gpu
