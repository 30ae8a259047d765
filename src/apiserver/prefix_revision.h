// The newest write under a key prefix, for caches the API server rebuilds from a list (the RBAC
// policy, the admission configurations): a watch whose notifier records each event's revision
// on the committing writer's thread, before that writer is acknowledged. A cache listed at
// revision R is current while watching() and newest() <= R, so a client's next request sees its
// own write, and a read that changes nothing costs two atomic loads.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "vkube/storage/backend.h"

namespace vkube::apiserver {

class PrefixRevision {
 public:
  // `backend` (not owned, not null) must outlive shutdown(). `on_write`, if set, also runs on
  // the writer's thread after each batch of events: quick, and never calling the store.
  PrefixRevision(storage::Backend* backend, std::string prefix, std::string what,
                 std::function<void()> on_write = {});
  ~PrefixRevision();
  PrefixRevision(const PrefixRevision&) = delete;
  PrefixRevision& operator=(const PrefixRevision&) = delete;

  bool watching() const { return watching_; }
  storage::Revision newest() const { return newest_; }
  // Opens the watch again when it ended (unless shut down). Thread-safe.
  void ensure();
  // Ends the watch for good (before the backend closes). Idempotent.
  void shutdown();

 private:
  void subscribe();  // mu_ held

  storage::Backend* backend_;
  const std::string prefix_, what_;
  const std::function<void()> on_write_;
  std::atomic<storage::Revision> newest_{0};
  std::atomic<bool> watching_{false};
  std::mutex mu_;
  std::unique_ptr<storage::Watch> watch_;  // guarded by mu_
  bool shut_down_ = false;                 // guarded by mu_
};

}  // namespace vkube::apiserver
