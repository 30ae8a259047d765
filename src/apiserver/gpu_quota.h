// GPU quota admission: the tenant's pods together stay within its GPU quota
// (Options::gpu_quota), checked at pod create as kube's ResourceQuota plugin
// checks a quota, and refused with its message.
//
// Usage is a running sum over the tenant's pods that ask for GPU, keyed by
// pod UID, built from one list of the pods and kept by a watch on them whose
// notifier runs on the committing writer's thread (as the watch cache's), so
// a write is counted before it is acknowledged. An admitted pod's usage is
// reserved under the same lock as the check, so of two concurrent creates
// only as many pass as fit; the reservation becomes the stored pod's entry
// when the watch sees its create, and is released when the create fails.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "errors.h"
#include "vkube/gpu/quota.h"
#include "vkube/storage/backend.h"

namespace vkube::apiserver {

class GpuQuotaAdmission {
 public:
  // `backend` is not owned and outlives this; `pod_prefix` is where pods are
  // stored. Reads the pods at once (a failure is retried at the first GPU
  // pod's admission).
  GpuQuotaAdmission(storage::Backend* backend, std::string pod_prefix, gpu::GpuQuota quota);
  ~GpuQuotaAdmission();
  GpuQuotaAdmission(const GpuQuotaAdmission&) = delete;
  GpuQuotaAdmission& operator=(const GpuQuotaAdmission&) = delete;

  // Admits a pod about to be created as `name` (its metadata.uid set). A pod
  // that asks for no GPU passes at once. Otherwise kForbidden when it would
  // exceed the quota, kUnavailable when the usage cannot be read; when
  // admitted and not `dry_run`, what it counts stays reserved until the watch
  // sees it stored or release() is called. Thread-safe.
  std::optional<ApiError> admit(const nlohmann::json& pod, const std::string& name, bool dry_run);
  // Drops the reservation of a pod whose create failed. Thread-safe.
  void release(const nlohmann::json& pod);
  // What the tenant's pods count now (tests and the start-up log). Thread-safe.
  gpu::GpuUsage used();
  // Ends the watch; later GPU pods are refused as kUnavailable.
  void shutdown();

 private:
  struct Entry {
    gpu::GpuUsage usage;
    // deletionTimestamp + deletionGracePeriodSeconds (unix seconds): kube
    // stops charging a terminating pod once that has passed.
    std::optional<int64_t> grace_end;
    storage::Revision revision = 0;  // 0: reserved by admission, not seen stored
    std::string key;
  };
  struct State {
    std::unordered_map<std::string, Entry> by_uid;
    std::unordered_map<std::string, std::string> uid_by_key;  // stored pods only
    gpu::GpuUsage counted;                                    // entries without grace_end
    std::set<std::string> terminating;                        // uids of entries with grace_end

    void put(const std::string& uid, Entry e);
    void erase_uid(const std::string& uid);
    void forget_key(const std::string& key);
    // A pod's stored state (value "" for a delete) at `revision`.
    void apply(const std::string& key, const std::string& value, storage::Revision revision);
    gpu::GpuUsage used(int64_t now_unix) const;
  };

  Status ensure_synced();
  Status resync();  // sync_mu_ held
  void drain(storage::Watch* watch);

  storage::Backend* backend_;
  const std::string prefix_;
  const gpu::GpuQuota quota_;

  std::mutex sync_mu_;  // one resync at a time; guards watch_ and shut_down_
  std::unique_ptr<storage::Watch> watch_;
  bool shut_down_ = false;
  std::atomic<bool> synced_{false};  // false: the watch ended, state must be re-listed

  // Lock order: sync_mu_, then the store's, then mu_ (the notifier runs under
  // the store's watch lock and takes mu_), so mu_ is held around no call into
  // the store but a watch poll.
  std::mutex mu_;
  State state_;                    // guarded by mu_
  storage::Revision applied_ = 0;  // guarded by mu_
};

}  // namespace vkube::apiserver
