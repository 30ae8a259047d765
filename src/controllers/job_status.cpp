// The Job controller's status (kube's trackJobStatusAndRemoveFinalizers):
// finished pods are counted exactly once. Their UIDs are first written to
// status.uncountedTerminatedPods, then their batch.kubernetes.io/job-tracking
// finalizers are removed, then the UIDs move into succeeded/failed. A crash
// between the steps is repaired by the next sync, never counted twice.
// Indexed Jobs count by index instead (status.completedIndexes).
#include <algorithm>

#include "job_controller.h"
#include "job_policy.h"
#include "util.h"
#include "workload_common.h"

namespace vkube::controllers::job {

namespace {

// Moves the UIDs of uncountedTerminatedPods whose pods lost the finalizer
// (or are gone) into the counters. True when the status changed.
bool count_uncounted(json& status, const std::set<std::string>& with_finalizer) {
  bool changed = false;
  json& uncounted = status["uncountedTerminatedPods"];
  for (const char* list : {"succeeded", "failed"}) {
    if (!uncounted.contains(list) || !uncounted[list].is_array()) continue;
    json kept = json::array();
    for (const json& uid : uncounted[list])
      if (uid.is_string() && with_finalizer.count(uid.get<std::string>())) kept.push_back(uid);
    int64_t moved = static_cast<int64_t>(uncounted[list].size() - kept.size());
    if (moved == 0) continue;
    changed = true;
    status[list] = int_field(status, list) + moved;
    if (kept.empty())
      uncounted.erase(list);
    else
      uncounted[list] = std::move(kept);
  }
  return changed;
}

size_t uncounted_size(const json& status) {
  const json& uncounted = object_field(status, "uncountedTerminatedPods");
  size_t n = 0;
  for (const char* list : {"succeeded", "failed"})
    if (uncounted.contains(list) && uncounted[list].is_array()) n += uncounted[list].size();
  return n;
}

void add_uncounted(json& status, const char* list, const std::string& uid) {
  status["uncountedTerminatedPods"][list].push_back(uid);
}

// The status without empty objects, arrays and nulls: a server that drops
// them must not make every sync write again.
json normalized(const json& v) {
  if (!v.is_object()) return v;
  json out = json::object();
  for (auto it = v.begin(); it != v.end(); ++it) {
    json child = normalized(it.value());
    if (child.is_null() || ((child.is_object() || child.is_array()) && child.empty())) continue;
    out[it.key()] = std::move(child);
  }
  return out;
}

}  // namespace

Status JobController::put_status(Sync& s) {
  if (normalized(s.job["status"]) == normalized(s.written_status)) return Status::ok();
  ApiResult r = ctx_.client.call("PUT", s.path + "/status", s.job);
  VKUBE_RETURN_IF_ERROR(workload::api_status(r));
  s.job["metadata"]["resourceVersion"] = meta(r.body, "resourceVersion");
  s.written_status = s.job["status"];
  return Status::ok();
}

bool JobController::collect_finished(Sync& s, std::vector<ObjectPtr>* to_uncount) {
  json& status = s.job["status"];
  const int64_t completions = int_field(object_field(s.job, "spec"), "completions");
  const bool failing = s.finished && s.finished->value("type", "") != "SuccessCriteriaMet";
  std::vector<ObjectPtr> pods = s.pods;
  if (s.indexed)
    std::stable_sort(pods.begin(), pods.end(), [](const ObjectPtr& a, const ObjectPtr& b) {
      return completion_index(*a) < completion_index(*b);
    });
  for (const ObjectPtr& pod : pods) {
    if (!has_tracking_finalizer(*pod)) continue;  // counted in an earlier sync
    const bool failed = pod_failed_for(*pod, s.job);
    const bool succeeded = pod_phase(*pod) == "Succeeded";
    // kube's canRemoveFinalizer (no per-index backoff here).
    if (!is_terminating(s.job) && !s.finished && !succeeded && !failed) continue;
    to_uncount->push_back(pod);
    const std::string uid = meta(*pod, "uid");
    const int64_t index = completion_index(*pod);
    const bool valid_index = !s.indexed || (index >= 0 && index < completions);
    if (succeeded && !s.uncounted_failed.count(uid)) {
      // Indexed Jobs count succeeded indexes, not pods.
      if (!s.indexed && !s.uncounted_succeeded.count(uid)) {
        add_uncounted(status, "succeeded", uid);
        s.uncounted_succeeded.insert(uid);
      }
    } else if ((failed || failing) && !s.uncounted_failed.count(uid) && valid_index) {
      // Once the Job failed, every pod not yet finished counts as failed;
      // one a podFailurePolicy Ignore rule matches never does.
      if (match_pod_failure_policy(s.job, *pod).counts) {
        add_uncounted(status, "failed", uid);
        s.uncounted_failed.insert(uid);
      }
    }
    // The rest waits for the next sync, so that the status stays small.
    if (uncounted_size(status) + s.succeeded_indexes.size() - s.prev_succeeded_indexes.size() >=
        kMaxPodsPerSync)
      return true;
  }
  return false;
}

void JobController::record_interim_condition(Sync& s) {
  if (!s.finished) return;
  json& status = s.job["status"];
  const std::string type = s.finished->value("type", "");
  const std::string reason = s.finished->value("reason", "");
  const std::string message = s.finished->value("message", "");
  if (type == "FailureTarget") {
    status["conditions"].push_back(*s.finished);
    s.finished = new_condition("Failed", "True", reason, message, ctx_.now());
  } else if (type == "SuccessCriteriaMet") {
    if (find_condition(s.job, "SuccessCriteriaMet") == nullptr)
      status["conditions"].push_back(*s.finished);
    s.finished = new_condition("Complete", "True", reason, message, ctx_.now());
  }
}

Status JobController::remove_finalizers(const std::vector<ObjectPtr>& pods,
                                        std::set<std::string>* with_finalizer) {
  std::vector<char> removed(pods.size(), 0);
  Status error;
  std::mutex mu;
  ctx_.parallel(pods.size(), [&](size_t i) {
    Status st = remove_finalizer(*pods[i]);
    std::lock_guard lock(mu);
    if (st.is_ok())
      removed[i] = 1;
    else
      keep_first_error(&error, std::move(st));
  });
  for (size_t i = 0; i < pods.size(); ++i)
    if (removed[i]) with_finalizer->erase(meta(*pods[i], "uid"));
  return error;
}

Status JobController::track_status(Sync& s) {
  json& status = s.job["status"];
  std::set<std::string> with_finalizer;
  for (const ObjectPtr& pod : s.pods)
    if (has_tracking_finalizer(*pod)) with_finalizer.insert(meta(*pod, "uid"));
  count_uncounted(status, with_finalizer);
  std::vector<ObjectPtr> to_uncount;
  const bool reached_max = collect_finished(s, &to_uncount);
  if (s.indexed) {
    std::string completed = format_indexes(s.succeeded_indexes);
    if (completed.empty())
      status.erase("completedIndexes");
    else
      status["completedIndexes"] = completed;
    if (s.succeeded_indexes.empty())
      status.erase("succeeded");
    else
      status["succeeded"] = static_cast<int64_t>(s.succeeded_indexes.size());
  }
  // The interim condition and the uncounted pods are written before any
  // finalizer goes; then the finalizers; then the counters.
  record_interim_condition(s);
  VKUBE_RETURN_IF_ERROR(put_status(s));
  set_backoff(s.key, s.backoff);
  Status error = remove_finalizers(to_uncount, &with_finalizer);
  count_uncounted(status, with_finalizer);
  if (!error.is_ok()) {
    VKUBE_RETURN_IF_ERROR(put_status(s));
    return error;
  }
  // kube's enactJobFinished: terminal only when every pod is counted and
  // none is still terminating.
  const bool finished_now =
      !reached_max && s.finished && uncounted_size(status) == 0 && s.terminating == 0;
  if (finished_now) {
    const json& c = *s.finished;
    const std::string type = c.value("type", "");
    ensure_condition(status["conditions"], type, "True", c.value("reason", ""),
                     c.value("message", ""), ctx_.now());
    if (type == "Complete") status["completionTime"] = c.value("lastTransitionTime", "");
  }
  VKUBE_RETURN_IF_ERROR(put_status(s));
  if (finished_now) record_finished(s);
  return Status::ok();
}

void JobController::record_finished(Sync& s) {
  const json owner = workload::with_type(s.job, "batch/v1", "Job");
  const json& spec = object_field(s.job, "spec");
  if (s.finished->value("type", "") == "Complete") {
    if (spec.contains("completions") &&
        int_field(s.job["status"], "succeeded") > int_field(spec, "completions"))
      ctx_.events.record(owner, "job-controller", "Warning", "TooManySucceededPods",
                         "Too many succeeded pods running after completion count reached");
    ctx_.events.record(owner, "job-controller", "Normal", "Completed", "Job completed");
  } else {
    ctx_.events.record(owner, "job-controller", "Warning", s.finished->value("reason", ""),
                       s.finished->value("message", ""));
  }
  forget_backoff(s.key);
}

}  // namespace vkube::controllers::job
