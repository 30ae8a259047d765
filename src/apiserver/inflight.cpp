#include "inflight.h"

#include <condition_variable>
#include <thread>

#include "metrics.h"
#include "vkube/common/memory.h"

namespace vkube::apiserver {

namespace {

// Distinct LIST keys remembered; the table starts over beyond it, so that
// clients listing ever new paths cannot grow it.
constexpr size_t kMaxListKeys = 4096;

}  // namespace

// Trims the heap once requests stop: a thread that looks at the count of
// admitted requests every `idle` and trims after a look that found it
// moved and one that found it still. glibc's malloc keeps what a burst
// freed in its arenas (one per thread that allocated, up to 8 per core),
// and trims only their tops on its own.
class IdleTrim {
 public:
  IdleTrim(const std::atomic<uint64_t>& activity, std::chrono::milliseconds idle)
      : thread_([this, &activity, idle] { run(activity, idle); }) {}
  ~IdleTrim() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void run(const std::atomic<uint64_t>& activity, std::chrono::milliseconds idle) {
    uint64_t seen = activity.load();
    bool pending = false;
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, idle, [&] { return stop_; })) {
      const uint64_t now = activity.load();
      if (now != seen) {
        seen = now;
        pending = true;
      } else if (pending) {
        pending = false;
        lock.unlock();
        trim_heap();
        lock.lock();
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: it uses the members above
};

InflightLease::InflightLease(std::shared_ptr<InflightLimiter> limiter, bool mutating,
                             size_t reserved)
    : limiter_(std::move(limiter)), mutating_(mutating), held_(reserved) {}

InflightLease::~InflightLease() {
  limiter_->release(mutating_, held_);
}

void InflightLease::settle(size_t bytes) {
  if (mutating_) return;  // only reads are held to the byte budget
  limiter_->resettle(held_, bytes);
  held_ = bytes;
}

InflightLimiter::InflightLimiter(InflightLimits limits, Metrics* metrics)
    : limits_(limits), metrics_(metrics) {
  if (limits_.trim_when_idle.count() > 0)
    idle_trim_ = std::make_unique<IdleTrim>(admitted_, limits_.trim_when_idle);
}

InflightLimiter::~InflightLimiter() = default;

std::shared_ptr<InflightLease> InflightLimiter::admit(bool mutating, size_t reserve) {
  std::atomic<size_t>& count = mutating ? mutating_ : readonly_;
  const size_t limit = mutating ? limits_.max_mutating : limits_.max_readonly;
  if (count.fetch_add(1) >= limit && limit != 0) {
    count.fetch_sub(1);
    return nullptr;
  }
  if (mutating) {
    reserve = 0;
  } else {
    size_t held = read_bytes_.load();
    do {
      // Over the budget only when something else holds bytes: a single
      // answer larger than the whole budget is still served, alone.
      if (held > 0 && held + reserve > limits_.max_read_bytes && limits_.max_read_bytes != 0) {
        count.fetch_sub(1);
        return nullptr;
      }
    } while (!read_bytes_.compare_exchange_weak(held, held + reserve));
  }
  gauge(1);
  admitted_.fetch_add(1, std::memory_order_relaxed);
  return std::make_shared<InflightLease>(shared_from_this(), mutating, reserve);
}

void InflightLimiter::release(bool mutating, size_t held) {
  if (!mutating) read_bytes_.fetch_sub(held);
  (mutating ? mutating_ : readonly_).fetch_sub(1);
  gauge(-1);
}

void InflightLimiter::resettle(size_t from, size_t to) {
  if (to >= from) {
    read_bytes_.fetch_add(to - from);
  } else {
    read_bytes_.fetch_sub(from - to);
  }
}

size_t InflightLimiter::list_estimate(const std::string& key) const {
  {
    std::lock_guard lock(mu_);
    auto it = list_sizes_.find(key);
    if (it != list_sizes_.end()) return it->second;
  }
  // A LIST never answered before may be of any size: a quarter of the
  // budget each, so a burst of them cannot take much more than the budget
  // whatever they turn out to hold. The first answer sets the estimate.
  return limits_.max_read_bytes / 4;
}

void InflightLimiter::learn_list(const std::string& key, size_t body_bytes) {
  std::lock_guard lock(mu_);
  if (list_sizes_.size() >= kMaxListKeys && !list_sizes_.contains(key)) list_sizes_.clear();
  list_sizes_[key] = body_bytes;
}

void InflightLimiter::gauge(int delta) {
  if (Metrics* m = metrics_.load()) m->inflight_add(delta);
}

void InflightLimiter::detach_metrics() {
  metrics_ = nullptr;
}

}  // namespace vkube::apiserver
