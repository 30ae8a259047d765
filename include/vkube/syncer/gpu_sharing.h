// The tenant side of the shared GPU pool (issue 38): gang markers from the
// tenant's pod to the host's scheduler, and the host's word on borrowing back
// to the tenant. Pure functions over JSON, no I/O, table-tested.
//
// Gang markers. The host scheduler (vkube host) admits the pods of a group
// all or nothing when they carry kPodGroupAnnotation (the group's name) and
// kPodGroupSizeAnnotation (how many pods the group has). A tenant pod names
// its group in any of the forms users of the common GPU schedulers write;
// the first one present wins:
//   vkube.io/pod-group (annotation or label)            size: vkube.io/pod-group-size
//   scheduling.x-k8s.io/pod-group (label or annotation;
//     scheduler-plugins' coscheduling)                  size: vkube.io/pod-group-size
//   pod-group.scheduling.sigs.k8s.io/name (label or
//     annotation; its older lightweight coscheduling)   size: .../min-available
//   kueue.x-k8s.io/pod-group-name (label; Kueue's plain
//     pod groups)                                       size: annotation
//                                                       kueue.x-k8s.io/pod-group-total-count
//   pod-group-name (annotation; KAI's)                  size: vkube.io/pod-group-size
//   scheduling.k8s.io/group-name (annotation; Volcano)  size: vkube.io/pod-group-size
// Coscheduling, KAI and Volcano keep the size in a PodGroup object the host
// never sees, so their pods say it with vkube.io/pod-group-size (the Job
// controller writes both for Jobs that are gangs). A group named without a
// size is no gang: its pods are placed one by one, as before.
//
// The host group is the tenant namespace's: its name goes through the
// NameMapper, so groups of one name in two namespaces (or two tenants) never
// merge. A size that is not a whole number from 1 to kMaxPodGroupSize, or a
// name that is not a label-like word, is refused: the pod stays in the
// tenant with a SyncError event, never placed piecemeal as a broken gang.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/gpu/share.h"
#include "vkube/syncer/names.h"

namespace vkube::syncer {

// The host's gang and borrowing annotations are gpu/share.h's
// (kPodGroupAnnotation, kPodGroupSizeAnnotation, kBorrowingAnnotation).
inline constexpr int64_t kMaxPodGroupSize = 10000;
// The tenant pod's condition while its host pod borrows.
inline constexpr std::string_view kBorrowingCondition = "vkube.io/GPUBorrowing";
inline constexpr std::string_view kBorrowingReason = "BorrowingIdleGPUs";

struct PodGroup {
  std::string name;    // as the tenant wrote it
  int64_t size = 0;    // pods in the group
  std::string marker;  // the key it was read from, for messages
};

// The tenant pod's group, nullopt when it names none (or no size);
// kInvalid naming the marker when the name or size is malformed.
Result<std::optional<PodGroup>> tenant_pod_group(const nlohmann::json& tenant_pod);

// On `host_pod` (translated from `tenant_pod`, annotations copied): the
// host's gang annotations for the tenant's group (the name mapped into the
// tenant namespace), or none.
// kInvalid as tenant_pod_group.
Status apply_gang_markers(const nlohmann::json& tenant_pod, const NameMapper& names,
                          nlohmann::json& host_pod);

// Kueue's plain-pod group (its pkg/controller/jobs/pod/constants): a label
// naming the group and an annotation with its size, on every member.
inline constexpr std::string_view kKueueGroupLabel = "kueue.x-k8s.io/pod-group-name";
inline constexpr std::string_view kKueueGroupCountAnnotation =
    "kueue.x-k8s.io/pod-group-total-count";

// On a Kueue host (the operator's `policy_labels` name a Kueue LocalQueue,
// gpu::kKueueQueueLabel), a host pod (of `tenant_pod`) carrying the host's gang annotations
// (apply_gang_markers) also gets Kueue's group: kKueueGroupLabel = the host
// group, kKueueGroupCountAnnotation = its size, so that Kueue admits the
// group's one Workload when all its pods exist, all or nothing. Applied after
// the host policy, which strips the tenant's own kueue.x-k8s.io/ keys. Kueue
// names the Workload after the group and refuses a pod whose group is no
// lowercase RFC 1123 subdomain: kInvalid then, so the tenant is told instead
// of the host's webhook refusing every try. Nothing for KAI: its gangs need
// a PodGroup object (docs/gpu-queues.md, "Gangs").
Status apply_host_queue_gang(const nlohmann::json& tenant_pod,
                             const std::map<std::string, std::string>& policy_labels,
                             nlohmann::json& host_pod);

// `text` (a host scheduler's message about `tenant_pod`'s host pod) with the
// host name of the pod's group replaced by the tenant's own: "pod group
// train: 3 of 4 pods exist", not the name the host knows it by.
std::string tenant_view_of_group(std::string text, const nlohmann::json& tenant_pod,
                                 const NameMapper& names);

// The tenant's vkube.io/GPUBorrowing condition for a host pod carrying
// kBorrowingAnnotation (its time: when the pod was scheduled); nullopt when
// it carries none or one that is not a positive number of milli-GPUs.
std::optional<nlohmann::json> borrowing_condition(const nlohmann::json& host_pod);

}  // namespace vkube::syncer
