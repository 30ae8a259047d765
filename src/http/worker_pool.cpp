#include "worker_pool.h"

#include <algorithm>

namespace vkube::http {

WorkerPool::WorkerPool(size_t max_threads, std::chrono::milliseconds idle)
    : max_(std::max<size_t>(1, max_threads)), idle_(idle) {}

WorkerPool::~WorkerPool() {
  join();
}

void WorkerPool::post(std::function<void()> fn) {
  {
    std::unique_lock lock(mu_);
    if (joining_) return;
    queue_.push_back(std::move(fn));
    if (waiting_ >= queue_.size()) {
      work_cv_.notify_one();
    } else if (running_.size() < max_) {
      std::thread t([this] { work(); });
      running_.emplace(t.get_id(), std::move(t));
    }
  }
  reap();
}

void WorkerPool::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    while (queue_.empty()) {
      if (joining_) break;
      ++waiting_;
      bool got = work_cv_.wait_for(lock, idle_, [&] { return !queue_.empty() || joining_; });
      --waiting_;
      if (!got) break;  // idle long enough: leave
    }
    if (queue_.empty()) break;
    std::function<void()> fn = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
  auto self = running_.find(std::this_thread::get_id());
  if (self != running_.end()) {
    exited_.push_back(std::move(self->second));
    running_.erase(self);
  }
  exit_cv_.notify_all();
}

void WorkerPool::reap() {
  std::vector<std::thread> done;
  {
    std::lock_guard lock(mu_);
    done.swap(exited_);
  }
  for (auto& t : done) t.join();
}

void WorkerPool::join() {
  {
    std::unique_lock lock(mu_);
    joining_ = true;
    work_cv_.notify_all();
    // Workers run what is queued first; with none left, nothing would.
    if (running_.empty()) queue_.clear();
    exit_cv_.wait(lock, [&] { return running_.empty(); });
  }
  reap();
}

size_t WorkerPool::threads() {
  std::lock_guard lock(mu_);
  return running_.size();
}

}  // namespace vkube::http
