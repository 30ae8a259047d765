// The Job controller (kube's pkg/controller/job, 1.32 behaviour): pods from
// the template up to parallelism and completions (NonIndexed and Indexed),
// success and failure counted exactly once through the
// batch.kubernetes.io/job-tracking finalizer and
// status.uncountedTerminatedPods, backoffLimit with exponential pod
// recreation backoff, activeDeadlineSeconds, suspend, the interim
// SuccessCriteriaMet/FailureTarget conditions before Complete/Failed, and the
// ttl-after-finished controller's deletion of finished Jobs.
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "controller.h"
#include "job_util.h"

namespace vkube::controllers::job {

// Queue keys: "ns/name" is a Job; "pod:ns/name" a pod whose tracking
// finalizer no Job will remove (its Job is gone or finished).
inline constexpr std::string_view kPodKeyPrefix = "pod:";

// Keeps the first error of several writes.
inline void keep_first_error(Status* s, Status next) {
  if (s->is_ok() && !next.is_ok()) *s = std::move(next);
}

class JobController final : public Controller {
 public:
  explicit JobController(Context& ctx);

 protected:
  Status reconcile(const std::string& key) override;

 private:
  // What one sync of a Job works with (kube's syncJobCtx).
  struct Sync {
    std::string key;
    std::string path;     // the Job's API path
    json job;             // a copy, status updated as the sync goes
    json written_status;  // the status as stored
    std::vector<ObjectPtr> pods;
    std::vector<ObjectPtr> active;
    std::set<std::string> uncounted_succeeded, uncounted_failed;
    std::vector<ObjectPtr> new_succeeded, new_failed;
    int64_t succeeded = 0, failed = 0, ready = 0, terminating = 0;
    bool indexed = false;
    std::set<int64_t> prev_succeeded_indexes, succeeded_indexes;
    std::optional<json> finished;  // the terminal or interim condition reached
    BackoffRecord backoff;
  };

  void on_pod(const ObjectEvent& e);
  void on_job(const ObjectEvent& e);

  Status sync_job(const std::string& key);
  Status sync_orphan_pod(const std::string& key);
  // A finished Job: its pods' leftover finalizers, then its TTL.
  Status finish_up(const json& job, const std::string& key);
  void count_pods(Sync& s);
  void check_failure(Sync& s);
  // kube's manageJob: creates or deletes pods; returns the active count.
  Status manage_pods(Sync& s, int64_t* active);
  Status create_pods(Sync& s, int64_t count, int64_t* active);
  // The Suspended condition (and its event) as spec.suspend says.
  void update_suspended_condition(Sync& s);
  // Deletes pods; with `keep_finalizer` false they are uncounted first (kube's
  // deleteJobPods), else they count as failed later (deleteActivePods).
  size_t delete_pods(Sync& s, const std::vector<ObjectPtr>& pods, bool keep_finalizer,
                     Status* error);
  // kube's trackJobStatusAndRemoveFinalizers.
  Status track_status(Sync& s);
  // Adds the finished pods not yet counted to uncountedTerminatedPods and
  // lists those whose finalizer goes. True when the per-sync cap was hit.
  bool collect_finished(Sync& s, std::vector<ObjectPtr>* to_uncount);
  // FailureTarget/SuccessCriteriaMet into the status; s.finished becomes
  // the terminal condition that follows.
  void record_interim_condition(Sync& s);
  // Removes the pods' tracking finalizers; those removed leave *with_finalizer.
  Status remove_finalizers(const std::vector<ObjectPtr>& pods,
                           std::set<std::string>* with_finalizer);
  void record_finished(Sync& s);
  // Writes s.job's status unless it is as stored.
  Status put_status(Sync& s);
  Status remove_finalizer(const json& pod);

  BackoffRecord backoff_of(const std::string& key);
  void set_backoff(const std::string& key, const BackoffRecord& record);
  void forget_backoff(const std::string& key);

  const Lister& jobs_;
  const Lister& pods_;
  std::mutex mu_;
  std::unordered_map<std::string, BackoffRecord> backoff_;
};

}  // namespace vkube::controllers::job
