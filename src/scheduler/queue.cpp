#include "queue.h"

#include <algorithm>

namespace vkube::scheduler {

void SchedulingQueue::push_locked(const std::string& key, int32_t priority) {
  first_seen_.try_emplace(key, Clock::now());
  if (in_active_.count(key)) return;
  Entry e{-static_cast<int64_t>(priority), seq_++, key};
  active_.insert(e);
  in_active_.emplace(key, std::move(e));
  cv_.notify_one();
}

void SchedulingQueue::add(const std::string& key, int32_t priority) {
  std::lock_guard lock(mu_);
  if (shutdown_) return;
  unschedulable_.erase(key);
  for (auto it = backoff_.begin(); it != backoff_.end(); ++it)
    if (it->second.first == key) {
      backoff_.erase(it);
      break;
    }
  push_locked(key, priority);
}

void SchedulingQueue::remove(const std::string& key) {
  std::lock_guard lock(mu_);
  if (auto it = in_active_.find(key); it != in_active_.end()) {
    active_.erase(it->second);
    in_active_.erase(it);
  }
  unschedulable_.erase(key);
  for (auto it = backoff_.begin(); it != backoff_.end(); ++it)
    if (it->second.first == key) {
      backoff_.erase(it);
      break;
    }
  attempts_.erase(key);
  first_seen_.erase(key);
}

void SchedulingQueue::unschedulable(const std::string& key, int32_t priority) {
  std::lock_guard lock(mu_);
  if (shutdown_ || in_active_.count(key)) return;  // changed meanwhile: stays active
  unschedulable_[key] = {Clock::now(), priority};
}

void SchedulingQueue::backoff(const std::string& key, int32_t priority) {
  std::lock_guard lock(mu_);
  if (shutdown_ || in_active_.count(key)) return;
  int n = ++attempts_[key];
  auto delay = std::min(std::chrono::milliseconds(10000),
                        std::chrono::milliseconds(1000) * (1 << std::min(n - 1, 4)));
  backoff_.emplace(Clock::now() + delay, std::make_pair(key, priority));
  cv_.notify_one();
}

void SchedulingQueue::move_all_to_active() {
  std::lock_guard lock(mu_);
  if (unschedulable_.empty()) return;
  for (auto& [key, v] : unschedulable_) push_locked(key, v.second);
  unschedulable_.clear();
}

void SchedulingQueue::promote_due_locked(Clock::time_point now) {
  while (!backoff_.empty() && backoff_.begin()->first <= now) {
    auto [key, priority] = backoff_.begin()->second;
    backoff_.erase(backoff_.begin());
    push_locked(key, priority);
  }
  for (auto it = unschedulable_.begin(); it != unschedulable_.end();) {
    if (now - it->second.first >= flush_after_) {
      push_locked(it->first, it->second.second);
      it = unschedulable_.erase(it);
    } else {
      ++it;
    }
  }
}

bool SchedulingQueue::pop(std::string* key) {
  std::unique_lock lock(mu_);
  while (true) {
    if (shutdown_) return false;
    promote_due_locked(Clock::now());
    if (!active_.empty()) {
      Entry e = *active_.begin();
      active_.erase(active_.begin());
      *key = std::get<2>(e);
      in_active_.erase(*key);
      return true;
    }
    // Wake for the next backoff expiry, or to flush unschedulable pods.
    auto wake = Clock::now() + std::min(flush_after_, std::chrono::milliseconds(1000));
    if (!backoff_.empty()) wake = std::min(wake, backoff_.begin()->first);
    cv_.wait_until(lock, wake);
  }
}

void SchedulingQueue::shutdown() {
  std::lock_guard lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

size_t SchedulingQueue::active() {
  std::lock_guard lock(mu_);
  return active_.size();
}
size_t SchedulingQueue::waiting_unschedulable() {
  std::lock_guard lock(mu_);
  return unschedulable_.size();
}
size_t SchedulingQueue::waiting_backoff() {
  std::lock_guard lock(mu_);
  return backoff_.size();
}

SchedulingQueue::Clock::time_point SchedulingQueue::first_seen(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = first_seen_.find(key);
  return it == first_seen_.end() ? Clock::now() : it->second;
}

void SchedulingQueue::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  attempts_.erase(key);
  first_seen_.erase(key);
}

bool SchedulingQueue::idle() {
  std::lock_guard lock(mu_);
  return active_.empty() && backoff_.empty();
}

}  // namespace vkube::scheduler
