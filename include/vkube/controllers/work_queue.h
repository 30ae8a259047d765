// A controller's queue of object keys (client-go's workqueue): a key queued
// several times before a worker takes it is handled once, a key is never
// handled by two workers at once, and keys can be delayed or retried with
// backoff. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vkube/common/status.h"

namespace vkube::controllers {

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;

  // Queues `key` unless it is already waiting.
  void add(const std::string& key);
  // Queues `key` after `delay` (an earlier pending delay for it wins).
  void add_after(const std::string& key, std::chrono::milliseconds delay);
  // Queues `key` after a per-key backoff: 5 ms doubling per failure, at most
  // 60 s. forget() resets it.
  void add_rate_limited(const std::string& key);
  void forget(const std::string& key);
  // How many times `key` was retried since the last forget().
  int retries(const std::string& key);

  // Blocks until a key is due; false once shut down. The caller owns the key
  // until it calls done(key).
  bool get(std::string* key);
  void done(const std::string& key);

  // Runs `fn` once, on the first key added (at once if one already was),
  // under the queue's lock: QueueWorkers start their first thread only when
  // there is work, so a controller that never gets any costs no thread.
  void on_first_add(std::function<void()> fn);

  // Wakes every get() with false; later adds are ignored.
  void shutdown();
  size_t length();
  // Nothing queued and nothing being handled (delayed keys do not count).
  bool idle();

  // A worker's loop until shutdown: each key goes to `reconcile` (an
  // exception counts as an internal error); success forgets its failures,
  // an error goes to `failed` and the key comes back rate-limited.
  void run(const std::function<Status(const std::string&)>& reconcile,
           const std::function<void(const std::string&, const Status&)>& failed);

 private:
  void push_locked(const std::string& key);
  void added_locked();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;
  std::unordered_set<std::string> processing_;
  std::multimap<Clock::time_point, std::string> delayed_;
  std::unordered_map<std::string, Clock::time_point> delayed_at_;
  std::unordered_map<std::string, int> failures_;
  bool shutting_down_ = false;
  bool any_added_ = false;
  std::function<void()> first_add_;  // cleared once run
};

// The threads that run a queue (WorkQueue::run): none until the first key,
// then one, and another whenever keys wait while every one is busy, up to a
// maximum. So an idle tenant (hundreds share a machine) holds at most one
// thread per queue, none for the controllers it never used, and a burst
// still gets the concurrency it needs.
class QueueWorkers {
 public:
  using Reconcile = std::function<Status(const std::string&)>;
  using Failed = std::function<void(const std::string&, const Status&)>;

  QueueWorkers(WorkQueue& queue, Reconcile reconcile, Failed failed);
  ~QueueWorkers();
  QueueWorkers(const QueueWorkers&) = delete;
  QueueWorkers& operator=(const QueueWorkers&) = delete;

  void start(int max_workers);
  // Shuts the queue down and joins every worker. Idempotent.
  void stop();
  size_t size();

 private:
  void grow();

  WorkQueue& queue_;
  Reconcile reconcile_;
  Failed failed_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
  size_t max_ = 1;
  bool stopping_ = false;
};

}  // namespace vkube::controllers
