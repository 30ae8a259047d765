// The handler threads: as many as the work needs, up to the maximum, and
// back to none after the idle time.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "worker_pool.h"

namespace vkube::http {
namespace {

using namespace std::chrono_literals;

bool eventually(const std::function<bool()>& f, std::chrono::milliseconds timeout = 5s) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return f();
}

TEST_CASE("worker pool: grows with blocked work, up to its maximum, and shrinks when idle",
          "[http]") {
  WorkerPool pool(4, 200ms);
  CHECK(pool.threads() == 0);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> started{0}, finished{0};
  for (int i = 0; i < 10; ++i)
    pool.post([&] {
      ++started;
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return release; });
      ++finished;
    });
  // Four run (the maximum); the other six wait in the queue.
  REQUIRE(eventually([&] { return started == 4; }));
  std::this_thread::sleep_for(50ms);
  CHECK(started == 4);
  CHECK(pool.threads() == 4);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  REQUIRE(eventually([&] { return finished == 10; }));
  // Idle for longer than 200 ms: every worker leaves.
  CHECK(eventually([&] { return pool.threads() == 0; }));
  // And work still runs afterwards.
  std::atomic<bool> ran{false};
  pool.post([&] { ran = true; });
  CHECK(eventually([&] { return ran.load(); }));
}

TEST_CASE("worker pool: join runs what is queued, then nothing more", "[http]") {
  std::atomic<int> ran{0};
  WorkerPool pool(1, 10s);
  for (int i = 0; i < 5; ++i)
    pool.post([&] {
      std::this_thread::sleep_for(5ms);
      ++ran;
    });
  pool.join();
  CHECK(ran == 5);
  CHECK(pool.threads() == 0);
  pool.post([&] { ++ran; });
  std::this_thread::sleep_for(20ms);
  CHECK(ran == 5);
}

}  // namespace
}  // namespace vkube::http
