// The in-flight limit of the handler chain: kube-apiserver's max-in-flight
// filter (a count of read-only and of mutating requests, 429 beyond it), and
// a budget on the bytes that admitted reads hold in memory, which the count
// alone does not bound: 400 LISTs of a few thousand objects each hold
// gigabytes while their answers are built and sent.
//
// A request holds its slot and its bytes until its answer has been sent,
// not only until its handler returns (Go writes the response inside the
// handler, so kube's slot covers that time too): the lease travels in
// http::Response::lease and the transport drops it once the body is out.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace vkube::apiserver {

class Metrics;

// 0 is no limit, as for kube-apiserver's flags.
struct InflightLimits {
  size_t max_readonly = 400;
  size_t max_mutating = 200;
  // Bytes that admitted read-only requests may hold (a LIST's estimate while
  // it is built, then its answer's body until sent). A read that would go
  // beyond it gets 429, except when nothing is held: one request of any
  // size is always served.
  size_t max_read_bytes = 128u << 20;
  // Once requests have come and then none for this long, the heap's free
  // memory goes back to the system (trim_heap): what a burst of LISTs or
  // creates left free in malloc's arenas does not stay resident while the
  // server idles. 0: never.
  std::chrono::milliseconds trim_when_idle{1000};
};

class IdleTrim;

class InflightLimiter;

// One admitted request. Releasing it (the last copy going) gives its slot
// and its bytes back. Thread-safe.
class InflightLease {
 public:
  InflightLease(std::shared_ptr<InflightLimiter> limiter, bool mutating, size_t reserved);
  ~InflightLease();
  InflightLease(const InflightLease&) = delete;
  InflightLease& operator=(const InflightLease&) = delete;

  // The answer is built: from now on the request holds `bytes` (its body)
  // instead of what it reserved. Call at most once.
  void settle(size_t bytes);

 private:
  std::shared_ptr<InflightLimiter> limiter_;
  bool mutating_;
  size_t held_;
};

class InflightLimiter : public std::enable_shared_from_this<InflightLimiter> {
 public:
  // `metrics` (may be null) gets the in-flight gauge; detach_metrics() before
  // it goes.
  InflightLimiter(InflightLimits limits, Metrics* metrics);
  ~InflightLimiter();

  // A slot for one request that reserves `reserve` bytes (reads only), or
  // null when a limit is reached: answer 429. Thread-safe.
  std::shared_ptr<InflightLease> admit(bool mutating, size_t reserve);

  // What a LIST of `key` (path and page size) is expected to hold while it
  // is built: the body its last answer had (a LIST writes its answer from
  // the watch cache's items, which it shares rather than copies, and a
  // Table row by row), or a quarter of the byte budget before the first.
  // Thread-safe.
  size_t list_estimate(const std::string& key) const;
  // Notes the body size of a LIST of `key`. Thread-safe.
  void learn_list(const std::string& key, size_t body_bytes);

  size_t read_bytes() const { return read_bytes_.load(); }
  void detach_metrics();

 private:
  friend class InflightLease;
  void release(bool mutating, size_t held);
  void resettle(size_t from, size_t to);
  void gauge(int delta);

  const InflightLimits limits_;
  std::atomic<size_t> readonly_{0};
  std::atomic<size_t> mutating_{0};
  std::atomic<size_t> read_bytes_{0};
  std::atomic<uint64_t> admitted_{0};  // requests admitted so far
  // Null once detached; a lease let go after that (a response that outlived
  // the server) no longer touches it.
  std::atomic<Metrics*> metrics_;
  mutable std::mutex mu_;  // guards list_sizes_
  std::unordered_map<std::string, size_t> list_sizes_;
  std::unique_ptr<IdleTrim> idle_trim_;  // last: its thread reads admitted_
};

}  // namespace vkube::apiserver
