// One pass of the StatefulSet control loop over one set (kube's
// defaultStatefulSetControl.UpdateStatefulSet): revisions, then pods and
// claims created, fixed, deleted or rolled, then status and history.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "controller.h"
#include "statefulset_pods.h"

namespace vkube::controllers::statefulset {

inline constexpr std::string_view kComponent = "statefulset-controller";

class SetSync {
 public:
  // `set` is the cached set (apiVersion/kind set), `pods` those it claimed,
  // `revisions` its history sorted by revision number. Listers outlive it.
  SetSync(Context& ctx, const Lister& claims, json set, std::vector<ObjectPtr> pods,
          std::vector<ObjectPtr> revisions);

  // Runs the pass. Errors (a failed write) are returned after the status and
  // history were still brought up to date where possible.
  Status run();
  // Whether the pass wrote anything (the caller then waits for its caches).
  bool wrote() const { return wrote_.load(); }
  // The status the pass computed (valid after run()).
  const json& status() const { return status_; }

 private:
  // Current and update revisions; may create or renumber one.
  Status find_revisions();
  json new_revision(int64_t number, int64_t collision_count) const;
  // The pods loop; fills status_ counts.
  Status update_pods();
  Status process_replica(size_t i, bool* stop);
  Status process_condemned(size_t i, bool* stop);
  Status fix_condemned_claims(size_t i);
  Status act_on_pods();
  void count_status();
  Status write_status();
  Status truncate_history();

  // Writes, each recording its Event as kube does.
  Status create_claims(const json& pod);
  Status create_pod(const json& pod);
  Status update_pod(const json& pod);
  Status delete_pod(const json& pod);
  // True when every claim of `pod` carries the owners its policy asks for
  // (a claim that is not there yet counts as matching).
  bool claims_match_policy(const json& pod) const;
  Status update_claims_for_policy(const json& pod);

  Context& ctx_;
  const Lister& claims_;
  json set_;
  std::vector<ObjectPtr> pods_;
  std::vector<ObjectPtr> revisions_;
  TimePoint now_;
  int64_t min_ready_ = 0;
  int64_t collision_count_ = 0;
  json current_revision_;
  json update_revision_;
  json current_template_;
  json update_template_;
  // replicas_[i] is ordinal start+i (a placeholder without status when the
  // pod does not exist); condemned_ are out of range, highest ordinal first.
  std::vector<json> replicas_;
  std::vector<json> condemned_;
  const json* first_unavailable_ = nullptr;
  json status_;
  int64_t current_replicas_delta_ = 0;
  std::atomic<bool> wrote_{false};
};

}  // namespace vkube::controllers::statefulset
