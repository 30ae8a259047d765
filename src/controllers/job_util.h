// Pure pieces of the Job controller (kube's pkg/controller/job): completion
// indexes and their interval strings, pod state as the Job reads it, pod
// failure backoff, the order pods are removed in, and Job conditions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/controllers/informers.h"

namespace vkube::controllers::job {

using json = nlohmann::json;
using TimePoint = std::chrono::system_clock::time_point;

inline constexpr std::string_view kTrackingFinalizer = "batch.kubernetes.io/job-tracking";
inline constexpr std::string_view kIndexAnnotation = "batch.kubernetes.io/job-completion-index";
inline constexpr std::string_view kIndexEnv = "JOB_COMPLETION_INDEX";
inline constexpr std::chrono::seconds kPodFailureBackoff{10};
inline constexpr std::chrono::minutes kMaxPodFailureBackoff{10};
// Pods counted, created or deleted in one sync at most.
inline constexpr size_t kMaxPodsPerSync = 500;

// --- Indexed Jobs ------------------------------------------------------------

// A pod's completion index (its annotation), or -1.
int64_t completion_index(const json& pod);
// status.completedIndexes ("1,3-5,7") as a set; indexes >= completions and
// malformed parts are dropped.
std::set<int64_t> parse_indexes(std::string_view s, int64_t completions);
// The set as status.completedIndexes writes it: runs of three or more as
// "a-b", two as "a,b".
std::string format_indexes(const std::set<int64_t>& indexes);
// The template of the pod for `index`: the index annotation and label,
// hostname "<job>-<index>", and JOB_COMPLETION_INDEX in every container.
json indexed_template(const json& pod_template, std::string_view job_name, int64_t index);
// generateName of the pod for `index`: "<job>-<index>-", the name cut so the
// prefix fits 58 characters.
std::string indexed_generate_name(std::string_view job_name, int64_t index);

// --- Pods ------------------------------------------------------------------

bool has_tracking_finalizer(const json& pod);
// kube's isPodFailed: phase Failed or, unless only failed pods are replaced
// (podReplacementPolicy Failed), deleted before it succeeded.
bool pod_failed_for(const json& pod, const json& job);
// Being deleted but not finished (kube's CountTerminatingPods).
bool pod_terminating(const json& pod);
// When a pod finished: its containers' latest finishedAt, else its Ready
// condition turning False, else its deletion time, else its creation.
TimePoint finished_time(const json& pod);
// Active pods in the order kube removes them (ActivePods): unscheduled
// before scheduled, pending before running, not ready before ready, newer
// before older.
void sort_for_removal(std::vector<ObjectPtr>& pods);
// The pods to delete so that at most active - rm_at_least remain; for an
// Indexed Job first those with a missing, out-of-range or repeated index.
std::vector<ObjectPtr> pods_for_removal(const json& job, std::vector<ObjectPtr> active,
                                        size_t rm_at_least);

// --- Backoff -----------------------------------------------------------------

// Failures since the last success, and when the latest happened.
struct BackoffRecord {
  int64_t failures = 0;
  std::optional<TimePoint> last_failure;
};
// kube's newBackoffRecord: the record after pods newly succeeded or failed.
BackoffRecord next_backoff(BackoffRecord record, const std::vector<ObjectPtr>& succeeded,
                           const std::vector<ObjectPtr>& failed);
// How long pod creation still waits: 10 s doubling per failure, at most
// 10 min, from the last failure.
std::chrono::milliseconds remaining_backoff(const BackoffRecord& record, TimePoint now);

// --- Conditions --------------------------------------------------------------

const json* find_condition(const json& job, std::string_view type);
bool condition_true(const json& job, std::string_view type);
// Complete or Failed is True.
bool job_finished(const json& job);
json new_condition(std::string_view type, std::string_view status, std::string_view reason,
                   std::string_view message, TimePoint now);
// kube's ensureJobConditionStatus: sets the condition (new times) when its
// status, reason or message differ; adds it only when status is not False.
// True when the conditions changed.
bool ensure_condition(json& conditions, std::string_view type, std::string_view status,
                      std::string_view reason, std::string_view message, TimePoint now);

// Small accessors.
int64_t int_field(const json& obj, std::string_view field, int64_t fallback = 0);
std::optional<int64_t> opt_int(const json& obj, std::string_view field);
const json& object_field(const json& obj, std::string_view field);

}  // namespace vkube::controllers::job
