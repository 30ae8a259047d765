// What a Job says about its pods beyond counting them: its podFailurePolicy
// (kube's pkg/controller/job/pod_failure_policy.go) and whether its pods are
// one gang for the host's GPU scheduler (issue 38).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vkube/gpu/share.h"

namespace vkube::controllers::job {

// --- podFailurePolicy ----------------------------------------------------------

// A failed pod matched against the Job's spec.podFailurePolicy rules, first
// match wins (kube's matchPodFailurePolicy).
struct FailurePolicyMatch {
  // Counts toward backoffLimit: false for an Ignore rule (a disruption such
  // as a preemption, onPodConditions DisruptionTarget).
  bool counts = true;
  // A FailJob rule matched: the Job fails (reason PodFailurePolicy) with
  // this message, "Container main for pod ns/p failed with exit code 42
  // matching FailJob rule at index 0" or "Pod ns/p has condition
  // DisruptionTarget matching FailJob rule at index 1".
  std::optional<std::string> fail_job;
};
// With no policy every failure counts. Rules: onExitCodes (containerName,
// In/NotIn, terminated non-zero exit codes of containers then init
// containers) or onPodConditions (type and status); actions Ignore, Count,
// FailJob (FailIndex, for backoffLimitPerIndex, matches nothing here).
FailurePolicyMatch match_pod_failure_policy(const nlohmann::json& job, const nlohmann::json& pod);

// --- Gangs ------------------------------------------------------------------

// The gang annotations are gpu/share.h's: the syncer translates them for
// the host scheduler, which places all of a group's pods at once or none
// (syncer/gpu_sharing.h).
// A Job's own request to be a gang: "true".
inline constexpr std::string_view kGangAnnotation = "vkube.io/gang";
inline constexpr int64_t kMaxGangSize = 10000;

// How many pods the Job's gang has, nullopt when its pods are not a gang:
// an Indexed Job with parallelism == completions > 1 (every index runs at
// once: distributed training, whose half-started ranks would hold GPUs and
// wait forever) up to kMaxGangSize, or a Job annotated vkube.io/gang "true"
// (its parallelism).
std::optional<int64_t> gang_size(const nlohmann::json& job);
// Puts the gang annotations (group: the Job's name) on the pod template of
// a gang Job, unless the template names a group of its own.
void mark_gang(const nlohmann::json& job, nlohmann::json& pod_template);

}  // namespace vkube::controllers::job
