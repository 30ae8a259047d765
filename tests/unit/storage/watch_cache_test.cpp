#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "storage/conformance.h"
#include "support/temp_dir.h"
#include "vkube/storage/rocksdb_backend.h"
#include "vkube/storage/watch_cache.h"

namespace vkube::storage {
namespace {

// The cache owns its RocksDB backend here, so the conformance suite can
// restart the pair.
class CachedStore final : public Backend {
 public:
  explicit CachedStore(const std::string& dir) {
    RocksDbOptions o;
    o.path = dir;
    inner_ = std::move(open_rocksdb(o)).value();
    cache_ = std::move(make_watch_cache(*inner_)).value();
  }
  ~CachedStore() override { cache_.reset(); }
  Result<KeyValue> create(std::string_view k, std::string_view v) override { return cache_->create(k, v); }
  Result<KeyValue> update(std::string_view k, std::string_view v, Revision e) override { return cache_->update(k, v, e); }
  Result<KeyValue> remove(std::string_view k, Revision e) override { return cache_->remove(k, e); }
  Result<KeyValue> get(std::string_view k, Revision r) override { return cache_->get(k, r); }
  Result<ListResult> list(const ListOptions& o) override { return cache_->list(o); }
  Result<SharedListResult> list_shared(const ListOptions& o) override {
    return cache_->list_shared(o);
  }
  Result<int64_t> count(std::string_view p) override { return cache_->count(p); }
  Result<std::unique_ptr<Watch>> watch(std::string_view p, Revision a) override { return cache_->watch(p, a); }
  Status compact(Revision r) override { return cache_->compact(r); }
  Revision current_revision() const override { return cache_->current_revision(); }
  Revision compacted_revision() const override { return cache_->compacted_revision(); }

 private:
  std::unique_ptr<Backend> inner_;
  std::unique_ptr<Backend> cache_;
};

TEST_CASE("the watch cache passes the storage conformance suite", "[storage][cache]") {
  testing::run_conformance([](const std::string& dir) { return std::make_unique<CachedStore>(dir); });
}

// A reader told about a commit by a watch must find it in the cache: the
// informers read the cache right after an event (a stale read made the
// simulated kubelet miss a deletion, and an update based on the event 409).
TEST_CASE("reads of the watch cache never trail an event already delivered", "[storage][cache]") {
  vkube::testing::TempDir dir;
  CachedStore store(dir.sub("store"));
  auto w = store.watch("/k/", store.current_revision());
  REQUIRE(w.is_ok());
  std::atomic<bool> stop{false};
  std::atomic<int> stale{0}, seen{0};
  std::thread reader([&] {
    std::vector<EventPtr> events;
    while (!stop) {
      events.clear();
      if (!(*w)->poll(&events, std::chrono::milliseconds(5)).is_ok()) return;
      for (const EventPtr& e : events) {
        auto got = store.get(e->kv.key, 0);
        if (!got.is_ok() || got->mod_revision < e->kv.mod_revision) ++stale;
        ++seen;
      }
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&, t] {
      auto kv = store.create("/k/" + std::to_string(t), "0");
      REQUIRE(kv.is_ok());
      Revision rev = kv->mod_revision;
      for (int i = 1; i < 300; ++i) {
        auto next = store.update("/k/" + std::to_string(t), std::to_string(i), rev);
        REQUIRE(next.is_ok());
        rev = next->mod_revision;
      }
    });
  for (auto& t : writers) t.join();
  for (int i = 0; i < 500 && seen.load() < 1200; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(seen.load() == 1200);
  stop = true;
  reader.join();
  CHECK(stale.load() == 0);
}

// A watcher's notifier runs on the committing thread; one that reads its
// watch there (and so catches the cache up) must not wait for the cache's
// own delivery, which that same thread makes.
TEST_CASE("a notifier reading its watch inline does not stall commits", "[storage][cache]") {
  vkube::testing::TempDir dir;
  CachedStore store(dir.sub("store"));
  auto w = store.watch("/n/", store.current_revision());
  REQUIRE(w.is_ok());
  Watch* watch = w->get();
  std::atomic<int> delivered{0};
  watch->set_notifier([&] {
    std::vector<EventPtr> events;
    (void)watch->poll(&events, std::chrono::milliseconds(0));
    delivered += static_cast<int>(events.size());
  });
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) REQUIRE(store.create("/n/" + std::to_string(i), "v").is_ok());
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took < std::chrono::seconds(2));
  CHECK(delivered.load() == 20);
}

// LISTs read the cache's items in place: what they were handed stays as it
// was while writes go on, and pages and revisions are list()'s.
TEST_CASE("a shared list is a snapshot that later writes leave alone", "[storage][cache]") {
  vkube::testing::TempDir dir;
  CachedStore store(dir.sub("store"));
  for (int i = 0; i < 5; ++i) REQUIRE(store.create("/s/" + std::to_string(i), "v0").is_ok());
  ListOptions o;
  o.prefix = "/s/";
  auto shared = store.list_shared(o);
  auto copied = store.list(o);
  REQUIRE(shared.is_ok());
  REQUIRE(copied.is_ok());
  REQUIRE(shared->items.size() == 5);
  CHECK(shared->revision == copied->revision);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(shared->items[i]->key == copied->items[i].key);
    CHECK(shared->items[i]->mod_revision == copied->items[i].mod_revision);
  }
  REQUIRE(store.update("/s/0", "v1", 0).is_ok());
  REQUIRE(store.remove("/s/1", 0).is_ok());
  CHECK(shared->items[0]->value == "v0");
  CHECK(shared->items[1]->key == "/s/1");
  auto after = store.list_shared(o);
  REQUIRE(after.is_ok());
  REQUIRE(after->items.size() == 4);
  CHECK(after->items[0]->value == "v1");

  // Pages: a limit leaves a token that continues at the same revision.
  o.limit = 3;
  auto page = store.list_shared(o);
  REQUIRE(page.is_ok());
  CHECK(page->items.size() == 3);
  REQUIRE_FALSE(page->continue_token.empty());
  ListOptions next = o;
  next.continue_token = page->continue_token;
  auto rest = store.list_shared(next);
  REQUIRE(rest.is_ok());
  CHECK(rest->items.size() == 1);
  CHECK(rest->continue_token.empty());
  CHECK(rest->revision == page->revision);
}

}  // namespace
}  // namespace vkube::storage
