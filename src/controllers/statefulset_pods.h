// The StatefulSet's view of its pods and claims, without I/O (kube's
// stateful_set_utils.go): ordinal identities, the pod and the
// PersistentVolumeClaims of an ordinal, pod health, the status counts and
// the ownerReferences the PVC retention policy asks for.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util.h"

namespace vkube::controllers::statefulset {

using json = nlohmann::json;

inline constexpr std::string_view kPodNameLabel = "statefulset.kubernetes.io/pod-name";
inline constexpr std::string_view kPodIndexLabel = "apps.kubernetes.io/pod-index";
inline constexpr std::string_view kRevisionLabel = "controller-revision-hash";

// "web-3" -> {"web", 3}; {"", -1} when the name does not end in -<ordinal>.
std::pair<std::string, int> parent_and_ordinal(std::string_view pod_name);
int ordinal_of(const json& pod);
// spec.ordinals.start (0 when absent).
int start_ordinal(const json& set);
int replicas_of(const json& set);
// start <= ordinal < start + replicas.
bool in_ordinal_range(const json& set, int ordinal);
std::string pod_name(const json& set, int ordinal);
std::string claim_name(const json& set, const json& claim_template, int ordinal);
bool allows_burst(const json& set);  // podManagementPolicy Parallel

// The PersistentVolumeClaims of ordinal `ordinal`, from volumeClaimTemplates,
// labelled with the set's selector matchLabels.
std::vector<json> claims_for(const json& set, int ordinal);
// A pod for ordinal `ordinal` from `pod_template` (the template of
// `revision`): the set's controller reference, name, hostname, subdomain,
// identity and revision labels, and its claims mounted as volumes.
json new_pod(const json& set, const json& pod_template, int ordinal, const std::string& revision);

// The pod-name and pod-index labels are those of its ordinal.
bool identity_matches(const json& set, const json& pod);
// Each claim template is mounted from its claim for the pod's ordinal.
bool storage_matches(const json& set, const json& pod);

// Pod health (a placeholder for a pod not created yet has no phase).
bool is_created(const json& pod);
bool running_and_ready(const json& pod);
bool running_and_available(const json& pod, int64_t min_ready_seconds, TimePoint now);
bool unavailable(const json& pod, int64_t min_ready_seconds, TimePoint now);
std::string pod_revision(const json& pod);

struct Counts {
  int64_t replicas = 0, ready = 0, available = 0, current = 0, updated = 0;
};
// kube's computeReplicaStatus over `pods` (placeholders are not counted).
Counts count_pods(const std::vector<const json*>& pods, int64_t min_ready_seconds, TimePoint now,
                  const std::string& current_revision, const std::string& update_revision);

// The ownerReferences `claim` should carry for `pod` under the set's
// persistentVolumeClaimRetentionPolicy: whenDeleted=Delete adds the set,
// whenScaled=Delete adds the pod once its ordinal is out of range; other
// owners are kept. `pod` must have a uid for the pod reference.
json claim_owner_refs(const json& set, const json& claim, const json& pod);
// A claim whose owner is a previous pod of the same name (its uid differs):
// it is about to be collected, and must not be reused.
bool claim_is_stale(const json& claim, const json& pod);

}  // namespace vkube::controllers::statefulset
