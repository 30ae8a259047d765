// The controllers' work queue: deduplication, no concurrent handling of one
// key, delays and backoff.
#include <atomic>

#include <catch2/catch.hpp>

#include <thread>

#include "vkube/controllers/work_queue.h"

namespace vkube::controllers {
namespace {

using namespace std::chrono_literals;

TEST_CASE("a key queued twice before a worker takes it is handled once", "[controllers]") {
  WorkQueue q;
  q.add("a");
  q.add("b");
  q.add("a");
  CHECK(q.length() == 2);
  std::string k;
  REQUIRE(q.get(&k));
  CHECK(k == "a");
  q.done(k);
  REQUIRE(q.get(&k));
  CHECK(k == "b");
  q.done(k);
  CHECK(q.idle());
}

TEST_CASE("a key added while it is being handled comes back after done", "[controllers]") {
  WorkQueue q;
  q.add("a");
  std::string k;
  REQUIRE(q.get(&k));
  q.add("a");
  CHECK(q.length() == 0);  // not handed to a second worker meanwhile
  q.done(k);
  CHECK(q.length() == 1);
}

TEST_CASE("delayed keys wait; the earliest delay of a key wins", "[controllers]") {
  WorkQueue q;
  auto t0 = std::chrono::steady_clock::now();
  q.add_after("late", 300ms);
  q.add_after("late", 50ms);
  std::string k;
  REQUIRE(q.get(&k));
  auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(k == "late");
  CHECK(waited >= 45ms);
  CHECK(waited < 280ms);
  q.done(k);
}

TEST_CASE("shutdown wakes blocked workers", "[controllers]") {
  WorkQueue q;
  bool got = true;
  std::thread t([&] {
    std::string k;
    got = q.get(&k);
  });
  std::this_thread::sleep_for(20ms);
  q.shutdown();
  t.join();
  CHECK_FALSE(got);
}

TEST_CASE("failures back off and forget resets them", "[controllers]") {
  WorkQueue q;
  q.add_rate_limited("x");
  q.add_rate_limited("x");
  CHECK(q.retries("x") == 2);
  q.forget("x");
  CHECK(q.retries("x") == 0);
}

// A queue whose workers count the keys they handle.
struct CountingWorkers {
  WorkQueue q;
  std::atomic<int> handled{0};
  QueueWorkers workers{q,
                       [this](const std::string&) {
                         ++handled;
                         return Status::ok();
                       },
                       [](const std::string&, const Status&) {}};

  bool wait_for(int n) {
    for (int i = 0; i < 200 && handled < n; ++i) std::this_thread::sleep_for(5ms);
    return handled == n;
  }
};

TEST_CASE("queue workers start a thread only once there is work", "[controllers]") {
  CountingWorkers c;
  c.workers.start(4);
  std::this_thread::sleep_for(20ms);
  CHECK(c.workers.size() == 0);  // an unused controller costs no thread
  c.q.add_after("later", 30ms);  // a delayed key needs a worker to wait for it
  CHECK(c.workers.size() == 1);
  c.q.add("now");
  CHECK(c.wait_for(2));
  CHECK(c.workers.size() == 1);
  c.workers.stop();
  c.q.add("after stop");  // ignored, and starts nothing
  CHECK(c.workers.size() == 0);
}

TEST_CASE("queue workers started after keys were added handle them", "[controllers]") {
  CountingWorkers c;
  c.q.add("early");
  c.workers.start(2);
  CHECK(c.wait_for(1));
}

}  // namespace
}  // namespace vkube::controllers
