// kube-scheduler's scheduling queue, reduced to what a single-profile
// scheduler needs: an active queue ordered by priority then arrival, a
// backoff queue for pods whose binding failed, and the unschedulable pods,
// which go back to active when the cluster changes (or after a while).
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

namespace vkube::scheduler {

class SchedulingQueue {
 public:
  using Clock = std::chrono::steady_clock;
  explicit SchedulingQueue(std::chrono::milliseconds unschedulable_flush)
      : flush_after_(unschedulable_flush) {}

  // Queues a pod to be tried (again). A pod already active keeps its place.
  void add(const std::string& key, int32_t priority);
  // Forgets a pod (deleted, or bound by someone else).
  void remove(const std::string& key);
  // The pod did not fit: it waits for a cluster change.
  void unschedulable(const std::string& key, int32_t priority);
  // Its binding failed: tried again after a backoff (1 s doubling, at most 10 s).
  void backoff(const std::string& key, int32_t priority);
  // Something freed capacity or added a node: every unschedulable pod is tried again.
  void move_all_to_active();

  // Blocks until a pod is due; false once shut down.
  bool pop(std::string* key);
  void shutdown();

  size_t active();
  size_t waiting_unschedulable();
  size_t waiting_backoff();
  // The time `key` entered the queue the first time (for the scheduling
  // latency); erased by forget().
  Clock::time_point first_seen(const std::string& key);
  void forget(const std::string& key);
  // Nothing active and nothing in backoff.
  bool idle();

 private:
  using Entry = std::tuple<int64_t, uint64_t, std::string>;  // -priority, seq, key
  void push_locked(const std::string& key, int32_t priority);
  void promote_due_locked(Clock::time_point now);

  std::chrono::milliseconds flush_after_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<Entry> active_;
  std::unordered_map<std::string, Entry> in_active_;
  std::unordered_map<std::string, std::pair<Clock::time_point, int32_t>> unschedulable_;
  std::multimap<Clock::time_point, std::pair<std::string, int32_t>> backoff_;
  std::unordered_map<std::string, int> attempts_;
  std::unordered_map<std::string, Clock::time_point> first_seen_;
  uint64_t seq_ = 0;
  bool shutdown_ = false;
};

}  // namespace vkube::scheduler
