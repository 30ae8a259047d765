#include "storage/conformance.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <thread>

#include "support/temp_dir.h"

namespace vkube::storage::testing {

using namespace std::chrono_literals;
using vkube::testing::TempDir;

namespace {

KeyValue must(Result<KeyValue> r) {
  INFO(r.status().to_string());
  REQUIRE(r.is_ok());
  return std::move(r).value();
}

// Polls until `n` events arrived or two seconds passed.
std::vector<EventPtr> collect(Watch& w, size_t n) {
  std::vector<EventPtr> out;
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    Status s = w.poll(&out, 50ms);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  }
  return out;
}

std::vector<std::string> keys_of(const std::vector<KeyValue>& items) {
  std::vector<std::string> keys;
  for (const auto& kv : items) keys.push_back(kv.key);
  return keys;
}

void crud(Backend& b) {
  SECTION("create assigns increasing revisions and refuses existing keys") {
    Revision start = b.current_revision();
    KeyValue a = must(b.create("/r/a", "1"));
    KeyValue c = must(b.create("/r/c", "2"));
    CHECK(a.mod_revision == start + 1);
    CHECK(a.create_revision == a.mod_revision);
    CHECK(a.version == 1);
    CHECK(c.mod_revision == start + 2);
    CHECK(b.current_revision() == start + 2);
    auto dup = b.create("/r/a", "x");
    CHECK(dup.status().code() == Code::kAlreadyExists);
    CHECK(b.current_revision() == start + 2);  // a refused write takes no revision
    CHECK(must(b.get("/r/a")).value == "1");
  }
  SECTION("update checks the expected revision") {
    KeyValue a = must(b.create("/r/a", "1"));
    KeyValue a2 = must(b.update("/r/a", "2", a.mod_revision));
    CHECK(a2.version == 2);
    CHECK(a2.create_revision == a.create_revision);
    CHECK(a2.mod_revision > a.mod_revision);
    auto stale = b.update("/r/a", "3", a.mod_revision);
    CHECK(stale.status().code() == Code::kConflict);
    CHECK(must(b.get("/r/a")).value == "2");
    KeyValue a3 = must(b.update("/r/a", "3", 0));  // 0: unconditional
    CHECK(a3.version == 3);
    CHECK(b.update("/r/missing", "x", 0).status().code() == Code::kNotFound);
  }
  SECTION("remove returns the last value at the delete's revision") {
    KeyValue a = must(b.create("/r/a", "1"));
    CHECK(b.remove("/r/a", a.mod_revision + 100).status().code() == Code::kConflict);
    KeyValue gone = must(b.remove("/r/a", a.mod_revision));
    CHECK(gone.value == "1");
    CHECK(gone.mod_revision == b.current_revision());
    CHECK(gone.create_revision == a.create_revision);
    CHECK(b.get("/r/a").status().code() == Code::kNotFound);
    CHECK(b.remove("/r/a", 0).status().code() == Code::kNotFound);
    KeyValue again = must(b.create("/r/a", "new"));
    CHECK(again.version == 1);
    CHECK(again.create_revision == again.mod_revision);
  }
  SECTION("bad input is refused without taking a revision") {
    Revision start = b.current_revision();
    CHECK(b.create("", "v").status().code() == Code::kInvalid);
    CHECK(b.create(std::string("/nul\0key", 8), "v").status().code() == Code::kInvalid);
    std::string big(kMaxValueBytes + 1, 'x');
    auto too_big = b.create("/r/big", big);
    CHECK(too_big.status().code() == Code::kTooLarge);
    CHECK_THAT(too_big.status().message(), Catch::Contains("exceeds the limit"));
    CHECK(must(b.create("/r/max", std::string(kMaxValueBytes, 'y'))).value.size() == kMaxValueBytes);
    CHECK(b.current_revision() == start + 1);
  }
}

void reads_at_revisions(Backend& b) {
  SECTION("get at a past revision sees the value of that time") {
    KeyValue v1 = must(b.create("/h/k", "one"));
    KeyValue v2 = must(b.update("/h/k", "two", 0));
    KeyValue del = must(b.remove("/h/k", 0));
    must(b.create("/h/other", "x"));
    CHECK(must(b.get("/h/k", v1.mod_revision)).value == "one");
    CHECK(must(b.get("/h/k", v2.mod_revision)).value == "two");
    CHECK(must(b.get("/h/k", del.mod_revision - 1)).version == 2);
    CHECK(b.get("/h/k", del.mod_revision).status().code() == Code::kNotFound);
    CHECK(b.get("/h/k", v1.mod_revision - 1).status().code() == Code::kNotFound);
    CHECK(b.get("/h/k", b.current_revision() + 5).status().code() == Code::kFutureRevision);
  }
  SECTION("list by prefix in key order, with pages read at the first page's revision") {
    for (const char* k : {"/l/b", "/l/a", "/l/d", "/l/c", "/l/e", "/lx", "/m/a"})
      must(b.create(k, std::string("v") + k));
    ListOptions o;
    o.prefix = "/l/";
    auto all = b.list(o);
    REQUIRE(all.is_ok());
    CHECK(keys_of(all->items) == std::vector<std::string>{"/l/a", "/l/b", "/l/c", "/l/d", "/l/e"});
    CHECK(all->items[0].value == "v/l/a");
    CHECK(all->revision == b.current_revision());
    CHECK(all->continue_token.empty());

    o.limit = 2;
    auto p1 = b.list(o);
    REQUIRE(p1.is_ok());
    CHECK(keys_of(p1->items) == std::vector<std::string>{"/l/a", "/l/b"});
    REQUIRE_FALSE(p1->continue_token.empty());
    // Changes after the first page are not seen by the continued list.
    must(b.remove("/l/c", 0));
    must(b.create("/l/bb", "new"));
    must(b.update("/l/d", "changed", 0));
    o.continue_token = p1->continue_token;
    auto p2 = b.list(o);
    REQUIRE(p2.is_ok());
    CHECK(p2->revision == p1->revision);
    CHECK(keys_of(p2->items) == std::vector<std::string>{"/l/c", "/l/d"});
    CHECK(p2->items[1].value == "v/l/d");
    o.continue_token = p2->continue_token;
    auto p3 = b.list(o);
    REQUIRE(p3.is_ok());
    CHECK(keys_of(p3->items) == std::vector<std::string>{"/l/e"});
    CHECK(p3->continue_token.empty());

    ListOptions now;
    now.prefix = "/l/";
    now.keys_only = true;
    auto latest = b.list(now);
    REQUIRE(latest.is_ok());
    CHECK(keys_of(latest->items) == std::vector<std::string>{"/l/a", "/l/b", "/l/bb", "/l/d", "/l/e"});
    CHECK(latest->items[0].value.empty());

    ListOptions past;
    past.prefix = "/l/";
    past.revision = p1->revision;
    auto then = b.list(past);
    REQUIRE(then.is_ok());
    CHECK(keys_of(then->items).size() == 5);
    CHECK(then->items[3].value == "v/l/d");

    ListOptions bad;
    bad.prefix = "/l/";
    bad.continue_token = "garbage";
    CHECK(b.list(bad).status().code() == Code::kBadRequest);
    bad.continue_token = p1->continue_token;
    bad.prefix = "/m/";
    CHECK(b.list(bad).status().code() == Code::kBadRequest);
  }
  SECTION("count by prefix") {
    for (int i = 0; i < 25; ++i) must(b.create("/c/" + std::to_string(i), "v"));
    must(b.create("/cx", "v"));
    must(b.remove("/c/3", 0));
    auto n = b.count("/c/");
    REQUIRE(n.is_ok());
    CHECK(*n == 24);
    CHECK(*b.count("/nothing/") == 0);
  }
}

void watches(Backend& b) {
  SECTION("a watch from now sees later events in order, with previous values") {
    must(b.create("/w/a", "before"));
    auto w = b.watch("/w/", 0);
    REQUIRE(w.is_ok());
    KeyValue u = must(b.update("/w/a", "after", 0));
    must(b.create("/other/x", "ignored"));
    KeyValue c = must(b.create("/w/b", "new"));
    KeyValue d = must(b.remove("/w/a", 0));
    auto events = collect(**w, 3);
    REQUIRE(events.size() == 3);
    CHECK(events[0]->type == EventType::kPut);
    CHECK(events[0]->kv.value == "after");
    CHECK(events[0]->kv.mod_revision == u.mod_revision);
    REQUIRE(events[0]->prev_kv);
    CHECK(events[0]->prev_kv->value == "before");
    CHECK(events[1]->kv.key == "/w/b");
    CHECK(events[1]->kv.mod_revision == c.mod_revision);
    CHECK_FALSE(events[1]->prev_kv);
    CHECK(events[2]->type == EventType::kDelete);
    CHECK(events[2]->kv.key == "/w/a");
    CHECK(events[2]->kv.mod_revision == d.mod_revision);
    REQUIRE(events[2]->prev_kv);
    CHECK(events[2]->prev_kv->value == "after");
    std::vector<EventPtr> none;
    CHECK((*w)->poll(&none, 20ms).is_ok());
    CHECK(none.empty());
  }
  SECTION("a watch from a past revision replays history, then goes live") {
    Revision start = b.current_revision();
    for (int i = 0; i < 40; ++i) must(b.create("/p/" + std::to_string(i), std::to_string(i)));
    must(b.update("/p/7", "seven", 0));
    must(b.remove("/p/8", 0));
    auto w = b.watch("/p/", start + 10);  // events after the tenth create
    REQUIRE(w.is_ok());
    must(b.create("/p/live", "l"));
    auto events = collect(**w, 33);
    REQUIRE(events.size() == 33);
    for (size_t i = 0; i < events.size(); ++i)
      CHECK(events[i]->kv.mod_revision == start + 11 + static_cast<Revision>(i));
    CHECK(events[0]->kv.key == "/p/10");
    CHECK(events[30]->kv.value == "seven");
    CHECK(events[30]->prev_kv->value == "7");
    CHECK(events[31]->type == EventType::kDelete);
    CHECK(events[31]->prev_kv->value == "8");
    CHECK(events[32]->kv.key == "/p/live");
  }
  SECTION("notifiers fire for new events") {
    auto w = b.watch("/n/", 0);
    REQUIRE(w.is_ok());
    std::atomic<int> fired{0};
    (*w)->set_notifier([&] { fired++; });
    must(b.create("/n/1", "x"));
    CHECK(fired.load() >= 1);
    std::vector<EventPtr> out;
    CHECK((*w)->poll(&out, 0ms).is_ok());
    CHECK(out.size() == 1);
  }
  SECTION("a cancelled watch ends with kCancelled") {
    auto w = b.watch("/x/", 0);
    REQUIRE(w.is_ok());
    (*w)->cancel();
    std::vector<EventPtr> out;
    CHECK((*w)->poll(&out, 10ms).code() == Code::kCancelled);
  }
}

void compaction(Backend& b) {
  SECTION("compaction expires reads and watches below it, keeps the state at it") {
    KeyValue k1 = must(b.create("/k/a", "1"));
    KeyValue k2 = must(b.update("/k/a", "2", 0));
    must(b.create("/k/b", "b"));
    KeyValue gone = must(b.create("/k/gone", "g"));
    must(b.remove("/k/gone", 0));
    Revision at = b.current_revision();
    must(b.update("/k/a", "3", 0));
    ListOptions o;
    o.prefix = "/k/";
    o.limit = 1;
    auto page = b.list(o);
    REQUIRE(page.is_ok());

    REQUIRE(b.compact(at).is_ok());
    CHECK(b.compacted_revision() == at);
    CHECK(b.get("/k/a", k1.mod_revision).status().code() == Code::kExpired);
    CHECK(b.get("/k/a", at).value().value == "2");
    CHECK(b.get("/k/a", at).value().mod_revision == k2.mod_revision);
    CHECK(b.get("/k/gone", at).status().code() == Code::kNotFound);
    CHECK(b.get("/k/gone", gone.mod_revision).status().code() == Code::kExpired);
    CHECK(b.watch("/k/", at - 1).status().code() == Code::kExpired);
    ListOptions past;
    past.prefix = "/k/";
    past.revision = at;
    auto listed = b.list(past);
    REQUIRE(listed.is_ok());
    CHECK(keys_of(listed->items) == std::vector<std::string>{"/k/a", "/k/b"});
    past.revision = at - 1;
    CHECK(b.list(past).status().code() == Code::kExpired);

    auto w = b.watch("/k/", at);  // exactly at the compaction: the later events
    REQUIRE(w.is_ok());
    auto events = collect(**w, 1);
    REQUIRE(events.size() == 1);
    CHECK(events[0]->kv.value == "3");
    CHECK(events[0]->prev_kv->value == "2");

    // A page continued after its revision was compacted away.
    must(b.create("/k/later", "l"));
    REQUIRE(b.compact(b.current_revision()).is_ok());
    o.continue_token = page->continue_token;
    CHECK(b.list(o).status().code() == Code::kExpired);
    CHECK(b.compact(1).is_ok());  // below the current compaction: no-op
    CHECK(b.compact(b.current_revision() + 1).code() == Code::kFutureRevision);
  }
}

void concurrency(Backend& b) {
  SECTION("concurrent writers get unique, gap-free revisions seen in order") {
    Revision start = b.current_revision();
    auto w = b.watch("/cc/", 0);
    REQUIRE(w.is_ok());
    constexpr int kThreads = 8, kEach = 100;
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          std::string key = "/cc/" + std::to_string(t) + "/" + std::to_string(i);
          if (!b.create(key, "v").is_ok()) failures++;
          // Contended updates of one shared key: every conflict is reported,
          // never lost.
          auto cur = b.get("/cc/shared");
          if (cur.is_ok()) (void)b.update("/cc/shared", "s", cur->mod_revision);
          else (void)b.create("/cc/shared", "s");
        }
      });
    }
    for (auto& t : threads) t.join();
    CHECK(failures.load() == 0);
    Revision end = b.current_revision();
    auto events = collect(**w, static_cast<size_t>(end - start));
    REQUIRE(events.size() == static_cast<size_t>(end - start));
    for (size_t i = 0; i < events.size(); ++i)
      CHECK(events[i]->kv.mod_revision == start + 1 + static_cast<Revision>(i));
    KeyValue shared = must(b.get("/cc/shared"));
    CHECK(shared.version == static_cast<int64_t>(
                                std::count_if(events.begin(), events.end(), [](const EventPtr& e) {
                                  return e->kv.key == "/cc/shared";
                                })));
    CHECK(*b.count("/cc/") == kThreads * kEach + 1);
  }
}

}  // namespace

void run_conformance(const BackendFactory& open) {
  TempDir dir;
  {
    std::unique_ptr<Backend> b = open(dir.path());
    REQUIRE(b);
    crud(*b);
    reads_at_revisions(*b);
    watches(*b);
    compaction(*b);
    concurrency(*b);
  }
  SECTION("revisions, data and compaction survive a restart") {
    Revision rev, compacted;
    {
      std::unique_ptr<Backend> b = open(dir.path());
      for (int i = 0; i < 3; ++i) must(b->create("/s/pre" + std::to_string(i), "p"));
      must(b->create("/s/a", "1"));
      must(b->update("/s/a", "2", 0));
      REQUIRE(b->compact(b->current_revision() - 1).is_ok());
      must(b->create("/s/b", "3"));
      rev = b->current_revision();
      compacted = b->compacted_revision();
    }
    std::unique_ptr<Backend> b = open(dir.path());
    CHECK(b->current_revision() == rev);
    CHECK(b->compacted_revision() == compacted);
    CHECK(must(b->get("/s/a")).value == "2");
    CHECK(must(b->get("/s/a")).version == 2);
    CHECK(b->get("/s/a", compacted - 1).status().code() == Code::kExpired);
    KeyValue next = must(b->create("/s/c", "4"));
    CHECK(next.mod_revision == rev + 1);
    // History from before the restart is replayed from the durable log.
    auto w = b->watch("/s/", compacted);
    REQUIRE(w.is_ok());
    auto events = collect(**w, 3);
    REQUIRE(events.size() == 3);
    CHECK(events[0]->kv.key == "/s/a");
    CHECK(events[0]->kv.value == "2");
    CHECK(events[2]->kv.key == "/s/c");
  }
}

}  // namespace vkube::storage::testing
