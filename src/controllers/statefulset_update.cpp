// The pods part of a StatefulSet pass (kube's updateStatefulSet): replicas
// in the ordinal range are created, fixed or replaced; pods above it are
// deleted; then, with RollingUpdate, the highest pod at or above the
// partition that is not at the update revision is deleted to be recreated.
// OrderedReady (monotonic) stops at the first pod that is not Running and
// Ready; Parallel acts on all pods at once.
#include <algorithm>

#include "statefulset_sync.h"
#include "workload_common.h"

namespace vkube::controllers::statefulset {

using workload::int_at;
using workload::str_at;

namespace {

bool rolling(const json& set) {
  return str_at(set, {"spec", "updateStrategy", "type"}) == "RollingUpdate";
}

const json* rolling_params(const json& set) {
  auto spec = set.find("spec");
  if (spec == set.end() || !spec->is_object()) return nullptr;
  auto strategy = spec->find("updateStrategy");
  if (strategy == spec->end() || !strategy->is_object()) return nullptr;
  auto params = strategy->find("rollingUpdate");
  return params != strategy->end() && params->is_object() ? &*params : nullptr;
}

}  // namespace

Status SetSync::update_pods() {
  status_ = {{"observedGeneration", int_at(set_, {"metadata", "generation"})},
             {"currentRevision", meta(current_revision_, "name")},
             {"updateRevision", meta(update_revision_, "name")},
             {"collisionCount", collision_count_}};
  const int start = start_ordinal(set_);
  replicas_.assign(static_cast<size_t>(std::max(replicas_of(set_), 0)), json());
  for (const ObjectPtr& p : pods_) {
    int ordinal = ordinal_of(*p);
    if (in_ordinal_range(set_, ordinal))
      replicas_[ordinal - start] = *p;
    else if (ordinal >= 0)
      condemned_.push_back(*p);
  }
  // Missing ordinals get a pod of the revision their place calls for: below
  // the partition the current one, else the update one.
  const json* params = rolling_params(set_);
  for (size_t i = 0; i < replicas_.size(); ++i) {
    if (!replicas_[i].is_null()) continue;
    const int ordinal = start + static_cast<int>(i);
    const int64_t keep = params != nullptr ? int_at(*params, {"partition"})
                                           : int_at(set_, {"status", "currentReplicas"});
    if (rolling(set_) && ordinal < start + keep)
      replicas_[i] = new_pod(set_, current_template_, ordinal, meta(current_revision_, "name"));
    else
      replicas_[i] = new_pod(set_, update_template_, ordinal, meta(update_revision_, "name"));
  }
  std::sort(condemned_.begin(), condemned_.end(),
            [](const json& a, const json& b) { return ordinal_of(a) > ordinal_of(b); });
  for (const json& p : replicas_)
    if (first_unavailable_ == nullptr && unavailable(p, min_ready_, now_)) first_unavailable_ = &p;
  for (auto it = condemned_.rbegin(); it != condemned_.rend(); ++it)
    if (first_unavailable_ == nullptr && unavailable(*it, min_ready_, now_))
      first_unavailable_ = &*it;

  Status s;
  if (!is_terminating(set_)) s = act_on_pods();
  count_status();
  return s;
}

// The replica and condemned loops, then (not with OnDelete) the rolling update.
Status SetSync::act_on_pods() {
  const bool monotonic = !allows_burst(set_);
  // kube's runForAll: in order, stopping where asked, or in slow-start batches.
  auto run_for_all = [&](size_t n, const std::function<Status(size_t, bool*)>& fn,
                         bool* stop) -> Status {
    *stop = false;
    if (monotonic) {
      for (size_t i = 0; i < n; ++i) {
        Status s = fn(i, stop);
        if (*stop || !s.is_ok()) {
          *stop = true;
          return s;
        }
      }
      return Status::ok();
    }
    Status error;
    workload::slow_start(
        ctx_, n,
        [&](size_t i) {
          bool ignored = false;
          return fn(i, &ignored);
        },
        &error);
    *stop = !error.is_ok();
    return error;
  };

  bool stop = false;
  Status s = run_for_all(
      replicas_.size(), [this](size_t i, bool* st) { return process_replica(i, st); }, &stop);
  if (stop) return s;
  s = run_for_all(
      condemned_.size(),
      [this](size_t i, bool* st) {
        Status r = fix_condemned_claims(i);
        *st = !r.is_ok();
        return r;
      },
      &stop);
  if (stop) return s;
  s = run_for_all(
      condemned_.size(), [this](size_t i, bool* st) { return process_condemned(i, st); }, &stop);
  if (stop) return s;
  if (str_at(set_, {"spec", "updateStrategy", "type"}) == "OnDelete") return Status::ok();

  const json* params = rolling_params(set_);
  const int64_t partition = params != nullptr ? int_at(*params, {"partition"}) : 0;
  for (int64_t target = static_cast<int64_t>(replicas_.size()) - 1; target >= partition; --target) {
    const json& pod = replicas_[static_cast<size_t>(target)];
    if (pod_revision(pod) != meta(update_revision_, "name") && !is_terminating(pod)) {
      Status d = delete_pod(pod);
      if (!d.is_ok() && d.code() != Code::kNotFound) return d;
      --current_replicas_delta_;
      return Status::ok();
    }
    if (unavailable(pod, min_ready_, now_)) return Status::ok();  // wait for it
  }
  return Status::ok();
}

Status SetSync::process_replica(size_t i, bool* stop) {
  const json& pod = replicas_[i];
  const bool monotonic = !allows_burst(set_);
  const std::string phase = pod_phase(pod);
  if (phase == "Failed" || phase == "Succeeded") {
    // Recreated on a later pass, once the old pod is gone.
    *stop = true;
    return is_terminating(pod) ? Status::ok() : delete_pod(pod);
  }
  if (!is_created(pod)) {
    if (str_at(set_, {"spec", "persistentVolumeClaimRetentionPolicy", "whenScaled"}) == "Delete") {
      for (const json& claim : claims_for(set_, ordinal_of(pod))) {
        ObjectPtr existing = claims_.get(meta(claim, "namespace"), meta(claim, "name"));
        if (existing && claim_is_stale(*existing, pod)) {
          *stop = true;  // its old owner's claim is being collected
          return Status::ok();
        }
      }
    }
    Status s = create_pod(pod);
    if (!s.is_ok() || monotonic) {
      *stop = true;
      return s;
    }
  }
  if (phase == "Pending") {
    Status s = create_claims(pod);
    if (!s.is_ok()) {
      *stop = true;
      return s;
    }
  }
  if (monotonic && (is_terminating(pod) || !running_and_ready(pod) ||
                    !running_and_available(pod, min_ready_, now_))) {
    *stop = true;
    return Status::ok();
  }
  if (!is_created(pod)) return Status::ok();
  if (!identity_matches(set_, pod)) {
    Status s = update_pod(pod);
    if (!s.is_ok()) {
      *stop = true;
      return s;
    }
  } else if (!storage_matches(set_, pod)) {
    Status s = create_claims(pod);  // a live pod's volumes cannot change
    if (!s.is_ok()) {
      *stop = true;
      return s;
    }
  }
  if (!claims_match_policy(pod)) {
    Status s = update_claims_for_policy(pod);
    if (!s.is_ok()) {
      *stop = true;
      return s;
    }
  }
  return Status::ok();
}

Status SetSync::fix_condemned_claims(size_t i) {
  const json& pod = condemned_[i];
  return claims_match_policy(pod) ? Status::ok() : update_claims_for_policy(pod);
}

Status SetSync::process_condemned(size_t i, bool* stop) {
  const json& pod = condemned_[i];
  const bool monotonic = !allows_burst(set_);
  if (is_terminating(pod)) {
    *stop = monotonic;  // OrderedReady waits for it to go
    return Status::ok();
  }
  if (monotonic && &pod != first_unavailable_ &&
      (!running_and_ready(pod) || !running_and_available(pod, min_ready_, now_))) {
    *stop = true;
    return Status::ok();
  }
  *stop = true;
  return delete_pod(pod);
}

}  // namespace vkube::controllers::statefulset
