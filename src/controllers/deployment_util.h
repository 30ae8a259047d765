// Pure helpers of the Deployment controller (kube's
// pkg/controller/deployment/util): revisions and replica annotations, the
// rolling-update fenceposts, conditions and the rollout predicates. No I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util.h"
#include "vkube/common/status.h"

namespace vkube::controllers::deploy {

inline constexpr const char* kRevisionAnnotation = "deployment.kubernetes.io/revision";
inline constexpr const char* kRevisionHistoryAnnotation =
    "deployment.kubernetes.io/revision-history";
inline constexpr const char* kDesiredReplicasAnnotation =
    "deployment.kubernetes.io/desired-replicas";
inline constexpr const char* kMaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas";
inline constexpr const char* kHashLabel = "pod-template-hash";

// Progressing condition reasons (kube's deployment util).
inline constexpr const char* kNewRSReason = "NewReplicaSetCreated";
inline constexpr const char* kFoundNewRSReason = "FoundNewReplicaSet";
inline constexpr const char* kReplicaSetUpdatedReason = "ReplicaSetUpdated";
inline constexpr const char* kNewRSAvailableReason = "NewReplicaSetAvailable";
inline constexpr const char* kTimedOutReason = "ProgressDeadlineExceeded";
inline constexpr const char* kPausedReason = "DeploymentPaused";
inline constexpr const char* kResumedReason = "DeploymentResumed";
inline constexpr const char* kFailedRSCreateReason = "ReplicaSetCreateError";

// obj[key] when it is an object, else an empty object.
const json& section(const json& obj, std::string_view key);
// obj[key] when it is an integer, else `fallback`.
int64_t int_at(const json& obj, std::string_view key, int64_t fallback = 0);
// spec.replicas (1 when unset, as defaulting makes it).
int64_t spec_replicas(const json& obj);
// status.<field>, 0 when unset.
int64_t status_count(const json& obj, std::string_view field);
std::string annotation(const json& obj, std::string_view key);

// The deployment.kubernetes.io/revision of a ReplicaSet; 0 when absent or not a number.
int64_t revision_of(const json& rs);
// Pod templates equal but for the pod-template-hash label (kube's EqualIgnoreHash).
bool equal_ignore_hash(const json& a, const json& b);

// An int-or-percent against `total`: percentages round up or down (kube's
// GetScaledValueFromIntOrPercent). Null is 0.
Result<int64_t> scaled_value(const json& v, int64_t total, bool round_up);
bool is_rolling(const json& d);
// The resolved maxSurge and maxUnavailable (never both 0: unavailable is then 1).
int64_t max_surge(const json& d);
int64_t max_unavailable(const json& d);
bool has_progress_deadline(const json& d);

// The desired-replicas / max-replicas annotations.
bool replicas_annotations_need_update(const json& rs, int64_t desired, int64_t max);
bool set_replicas_annotations(json& rs, int64_t desired, int64_t max);
std::optional<int64_t> int_annotation(const json& rs, std::string_view key);
// Copies the deployment's annotations and sets the revision (keeping the
// previous ones in revision-history when it changes, as on a rollback);
// adds the replicas annotations when `exists` is false. True when changed.
bool set_new_rs_annotations(const json& d, json& rs, const std::string& new_revision, bool exists);
// The new RS has all the replicas and they are available.
bool is_saturated(const json& d, const json& rs);

// Deployment conditions.
json new_condition(std::string_view type, std::string_view status, std::string_view reason,
                   std::string_view message, TimePoint now);
const json* get_condition(const json& status, std::string_view type);
// Adds or replaces the condition of its type; keeps lastTransitionTime when
// the status is unchanged, and does nothing when status and reason are.
void set_condition(json& status, json condition);
void remove_condition(json& status, std::string_view type);

// `status` shows the whole rollout done (kube's DeploymentComplete).
bool deployment_complete(const json& d, const json& status);
// `status` shows progress over d's current status.
bool deployment_progressing(const json& d, const json& status);
// The Progressing condition is older than progressDeadlineSeconds.
bool deployment_timed_out(const json& d, const json& status, TimePoint now);

}  // namespace vkube::controllers::deploy
