// Threads the controllers' bulk writes run on (Context::parallel): many
// creates at once share WAL syncs through the store's group commit.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vkube::controllers {

class WritePool {
 public:
  explicit WritePool(size_t threads);
  ~WritePool();
  void submit(std::function<void()> task);
  // Runs fn(0) .. fn(n-1) on the pool and the calling thread; returns when
  // all are done. The caller works too, so nested or concurrent use never
  // waits on a busy pool.
  void parallel(size_t n, const std::function<void(size_t)>& fn);
  size_t size() const { return size_; }

 private:
  void run();

  size_t size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

}  // namespace vkube::controllers
