// The threads that run request handlers (which block: a durable write waits
// for its sync). As many run as there is work, up to a maximum, and each
// leaves after a while without any, so an idle server holds one or two
// instead of the maximum (a tenant idles most of its life, and hundreds of
// tenants share a machine). Private to the transport.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace vkube::http {

class WorkerPool {
 public:
  explicit WorkerPool(size_t max_threads,
                      std::chrono::milliseconds idle = std::chrono::seconds(30));
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Runs `fn` on a free worker, on a new one when none is free and fewer
  // than the maximum run, else as soon as one is free.
  void post(std::function<void()> fn);
  // Runs what is queued, then ends every worker. Later posts run nothing.
  void join();
  size_t threads();

 private:
  void work();
  // Joins the workers that left (outside the lock: they take it to leave).
  void reap();

  const size_t max_;
  const std::chrono::milliseconds idle_;
  std::mutex mu_;
  std::condition_variable work_cv_, exit_cv_;
  std::deque<std::function<void()>> queue_;
  std::unordered_map<std::thread::id, std::thread> running_;
  std::vector<std::thread> exited_;
  size_t waiting_ = 0;  // workers waiting for work
  bool joining_ = false;
};

}  // namespace vkube::http
