#include "vkube/controllers/work_queue.h"

#include <algorithm>
#include <utility>

namespace vkube::controllers {

void WorkQueue::added_locked() {
  if (shutting_down_) return;
  any_added_ = true;
  if (first_add_) std::exchange(first_add_, nullptr)();
}

void WorkQueue::on_first_add(std::function<void()> fn) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  first_add_ = std::move(fn);
  if (any_added_) std::exchange(first_add_, nullptr)();
}

void WorkQueue::push_locked(const std::string& key) {
  added_locked();
  if (shutting_down_ || dirty_.count(key)) return;
  dirty_.insert(key);
  if (processing_.count(key)) return;  // queued again by done()
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::add(const std::string& key) {
  std::lock_guard lock(mu_);
  push_locked(key);
}

void WorkQueue::add_after(const std::string& key, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) return add(key);
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  auto at = Clock::now() + delay;
  auto it = delayed_at_.find(key);
  if (it != delayed_at_.end()) {
    if (it->second <= at) return;
    auto range = delayed_.equal_range(it->second);
    for (auto d = range.first; d != range.second; ++d)
      if (d->second == key) {
        delayed_.erase(d);
        break;
      }
  }
  added_locked();  // a worker must wait for it
  delayed_at_[key] = at;
  delayed_.emplace(at, key);
  cv_.notify_all();  // a waiting worker may need to wake earlier
}

void WorkQueue::add_rate_limited(const std::string& key) {
  int n;
  {
    std::lock_guard lock(mu_);
    n = failures_[key]++;
  }
  double ms = 5.0 * static_cast<double>(1ull << std::min(n, 20));
  add_after(key, std::chrono::milliseconds(static_cast<int64_t>(std::min(ms, 60000.0))));
}

void WorkQueue::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int WorkQueue::retries(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

bool WorkQueue::get(std::string* key) {
  std::unique_lock lock(mu_);
  while (true) {
    if (shutting_down_) return false;
    auto now = Clock::now();
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      std::string k = delayed_.begin()->second;
      delayed_.erase(delayed_.begin());
      delayed_at_.erase(k);
      push_locked(k);
    }
    if (!queue_.empty()) break;
    if (delayed_.empty())
      cv_.wait(lock);
    else
      cv_.wait_until(lock, delayed_.begin()->first);
  }
  *key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(*key);
  dirty_.erase(*key);
  return true;
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) && !shutting_down_) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::shutdown() {
  std::lock_guard lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

size_t WorkQueue::length() {
  std::lock_guard lock(mu_);
  return queue_.size();
}

bool WorkQueue::idle() {
  std::lock_guard lock(mu_);
  return queue_.empty() && processing_.empty();
}

void WorkQueue::run(const std::function<Status(const std::string&)>& reconcile,
                    const std::function<void(const std::string&, const Status&)>& failed) {
  std::string key;
  while (get(&key)) {
    Status s;
    try {
      s = reconcile(key);
    } catch (const std::exception& e) {
      s = Status::internal(std::string("reconcile threw: ") + e.what());
    }
    if (s.is_ok()) {
      forget(key);
    } else {
      failed(key, s);
      add_rate_limited(key);
    }
    done(key);
  }
}

QueueWorkers::QueueWorkers(WorkQueue& queue, Reconcile reconcile, Failed failed)
    : queue_(queue), reconcile_(std::move(reconcile)), failed_(std::move(failed)) {}

QueueWorkers::~QueueWorkers() {
  stop();
}

void QueueWorkers::start(int max_workers) {
  {
    std::lock_guard lock(mu_);
    max_ = static_cast<size_t>(std::max(1, max_workers));
  }
  queue_.on_first_add([this] { grow(); });
}

void QueueWorkers::grow() {
  std::lock_guard lock(mu_);
  if (stopping_ || threads_.size() >= max_) return;
  threads_.emplace_back([this] {
    queue_.run(
        [this](const std::string& key) {
          // Keys wait although a worker just took one: the others are busy.
          if (queue_.length() > 0) grow();
          return reconcile_(key);
        },
        failed_);
  });
}

void QueueWorkers::stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  queue_.shutdown();
  for (auto& t : threads)
    if (t.joinable()) t.join();
}

size_t QueueWorkers::size() {
  std::lock_guard lock(mu_);
  return threads_.size();
}

}  // namespace vkube::controllers
