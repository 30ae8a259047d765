// The Job controller's pods (kube's manageJob): as many active pods as
// parallelism and the remaining completions allow, none while suspended,
// pod recreation held back by the failure backoff, and for Indexed Jobs one
// pod per pending index.
#include <algorithm>
#include <atomic>

#include "job_controller.h"
#include "job_policy.h"
#include "util.h"
#include "workload_common.h"

namespace vkube::controllers::job {

namespace {

bool namespace_terminating(const ApiResult& r) {
  if (!r.body.is_object()) return false;
  const json& details = object_field(r.body, "details");
  auto causes = details.find("causes");
  if (causes == details.end() || !causes->is_array()) return false;
  for (const json& c : *causes)
    if (c.is_object() && c.value("reason", "") == "NamespaceTerminating") return true;
  return false;
}

// kube's firstPendingIndexes: the lowest `count` indexes below completions
// that neither succeeded nor have an active pod.
std::vector<int64_t> pending_indexes(const std::set<int64_t>& succeeded,
                                     const std::vector<ObjectPtr>& active, int64_t count,
                                     int64_t completions) {
  std::set<int64_t> taken = succeeded;
  for (const ObjectPtr& pod : active) taken.insert(completion_index(*pod));
  std::vector<int64_t> out;
  for (int64_t i = 0; i < completions && static_cast<int64_t>(out.size()) < count; ++i)
    if (!taken.count(i)) out.push_back(i);
  return out;
}

}  // namespace

Status JobController::manage_pods(Sync& s, int64_t* active) {
  const json& spec = object_field(s.job, "spec");
  if (spec.value("suspend", false)) {
    Status error;
    size_t removed = delete_pods(s, s.active, /*keep_finalizer=*/false, &error);
    *active -= static_cast<int64_t>(removed);
    s.terminating += static_cast<int64_t>(removed);
    return error;
  }
  const int64_t parallelism = int_field(spec, "parallelism", 1);
  std::optional<int64_t> completions = opt_int(spec, "completions");
  int64_t want = 0;
  if (!completions) {
    // Without completions the first success ends pod creation.
    want = s.succeeded > 0 ? *active : parallelism;
  } else {
    want = std::clamp<int64_t>(*completions - s.succeeded, 0, parallelism);
  }
  size_t rm_at_least = static_cast<size_t>(std::max<int64_t>(*active - want, 0));
  std::vector<ObjectPtr> doomed = pods_for_removal(s.job, s.active, rm_at_least);
  if (doomed.size() > kMaxPodsPerSync) doomed.resize(kMaxPodsPerSync);
  if (!doomed.empty()) {
    // Deletions and creations never mix in one sync; deletions go first.
    Status error;
    size_t removed = delete_pods(s, doomed, /*keep_finalizer=*/false, &error);
    *active -= static_cast<int64_t>(removed);
    s.terminating += static_cast<int64_t>(removed);
    return error;
  }
  // With podReplacementPolicy Failed, pods still terminating hold their place.
  bool only_failed =
      spec.value("podReplacementPolicy", "") == "Failed" || spec.contains("podFailurePolicy");
  int64_t diff = want - (only_failed ? s.terminating : 0) - *active;
  if (diff <= 0) return Status::ok();
  std::chrono::milliseconds wait = remaining_backoff(s.backoff, ctx_.now());
  if (wait.count() > 0) {
    queue().add_after(s.key, std::max<std::chrono::milliseconds>(wait, std::chrono::seconds(1)));
    return Status::ok();
  }
  return create_pods(s, std::min<int64_t>(diff, kMaxPodsPerSync), active);
}

Status JobController::create_pods(Sync& s, int64_t count, int64_t* active) {
  const json& spec = object_field(s.job, "spec");
  const std::string name = meta(s.job, "name");
  std::vector<int64_t> indexes;
  if (s.indexed) {
    indexes = pending_indexes(s.succeeded_indexes, s.active, count, int_field(spec, "completions"));
    count = static_cast<int64_t>(indexes.size());
  }
  if (count <= 0) return Status::ok();
  const json owner = workload::with_type(s.job, "batch/v1", "Job");
  json pod_template = object_field(spec, "template");
  json& finalizers = pod_template["metadata"]["finalizers"];
  if (!finalizers.is_array()) finalizers = json::array();
  if (std::find(finalizers.begin(), finalizers.end(), kTrackingFinalizer) == finalizers.end())
    finalizers.push_back(kTrackingFinalizer);
  mark_gang(s.job, pod_template);
  const std::string pods_path = api_path("v1", "pods", meta(s.job, "namespace"));

  Status error;
  size_t created = workload::slow_start(
      ctx_, static_cast<size_t>(count),
      [&](size_t i) -> Status {
        json pod;
        if (s.indexed) {
          pod = pod_from_template(indexed_template(pod_template, name, indexes[i]), owner,
                                  indexed_generate_name(name, indexes[i]));
        } else {
          pod = pod_from_template(pod_template, owner, name + "-");
        }
        ApiResult r = ctx_.client.call("POST", pods_path, pod);
        if (r.ok()) {
          ctx_.events.record(owner, "job-controller", "Normal", "SuccessfulCreate",
                             "Created pod: " + meta(r.body, "name"));
          return Status::ok();
        }
        Status st = workload::api_status(r);
        // Creating into a namespace being deleted is pointless, not an error.
        if (!namespace_terminating(r))
          ctx_.events.record(owner, "job-controller", "Warning", "FailedCreate",
                             "Error creating: " + st.message());
        return st;
      },
      &error);
  *active += static_cast<int64_t>(created);
  return error;
}

size_t JobController::delete_pods(Sync& s, const std::vector<ObjectPtr>& pods, bool keep_finalizer,
                                  Status* error) {
  const json owner = workload::with_type(s.job, "batch/v1", "Job");
  std::atomic<size_t> deleted{0};
  std::atomic<int64_t> deleted_ready{0};
  std::mutex mu;
  ctx_.parallel(pods.size(), [&](size_t i) {
    const json& pod = *pods[i];
    Status st;
    // Uncounted first: a pod removed because of scale-down or suspension
    // is neither a success nor a failure.
    if (!keep_finalizer && has_tracking_finalizer(pod)) st = remove_finalizer(pod);
    if (st.is_ok()) {
      ApiResult r = ctx_.client.call(
          "DELETE", api_path("v1", "pods", meta(pod, "namespace"), meta(pod, "name")));
      if (r.ok()) {
        ctx_.events.record(owner, "job-controller", "Normal", "SuccessfulDelete",
                           "Deleted pod: " + meta(pod, "name"));
      } else if (r.code != 404) {
        st = workload::api_status(r);
        ctx_.events.record(owner, "job-controller", "Warning", "FailedDelete",
                           "Error deleting: " + st.message());
      }
    }
    if (!st.is_ok()) {
      std::lock_guard lock(mu);
      keep_first_error(error, std::move(st));
      return;
    }
    ++deleted;
    if (pod_ready(pod)) ++deleted_ready;
  });
  s.ready -= deleted_ready.load();
  return deleted.load();
}

}  // namespace vkube::controllers::job
