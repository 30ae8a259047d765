#include "job_policy.h"

#include "job_util.h"

namespace vkube::controllers::job {

namespace {

const json kEmptyArray = json::array();

const json& list(const json& obj, std::string_view field) {
  if (!obj.is_object()) return kEmptyArray;
  auto it = obj.find(field);
  return it != obj.end() && it->is_array() ? *it : kEmptyArray;
}

bool exit_code_matches(int64_t code, const json& req) {
  const std::string op = req.value("operator", "");
  bool listed = false;
  for (const json& v : list(req, "values")) listed = listed || (v.is_number_integer() && v == code);
  if (op == "In") return listed;
  if (op == "NotIn") return !listed;
  return false;
}

// The first terminated container (then init container) with a non-zero exit
// code the requirement matches: its name and code.
std::optional<std::pair<std::string, int64_t>> match_exit_codes(const json& status,
                                                                const json& req) {
  const std::string only = req.value("containerName", "");
  for (const char* statuses : {"containerStatuses", "initContainerStatuses"})
    for (const json& c : list(status, statuses)) {
      const json& terminated = object_field(object_field(c, "state"), "terminated");
      if (terminated.empty()) continue;  // still running: no exit code yet
      if (!only.empty() && c.value("name", "") != only) continue;
      const int64_t code = int_field(terminated, "exitCode");
      if (code != 0 && exit_code_matches(code, req)) return std::pair{c.value("name", ""), code};
    }
  return std::nullopt;
}

std::optional<std::string> match_conditions(const json& status, const json& patterns) {
  for (const json& c : list(status, "conditions"))
    for (const json& p : patterns)
      if (p.is_object() && c.value("type", "") == p.value("type", "") &&
          c.value("status", "") == p.value("status", "True"))
        return c.value("type", "");
  return std::nullopt;
}

}  // namespace

FailurePolicyMatch match_pod_failure_policy(const json& job, const json& pod) {
  const json& policy = object_field(object_field(job, "spec"), "podFailurePolicy");
  const json& status = object_field(pod, "status");
  const json& meta = object_field(pod, "metadata");
  const std::string who = meta.value("namespace", "") + "/" + meta.value("name", "");
  const json& rules = list(policy, "rules");
  for (size_t i = 0; i < rules.size(); ++i) {
    const json& rule = rules[i];
    if (!rule.is_object()) continue;
    const std::string action = rule.value("action", "");
    if (action != "Ignore" && action != "Count" && action != "FailJob") continue;
    std::string what;  // the FailJob message's account of the match
    if (rule.contains("onExitCodes")) {
      auto hit = match_exit_codes(status, object_field(rule, "onExitCodes"));
      if (!hit) continue;
      what = "Container " + hit->first + " for pod " + who + " failed with exit code " +
             std::to_string(hit->second);
    } else if (rule.contains("onPodConditions")) {
      auto hit = match_conditions(status, list(rule, "onPodConditions"));
      if (!hit) continue;
      what = "Pod " + who + " has condition " + *hit;
    } else {
      continue;
    }
    FailurePolicyMatch m;
    if (action == "Ignore") m.counts = false;
    if (action == "FailJob")
      m.fail_job = what + " matching FailJob rule at index " + std::to_string(i);
    return m;
  }
  return {};
}

std::optional<int64_t> gang_size(const json& job) {
  const json& spec = object_field(job, "spec");
  const int64_t parallelism = int_field(spec, "parallelism", 1);
  const json& annotations = object_field(object_field(job, "metadata"), "annotations");
  if (annotations.value(std::string(kGangAnnotation), "") == "true" && parallelism >= 1)
    return parallelism;
  std::optional<int64_t> completions = opt_int(spec, "completions");
  if (spec.value("completionMode", "NonIndexed") == "Indexed" && completions &&
      *completions == parallelism && parallelism > 1 && parallelism <= kMaxGangSize)
    return parallelism;
  return std::nullopt;
}

void mark_gang(const json& job, json& pod_template) {
  std::optional<int64_t> size = gang_size(job);
  if (!size) return;
  json& annotations = pod_template["metadata"]["annotations"];
  if (!annotations.is_object()) annotations = json::object();
  if (annotations.contains(std::string(gpu::kPodGroupAnnotation))) return;
  annotations[std::string(gpu::kPodGroupAnnotation)] =
      object_field(job, "metadata").value("name", "");
  annotations[std::string(gpu::kPodGroupSizeAnnotation)] = std::to_string(*size);
}

}  // namespace vkube::controllers::job
