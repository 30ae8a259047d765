#include <rocksdb/db.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
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

}  // namespace
}  // namespace vkube::storage
