#include "controller.h"

#include <condition_variable>
#include <deque>
#include <mutex>

#include "vkube/common/log.h"
#include "vkube/controllers/write_pool.h"

namespace vkube::controllers {

// ---- WritePool

WritePool::WritePool(size_t threads) : size_(threads) {}

WritePool::~WritePool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  for (auto& t : threads_) t.join();
}

void WritePool::submit(std::function<void()> task) {
  std::lock_guard lock(mu_);
  // Threads start on first use: a tenant that never bulk-writes never has them.
  if (threads_.empty())
    for (size_t i = 0; i < size_; ++i) threads_.emplace_back([this] { run(); });
  tasks_.push_back(std::move(task));
  cv_.notify_one();
}

void WritePool::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

void WritePool::parallel(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (n == 1) return fn(0);
  struct Shared {
    std::atomic<size_t> next{0};
    std::mutex mu;
    std::condition_variable cv;
    size_t running = 0;
  };
  auto shared = std::make_shared<Shared>();
  auto runner = [shared, n, &fn] {
    for (size_t i; (i = shared->next.fetch_add(1)) < n;) fn(i);
  };
  size_t helpers = std::min(n - 1, size());
  shared->running = helpers;
  for (size_t h = 0; h < helpers; ++h) {
    submit([shared, runner] {
      runner();
      std::lock_guard lock(shared->mu);
      if (--shared->running == 0) shared->cv.notify_all();
    });
  }
  runner();
  std::unique_lock lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->running == 0; });
}

void Context::parallel(size_t n, const std::function<void(size_t)>& fn) {
  pool.parallel(n, fn);
}

// ---- Controller

Controller::Controller(Context& ctx, std::string name)
    : ctx_(ctx),
      name_(std::move(name)),
      workers_(
          queue_, [this](const std::string& key) { return reconcile(key); },
          [this](const std::string& key, const Status& s) {
            int n = queue_.retries(key);
            if (n < 3 || n % 10 == 0)
              VKUBE_LOG(info, "reconcile failed, will retry", {"controller", name_}, {"key", key},
                        {"error", s.message()}, {"retries", n});
          }) {}

Controller::~Controller() {
  stop();
}

void Controller::start(int workers) {
  workers_.start(std::max(workers, min_workers_));
}

void Controller::stop() {
  workers_.stop();
}

bool Controller::idle() {
  return queue_.idle();
}

}  // namespace vkube::controllers
