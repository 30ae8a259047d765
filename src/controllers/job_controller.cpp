// The Job controller's loop: which keys events queue, and syncJob's outline
// (count the pods, decide whether the Job failed or succeeded, manage its
// pods, then track status). Pod management is in job_pods.cpp, status
// tracking in job_status.cpp.
//
// As in kube 1.32 with its default feature gates, a Job's terminal condition
// waits for its pods: a failing Job gets FailureTarget, its active pods are
// deleted, and Failed follows once none is terminating; a succeeding one
// gets SuccessCriteriaMet, then Complete. Finished Jobs with
// ttlSecondsAfterFinished are deleted (Foreground) when it expires: kube's
// ttl-after-finished controller, run here.
#include "job_controller.h"

#include "job_policy.h"
#include "util.h"
#include "workload_common.h"

namespace vkube::controllers {

namespace job {

namespace {

const ResourceKey kJobs{"batch", "jobs"};
const ResourceKey kPods{"core", "pods"};

// The "ns/name" of the Job a pod's controller reference names, or "".
std::string job_key_of(const json& pod) {
  const json* ref = controller_ref(pod);
  if (ref == nullptr || ref->value("kind", "") != "Job" ||
      ref->value("apiVersion", "") != "batch/v1")
    return {};
  return meta(pod, "namespace") + "/" + ref->value("name", "");
}

std::optional<TimePoint> condition_time(const json& job, std::string_view type) {
  const json* c = find_condition(job, type);
  if (c == nullptr || c->value("status", "") != "True") return std::nullopt;
  return parse_rfc3339(c->value("lastTransitionTime", ""));
}

std::chrono::milliseconds until(TimePoint t, TimePoint now) {
  auto d = std::chrono::ceil<std::chrono::milliseconds>(t - now);
  return std::max(d, std::chrono::milliseconds(0));
}

}  // namespace

JobController::JobController(Context& ctx)
    : Controller(ctx, "job"), jobs_(ctx.informers.cache(kJobs)), pods_(ctx.informers.cache(kPods)) {
  ctx.informers.on_event(kJobs, [this](const ObjectEvent& e) { on_job(e); });
  ctx.informers.on_event(kPods, [this](const ObjectEvent& e) { on_pod(e); });
}

void JobController::on_job(const ObjectEvent& e) {
  queue().add(e.key);
  if (e.type != EventType::kDeleted) return;
  // kube's cleanupPodFinalizers: no sync of this Job will uncount its pods.
  for (const ObjectPtr& pod : pods_.controlled_by(meta(*e.object, "uid")))
    if (has_tracking_finalizer(*pod)) queue().add(std::string(kPodKeyPrefix) + object_key(*pod));
}

void JobController::on_pod(const ObjectEvent& e) {
  std::string key = job_key_of(*e.object);
  if (!key.empty()) queue().add(key);
  if (e.old) {
    std::string old_key = job_key_of(*e.old);
    if (!old_key.empty() && old_key != key) queue().add(old_key);
  }
  if (e.type == EventType::kDeleted || !has_tracking_finalizer(*e.object)) return;
  // A finalizer its Job will not remove: the Job is gone, replaced or done.
  const json* ref = controller_ref(*e.object);
  ObjectPtr owner = key.empty() ? nullptr : jobs_.get(key);
  if (key.empty() || owner == nullptr || meta(*owner, "uid") != ref->value("uid", "") ||
      job_finished(*owner))
    queue().add(std::string(kPodKeyPrefix) + e.key);
}

Status JobController::reconcile(const std::string& key) {
  if (key.rfind(kPodKeyPrefix, 0) == 0) return sync_orphan_pod(key.substr(kPodKeyPrefix.size()));
  return sync_job(key);
}

Status JobController::remove_finalizer(const json& pod) {
  const json& metadata = object_field(pod, "metadata");
  auto finalizers = metadata.find("finalizers");
  if (finalizers == metadata.end() || !finalizers->is_array()) return Status::ok();
  json patch = json::array();
  if (finalizers->size() == 1 && (*finalizers)[0] == kTrackingFinalizer) {
    // The last finalizer: the list goes too, as kube's would.
    patch = {{{"op", "test"}, {"path", "/metadata/finalizers"}, {"value", *finalizers}},
             {{"op", "remove"}, {"path", "/metadata/finalizers"}}};
  }
  for (size_t i = 0; i < finalizers->size() && patch.empty(); ++i) {
    if ((*finalizers)[i] != kTrackingFinalizer) continue;
    std::string at = "/metadata/finalizers/" + std::to_string(i);
    patch = {{{"op", "test"}, {"path", at}, {"value", kTrackingFinalizer}},
             {{"op", "remove"}, {"path", at}}};
    break;
  }
  if (patch.empty()) return Status::ok();
  ApiResult r =
      ctx_.client.call("PATCH", api_path("v1", "pods", meta(pod, "namespace"), meta(pod, "name")),
                       patch, "application/json-patch+json");
  if (r.code == 404) return Status::ok();
  return workload::api_status(r);
}

Status JobController::sync_orphan_pod(const std::string& key) {
  ObjectPtr pod = pods_.get(key);
  if (pod == nullptr || !has_tracking_finalizer(*pod)) return Status::ok();
  if (const json* ref = controller_ref(*pod)) {
    if (ref->value("kind", "") != "Job" || ref->value("apiVersion", "") != "batch/v1")
      return Status::ok();  // another controller's pod
    ObjectPtr owner = jobs_.get(meta(*pod, "namespace") + "/" + ref->value("name", ""));
    if (owner != nullptr && meta(*owner, "uid") == ref->value("uid", "") && !job_finished(*owner))
      return Status::ok();  // its Job counts it
  }
  Status s = remove_finalizer(*pod);
  ctx_.informers.sync();
  return s;
}

Status JobController::finish_up(const json& job, const std::string& key) {
  forget_backoff(key);
  Status s;
  for (const ObjectPtr& pod : pods_.controlled_by(meta(job, "uid")))
    if (has_tracking_finalizer(*pod)) keep_first_error(&s, remove_finalizer(*pod));
  std::optional<int64_t> ttl = opt_int(object_field(job, "spec"), "ttlSecondsAfterFinished");
  if (!ttl || is_terminating(job)) return s;
  std::optional<TimePoint> finished = condition_time(job, "Complete");
  if (!finished) finished = condition_time(job, "Failed");
  if (!finished) return s;
  TimePoint now = ctx_.now();
  TimePoint expire = *finished + std::chrono::seconds(*ttl);
  if (now < expire) {
    queue().add_after(key, until(expire, now));
    return s;
  }
  // As kube's ttl-after-finished controller: delete only what is still the
  // finished Job with that TTL, and its pods before it.
  auto [ns, name] = split_key(key);
  std::string path = api_path("batch/v1", "jobs", ns, name);
  ApiResult fresh = ctx_.client.call("GET", path);
  if (fresh.code == 404) return s;
  VKUBE_RETURN_IF_ERROR(workload::api_status(fresh));
  if (opt_int(object_field(fresh.body, "spec"), "ttlSecondsAfterFinished") != ttl ||
      meta(fresh.body, "uid") != meta(job, "uid"))
    return s;
  json options = {{"kind", "DeleteOptions"},
                  {"apiVersion", "v1"},
                  {"propagationPolicy", "Foreground"},
                  {"preconditions", {{"uid", meta(job, "uid")}}}};
  ApiResult r = ctx_.client.call("DELETE", path, options);
  if (r.code != 404) keep_first_error(&s, workload::api_status(r));
  ctx_.informers.sync();
  return s;
}

void JobController::count_pods(Sync& s) {
  const json& status = object_field(s.job, "status");
  const json& uncounted = object_field(status, "uncountedTerminatedPods");
  for (const char* list : {"succeeded", "failed"}) {
    auto it = uncounted.find(list);
    if (it == uncounted.end() || !it->is_array()) continue;
    auto& set = list[0] == 's' ? s.uncounted_succeeded : s.uncounted_failed;
    for (const json& uid : *it)
      if (uid.is_string()) set.insert(uid.get<std::string>());
  }
  int64_t completions = int_field(object_field(s.job, "spec"), "completions");
  for (const ObjectPtr& pod : s.pods) {
    if (pod_active(*pod)) {
      s.active.push_back(pod);
      if (pod_ready(*pod)) ++s.ready;
    }
    if (pod_terminating(*pod)) ++s.terminating;
    // Pods without the finalizer are counted already (kube's getNewFinishedPods).
    if (!has_tracking_finalizer(*pod)) continue;
    if (s.indexed) {
      int64_t index = completion_index(*pod);
      if (index < 0 || index >= completions) continue;
    }
    std::string uid = meta(*pod, "uid");
    if (pod_phase(*pod) == "Succeeded" && !s.uncounted_succeeded.count(uid))
      s.new_succeeded.push_back(pod);
    else if (pod_failed_for(*pod, s.job) && !s.uncounted_failed.count(uid))
      s.new_failed.push_back(pod);
  }
  s.succeeded = int_field(status, "succeeded") + static_cast<int64_t>(s.new_succeeded.size()) +
                static_cast<int64_t>(s.uncounted_succeeded.size());
  // Failures a podFailurePolicy Ignore rule matches (a disruption) do not
  // count toward backoffLimit (kube's nonIgnoredFailedPodsCount).
  int64_t counted_failed = 0;
  for (const ObjectPtr& pod : s.new_failed)
    if (match_pod_failure_policy(s.job, *pod).counts) ++counted_failed;
  s.failed = int_field(status, "failed") + counted_failed +
             static_cast<int64_t>(s.uncounted_failed.size());
  if (s.indexed) {
    s.prev_succeeded_indexes = parse_indexes(status.value("completedIndexes", ""), completions);
    s.succeeded_indexes = s.prev_succeeded_indexes;
    for (const ObjectPtr& pod : s.pods) {
      int64_t index = completion_index(*pod);
      if (pod_phase(*pod) == "Succeeded" && index >= 0 && index < completions &&
          has_tracking_finalizer(*pod))
        s.succeeded_indexes.insert(index);
    }
    s.succeeded = static_cast<int64_t>(s.succeeded_indexes.size());
  }
}

// Container restarts of running pods reach backoffLimit (restartPolicy
// OnFailure, where pods do not fail but restart).
bool past_backoff_limit_on_failure(const json& job, const std::vector<ObjectPtr>& pods) {
  const json& spec = object_field(job, "spec");
  if (object_field(object_field(spec, "template"), "spec").value("restartPolicy", "") !=
      "OnFailure")
    return false;
  int64_t restarts = 0;
  for (const ObjectPtr& pod : pods) {
    std::string phase = pod_phase(*pod);
    if (phase != "Running" && phase != "Pending") continue;
    const json& status = object_field(*pod, "status");
    for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
      auto it = status.find(list);
      if (it == status.end() || !it->is_array()) continue;
      for (const json& c : *it) restarts += int_field(c, "restartCount");
    }
  }
  int64_t limit = int_field(spec, "backoffLimit", 6);
  return limit == 0 ? restarts > 0 : restarts >= limit;
}

void JobController::check_failure(Sync& s) {
  const json& spec = object_field(s.job, "spec");
  const bool suspended = spec.value("suspend", false);
  if (const json* met = find_condition(s.job, "SuccessCriteriaMet");
      met != nullptr && met->value("status", "") == "True") {
    s.finished = *met;
    return;
  }
  if (const json* target = find_condition(s.job, "FailureTarget");
      target != nullptr && target->value("status", "") == "True") {
    s.finished = new_condition("Failed", "True", target->value("reason", ""),
                               target->value("message", ""), ctx_.now());
    return;
  }
  TimePoint now = ctx_.now();
  // A failed pod matching a FailJob rule fails the Job (kube's getFailJobMessage).
  if (spec.contains("podFailurePolicy"))
    for (const ObjectPtr& pod : s.pods) {
      if (!pod_failed_for(*pod, s.job)) continue;
      if (auto message = match_pod_failure_policy(s.job, *pod).fail_job) {
        s.finished = new_condition("FailureTarget", "True", "PodFailurePolicy", *message, now);
        return;
      }
    }
  if (s.failed > int_field(spec, "backoffLimit", 6) ||
      past_backoff_limit_on_failure(s.job, s.pods)) {
    s.finished = new_condition("FailureTarget", "True", "BackoffLimitExceeded",
                               "Job has reached the specified backoff limit", now);
    return;
  }
  std::optional<int64_t> deadline = opt_int(spec, "activeDeadlineSeconds");
  auto start = parse_rfc3339(object_field(s.job, "status").value("startTime", ""));
  if (!deadline || !start || suspended) return;
  TimePoint end = *start + std::chrono::seconds(*deadline);
  if (now >= end) {
    s.finished = new_condition("FailureTarget", "True", "DeadlineExceeded",
                               "Job was active longer than specified deadline", now);
  } else {
    queue().add_after(s.key, until(end, now));
  }
}

Status JobController::sync_job(const std::string& key) {
  ObjectPtr cached = jobs_.get(key);
  if (cached == nullptr) {
    forget_backoff(key);
    return Status::ok();
  }
  if (job_finished(*cached)) return finish_up(*cached, key);
  Sync s;
  s.key = key;
  s.job = *cached;
  s.written_status = cached->contains("status") ? (*cached)["status"] : json();
  const json& spec = object_field(s.job, "spec");
  std::string mode = spec.value("completionMode", "NonIndexed");
  if (mode != "NonIndexed" && mode != "Indexed") {
    ctx_.events.record(s.job, "job-controller", "Warning", "UnknownCompletionMode",
                       "Skipped Job sync because completion mode is unknown");
    return Status::ok();
  }
  s.indexed = mode == "Indexed";
  auto [ns, name] = split_key(key);
  s.path = api_path("batch/v1", "jobs", ns, name);
  if (!s.job["status"].is_object()) s.job["status"] = json::object();
  json& uncounted = s.job["status"]["uncountedTerminatedPods"];
  if (!uncounted.is_object()) uncounted = json::object();
  s.pods = pods_.controlled_by(meta(s.job, "uid"));
  count_pods(s);

  const bool suspended = spec.value("suspend", false);
  json& status = s.job["status"];
  if (!status.contains("startTime") && !suspended) status["startTime"] = rfc3339(ctx_.now());
  s.backoff = next_backoff(backoff_of(key), s.new_succeeded, s.new_failed);
  check_failure(s);

  int64_t active = static_cast<int64_t>(s.active.size());
  Status manage_error;
  if (s.finished) {
    // A failing Job's active pods go; they count as failed when gone.
    size_t deleted = delete_pods(s, s.active, /*keep_finalizer=*/true, &manage_error);
    if (deleted != s.active.size()) s.finished.reset();
    active -= static_cast<int64_t>(deleted);
    s.terminating += static_cast<int64_t>(deleted);
  } else {
    const bool managed = !is_terminating(s.job);
    if (managed) manage_error = manage_pods(s, &active);
    std::optional<int64_t> completions = opt_int(spec, "completions");
    bool complete =
        completions ? s.succeeded >= *completions && active == 0 : s.succeeded > 0 && active == 0;
    if (complete) {
      s.finished = new_condition("SuccessCriteriaMet", "True", "CompletionsReached",
                                 "Reached expected number of succeeded pods", ctx_.now());
    } else if (managed) {
      update_suspended_condition(s);
    }
  }
  if (active > 0)
    status["active"] = active;
  else
    status.erase("active");
  status["ready"] = s.ready;
  status["terminating"] = s.terminating;
  Status tracked = track_status(s);
  ctx_.informers.sync();
  if (!tracked.is_ok()) return tracked;
  return manage_error;
}

void JobController::update_suspended_condition(Sync& s) {
  json& status = s.job["status"];
  const TimePoint now = ctx_.now();
  if (object_field(s.job, "spec").value("suspend", false)) {
    if (ensure_condition(status["conditions"], "Suspended", "True", "JobSuspended", "Job suspended",
                         now))
      ctx_.events.record(s.job, "job-controller", "Normal", "Suspended", "Job suspended");
  } else if (find_condition(s.job, "Suspended") != nullptr &&
             ensure_condition(status["conditions"], "Suspended", "False", "JobResumed",
                              "Job resumed", now)) {
    ctx_.events.record(s.job, "job-controller", "Normal", "Resumed", "Job resumed");
    // activeDeadlineSeconds counts from the resumption.
    status["startTime"] = rfc3339(now);
  }
}

BackoffRecord JobController::backoff_of(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = backoff_.find(key);
  return it == backoff_.end() ? BackoffRecord{} : it->second;
}

void JobController::set_backoff(const std::string& key, const BackoffRecord& record) {
  std::lock_guard lock(mu_);
  backoff_[key] = record;
}

void JobController::forget_backoff(const std::string& key) {
  std::lock_guard lock(mu_);
  backoff_.erase(key);
}

}  // namespace job

std::unique_ptr<Controller> make_job_controller(Context& ctx) {
  return std::make_unique<job::JobController>(ctx);
}

}  // namespace vkube::controllers
