#include <rocksdb/db.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "storage/conformance.h"
#include "support/temp_dir.h"
#include "vkube/storage/rocksdb_backend.h"

namespace vkube::storage {
namespace {

using namespace std::chrono_literals;
using vkube::testing::TempDir;

std::unique_ptr<Backend> open_at(const std::string& dir, RocksDbOptions o = {}) {
  o.path = dir;
  auto b = open_rocksdb(o);
  INFO(b.status().to_string());
  REQUIRE(b.is_ok());
  return std::move(b).value();
}

TEST_CASE("RocksDB backend passes the storage conformance suite", "[storage]") {
  testing::run_conformance([](const std::string& dir) { return open_at(dir); });
}

TEST_CASE("RocksDB backend replays watches from the durable event log", "[storage]") {
  // No in-memory event history: every watch from the past reads the log.
  testing::run_conformance([](const std::string& dir) {
    RocksDbOptions o;
    o.watch_history_events = 0;
    return open_at(dir, o);
  });
}

TEST_CASE("a watcher that falls behind is ended alone", "[storage]") {
  TempDir dir;
  RocksDbOptions o;
  o.watch_buffer_events = 5;
  auto b = open_at(dir.path(), o);
  auto slow = b->watch("/q/", 0);
  auto fast = b->watch("/q/", 0);
  REQUIRE(slow.is_ok());
  REQUIRE(fast.is_ok());
  std::vector<EventPtr> got;
  for (int i = 0; i < 20; ++i) {
    REQUIRE(b->create("/q/" + std::to_string(i), "v").is_ok());
    REQUIRE((*fast)->poll(&got, 0ms).is_ok());  // keeps up
  }
  CHECK(got.size() == 20);
  std::vector<EventPtr> none;
  Status s = (*slow)->poll(&none, 0ms);
  CHECK(s.code() == Code::kExpired);
  CHECK_THAT(s.message(), Catch::Contains("re-list"));
  // Writes go on after the slow watcher was ended.
  CHECK(b->create("/q/after", "v").is_ok());
}

TEST_CASE("watchers get the events under their prefix, whatever others watch", "[storage]") {
  TempDir dir;
  auto b = open_at(dir.path());
  // Nested, equal, unrelated and not-at-a-slash prefixes.
  auto all = b->watch("/", 0);
  auto pods = b->watch("/pods/", 0);
  auto team_a = b->watch("/pods/team-a/", 0);
  auto team_a_too = b->watch("/pods/team-a/", 0);
  auto team_b = b->watch("/pods/team-b/", 0);
  auto web = b->watch("/pods/team-a/web", 0);
  auto secrets = b->watch("/secrets/", 0);
  for (auto* w : {&all, &pods, &team_a, &team_a_too, &team_b, &web, &secrets}) REQUIRE(w->is_ok());
  // One watcher of a shared prefix leaves: the other stays subscribed.
  (*team_a_too)->cancel();

  REQUIRE(b->create("/pods/team-a/web-1", "v").is_ok());
  REQUIRE(b->create("/pods/team-b/db-1", "v").is_ok());
  REQUIRE(b->create("/pods/team-a/api-1", "v").is_ok());
  REQUIRE(b->create("/secrets/team-a/s", "v").is_ok());

  auto keys = [](std::unique_ptr<Watch>& w) {
    std::vector<EventPtr> got;
    Status s = w->poll(&got, 0ms);
    std::vector<std::string> out;
    for (const EventPtr& e : got) out.push_back(e->kv.key);
    if (!s.is_ok()) out.push_back("end: " + s.message());
    return out;
  };
  using V = std::vector<std::string>;
  CHECK(keys(*all) ==
        V{"/pods/team-a/web-1", "/pods/team-b/db-1", "/pods/team-a/api-1", "/secrets/team-a/s"});
  CHECK(keys(*pods) == V{"/pods/team-a/web-1", "/pods/team-b/db-1", "/pods/team-a/api-1"});
  CHECK(keys(*team_a) == V{"/pods/team-a/web-1", "/pods/team-a/api-1"});
  CHECK(keys(*team_b) == V{"/pods/team-b/db-1"});
  CHECK(keys(*web) == V{"/pods/team-a/web-1"});
  CHECK(keys(*secrets) == V{"/secrets/team-a/s"});
  CHECK(keys(*team_a_too) == V{"end: watch cancelled"});

  // A watcher gone (destroyed) leaves the others of its prefix working.
  team_a->reset();
  auto team_a_again = b->watch("/pods/team-a/", 0);
  REQUIRE(team_a_again.is_ok());
  REQUIRE(b->create("/pods/team-a/api-2", "v").is_ok());
  CHECK(keys(*team_a_again) == V{"/pods/team-a/api-2"});
  CHECK(keys(*pods) == V{"/pods/team-a/api-2"});
}

TEST_CASE("a store whose creation was cut short is created on the next start", "[storage]") {
  TempDir dir;
  {
    // The database and its families exist, but not yet the format marker.
    rocksdb::Options ro;
    ro.create_if_missing = true;
    rocksdb::DB* db = nullptr;
    REQUIRE(rocksdb::DB::Open(ro, dir.path(), &db).ok());
    delete db;
  }
  {
    auto b = open_at(dir.path());
    CHECK(b->create("/registry/configmaps/default/a", "1").is_ok());
  }
  auto again = open_at(dir.path());
  auto got = again->get("/registry/configmaps/default/a");
  REQUIRE(got.is_ok());
  CHECK(got->value == "1");
}

TEST_CASE("stores that cannot be opened give clear errors", "[storage]") {
  TempDir dir;
  SECTION("a directory holding other files") {
    std::ofstream(dir.sub("notes.txt")) << "hello";
    RocksDbOptions o;
    o.path = dir.path();
    auto b = open_rocksdb(o);
    CHECK(b.status().code() == Code::kInvalid);
    CHECK_THAT(b.status().message(), Catch::Contains("holds no vkube store"));
  }
  SECTION("a store already open elsewhere") {
    auto first = open_at(dir.path());
    RocksDbOptions o;
    o.path = dir.path();
    auto second = open_rocksdb(o);
    CHECK(second.status().code() == Code::kUnavailable);
    CHECK_THAT(second.status().message(), Catch::Contains("in use by another process"));
  }
  SECTION("damaged files") {
    { open_at(dir.path())->create("/a", "b").value(); }
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      if (e.path().filename().string().starts_with("MANIFEST"))
        std::ofstream(e.path(), std::ios::trunc) << "garbage, not a manifest";
    }
    RocksDbOptions o;
    o.path = dir.path();
    auto b = open_rocksdb(o);
    REQUIRE_FALSE(b.is_ok());
    CHECK((b.status().code() == Code::kCorruption || b.status().code() == Code::kInternal));
  }
  SECTION("a RocksDB database of someone else's, with data") {
    {
      rocksdb::Options ro;
      ro.create_if_missing = true;
      rocksdb::DB* db = nullptr;
      REQUIRE(rocksdb::DB::Open(ro, dir.path(), &db).ok());
      REQUIRE(db->Put(rocksdb::WriteOptions(), "k", "v").ok());
      delete db;
    }
    RocksDbOptions o;
    o.path = dir.path();
    auto b = open_rocksdb(o);
    CHECK(b.status().code() == Code::kInvalid);
    CHECK_THAT(b.status().message(), Catch::Contains("no format marker"));
  }
  SECTION("a missing store when creation is off") {
    RocksDbOptions o;
    o.path = dir.sub("nothing");
    o.create_if_missing = false;
    CHECK(open_rocksdb(o).status().code() == Code::kNotFound);
  }
}

TEST_CASE("online backup and restore keep data, history and revisions", "[storage]") {
  TempDir dir;
  auto b = open_at(dir.sub("live"));
  for (int i = 0; i < 200; ++i)
    REQUIRE(b->create("/b/" + std::to_string(i), "v" + std::to_string(i)).is_ok());
  REQUIRE(b->update("/b/1", "changed", 0).is_ok());

  // Writers keep going during the backup.
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) (void)b->create("/during/" + std::to_string(i), "x");
  });
  SECTION("in-process") {
    auto rev = backup_backend(*b, dir.sub("backup"));
    stop = true;
    writer.join();
    REQUIRE(rev.is_ok());
    auto restored_rev = restore_store(dir.sub("backup"), dir.sub("restored"));
    REQUIRE(restored_rev.is_ok());
    CHECK(*restored_rev == *rev);
    auto r = open_at(dir.sub("restored"));
    CHECK(r->current_revision() == *rev);
    CHECK(r->get("/b/1").value().value == "changed");
    CHECK(r->get("/b/1", 2).value().value == "v1");  // history came along
    CHECK(*r->count("/b/") == 200);
    // The count of keys written during the backup matches its revision.
    CHECK(*r->count("/during/") == *rev - 201);
  }
  SECTION("from a store held open by a running process") {
    auto rev = backup_store(dir.sub("live"), dir.sub("backup"));
    stop = true;
    writer.join();
    INFO(rev.status().to_string());
    REQUIRE(rev.is_ok());
    CHECK(*rev >= 201);
    auto r = open_at(dir.sub("backup"));
    CHECK(*r->count("/b/") == 200);
    CHECK(*r->count("/during/") == *rev - 201);
  }
  SECTION("restore refuses to overwrite a store") {
    stop = true;
    writer.join();
    REQUIRE(backup_backend(*b, dir.sub("backup")).is_ok());
    CHECK(restore_store(dir.sub("backup"), dir.sub("live")).status().code() ==
          Code::kAlreadyExists);
    CHECK(restore_store(dir.sub("nope"), dir.sub("new")).status().code() == Code::kNotFound);
  }
}

// Counts create_async acknowledgements.
struct Acks {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Result<KeyValue>> got;
  void add(Result<KeyValue> r) {
    std::lock_guard lock(mu);
    got.push_back(std::move(r));
    cv.notify_all();
  }
  bool wait_for(size_t n, std::chrono::seconds limit = 20s) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, limit, [&] { return got.size() >= n; });
  }
};

TEST_CASE("create_async acknowledges durable creates among waiting writers", "[storage]") {
  TempDir dir;
  Acks acks;
  std::atomic<int> sync_failures{0};
  constexpr int kThreads = 3, kEach = 150;
  {
    auto b = open_at(dir.path());
    auto w = b->watch("/", 0);
    REQUIRE(w.is_ok());
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          std::string n = std::to_string(t) + "-" + std::to_string(i);
          b->create_async("/async/" + n, "a" + n,
                          [&](Result<KeyValue> r) { acks.add(std::move(r)); });
          auto kv = b->create("/sync/" + n, "s" + n);
          if (!kv.is_ok() || !b->update("/sync/" + n, "u" + n, kv->mod_revision).is_ok())
            ++sync_failures;
        }
      });
    }
    for (auto& t : threads) t.join();
    CHECK(sync_failures.load() == 0);
    REQUIRE(acks.wait_for(kThreads * kEach));
    std::set<Revision> revs;
    for (const auto& r : acks.got) {
      REQUIRE(r.is_ok());
      CHECK(r->value == "a" + r->key.substr(7));
      CHECK(r->mod_revision <= b->current_revision());
      revs.insert(r->mod_revision);
    }
    CHECK(revs.size() == acks.got.size());
    // Watchers saw every write once, in revision order.
    std::vector<EventPtr> events;
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (events.size() < 3u * kThreads * kEach && std::chrono::steady_clock::now() < deadline)
      REQUIRE((*w)->poll(&events, 100ms).is_ok());
    REQUIRE(events.size() == 3u * kThreads * kEach);
    for (size_t i = 1; i < events.size(); ++i)
      CHECK(events[i]->kv.mod_revision == events[i - 1]->kv.mod_revision + 1);
    // A key that exists, or a bad one, is refused without a commit.
    Acks refused;
    b->create_async("/async/0-0", "again", [&](Result<KeyValue> r) { refused.add(std::move(r)); });
    b->create_async("", "v", [&](Result<KeyValue> r) { refused.add(std::move(r)); });
    REQUIRE(refused.wait_for(2));
    CHECK(refused.got[0].status().code() == Code::kAlreadyExists);
    CHECK(refused.got[1].status().code() == Code::kInvalid);
  }
  // What was acknowledged survives a restart.
  auto reopened = open_at(dir.path());
  for (const auto& r : acks.got) {
    auto kv = reopened->get(r->key, 0);
    REQUIRE(kv.is_ok());
    CHECK(kv->value == r->value);
  }
}

TEST_CASE("a waiting writer is answered while async creates keep coming", "[storage]") {
  // The async writes never stop on their own: a waiting writer that led a
  // group must hand the lead on rather than commit them all.
  TempDir dir;
  auto b = open_at(dir.path());
  std::atomic<bool> stop{false};
  std::atomic<int> in_flight{0}, done{0}, failed{0};
  std::thread producer([&] {
    auto give_up = std::chrono::steady_clock::now() + 30s;
    for (int i = 0; !stop && std::chrono::steady_clock::now() < give_up; ++i) {
      while (in_flight.load() > 32 && !stop) std::this_thread::yield();
      ++in_flight;
      b->create_async("/flood/" + std::to_string(i), "v", [&](Result<KeyValue> r) {
        if (!r.is_ok()) ++failed;
        --in_flight;
        ++done;
      });
    }
  });
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) REQUIRE(b->create("/sync/" + std::to_string(i), "v").is_ok());
  auto took = std::chrono::steady_clock::now() - start;
  stop = true;
  producer.join();
  CHECK(took < 20s);
  CHECK(done.load() > 0);
  CHECK(failed.load() == 0);
  while (in_flight.load() > 0) std::this_thread::sleep_for(1ms);
}

}  // namespace
}  // namespace vkube::storage
