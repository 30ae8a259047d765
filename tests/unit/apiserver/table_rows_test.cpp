// Kept Table rows (table_rows.h): a LIST as a Table writes an unchanged
// object's row again from text, and must still show what printing the
// object now would show: AGE as of the request, a changed object's new
// cells, and cells other than AGE that move with the time.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "apiserver/errors.h"
#include "apiserver/table.h"
#include "apiserver/table_rows.h"
#include "kinds.h"
#include "support/api_server.h"
#include "vkube/storage/watch_cache.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

constexpr int64_t kNow = 1796220000;  // 2026-12-02T14:00:00Z
constexpr const char* kTableAccept =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

const Kind& pods_kind() {
  for (const Kind& k : builtin::builtin_kinds())
    if (k.resource.gv.group.empty() && k.resource.plural == "pods") return k;
  FAIL("no pods kind");
  throw;
}

json pod(const std::string& phase, json container_status = nullptr) {
  json p = json::parse(R"({"apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"web","namespace":"w","uid":"u-1",
      "creationTimestamp":"2026-12-02T13:00:00Z","labels":{"app":"web"}},
    "spec":{"containers":[{"name":"app","image":"nginx"}],"nodeName":"node-1"},
    "status":{"podIP":"10.0.0.5"}})");
  p["status"]["phase"] = phase;
  if (!container_status.is_null()) p["status"]["containerStatuses"] = {container_status};
  return p;
}

storage::KeyValuePtr stored(const json& obj, storage::Revision rev) {
  return std::make_shared<const storage::KeyValue>(
      storage::KeyValue{"/registry/pods/w/web", obj.dump(), 2, rev, 1});
}

// The Table of `item` as of `now`, written by a TableWriter.
std::string written(const storage::KeyValuePtr& item, IncludeObject include, int64_t now) {
  TableWriter w(pods_kind(), include, {{"resourceVersion", "9"}}, now);
  REQUIRE(w.add_stored(item));
  return w.finish();
}

// The Table of the decoded object as of `now`, as make_table prints it.
std::string printed(json obj, storage::Revision rev, IncludeObject include, int64_t now) {
  obj["metadata"]["resourceVersion"] = std::to_string(rev);
  return encode_json(make_table(pods_kind(), {obj}, include, {{"resourceVersion", "9"}}, now));
}

json cells(const std::string& table) {
  return json::parse(table)["rows"][0]["cells"];
}

TEST_CASE("a kept Table row shows AGE as of each request", "[apiserver][table]") {
  const json obj = pod("Running");
  auto item = stored(obj, 7);
  for (IncludeObject include :
       {IncludeObject::kMetadata, IncludeObject::kNone, IncludeObject::kObject}) {
    for (int64_t now : {kNow, kNow + 3600, kNow + 3 * 86400}) {
      CAPTURE(static_cast<int>(include), now);
      const std::string table = written(item, include, now);
      CHECK(table == printed(obj, 7, include, now));
    }
  }
  // The row was kept: the later requests wrote it again from text.
  CHECK(TableRowCache::shared().find(item, "/v1/pods") != nullptr);
  CHECK(cells(written(item, IncludeObject::kNone, kNow))[4] == "60m");
  CHECK(cells(written(item, IncludeObject::kNone, kNow + 3600))[4] == "120m");
  CHECK(cells(written(item, IncludeObject::kNone, kNow + 3 * 86400))[4] == "3d1h");
}

TEST_CASE("a changed object gets its new row, the old item keeps its own", "[apiserver][table]") {
  auto pending = stored(pod("Pending"), 7);
  auto running = stored(pod("Running"), 8);
  CHECK(cells(written(pending, IncludeObject::kNone, kNow))[2] == "Pending");
  CHECK(cells(written(running, IncludeObject::kNone, kNow))[2] == "Running");
  CHECK(cells(written(pending, IncludeObject::kNone, kNow))[2] == "Pending");
  const std::string meta = written(running, IncludeObject::kMetadata, kNow);
  CHECK(json::parse(meta)["rows"][0]["object"]["metadata"]["resourceVersion"] == "8");
}

TEST_CASE("a row whose RESTARTS moves with the time is printed anew", "[apiserver][table]") {
  // kube prints the last restart's age beside the count: "2 (5m ago)".
  const json restarted = {
      {"name", "app"},
      {"ready", true},
      {"restartCount", 2},
      {"state", {{"running", {{"startedAt", "2026-12-02T13:55:00Z"}}}}},
      {"lastState", {{"terminated", {{"finishedAt", "2026-12-02T13:55:00Z"}}}}}};
  const json obj = pod("Running", restarted);
  auto item = stored(obj, 7);
  CHECK(cells(written(item, IncludeObject::kNone, kNow))[3] == "2 (5m ago)");
  CHECK(cells(written(item, IncludeObject::kNone, kNow + 3600))[3] == "2 (65m ago)");
  CHECK(written(item, IncludeObject::kMetadata, kNow + 7200) ==
        printed(obj, 7, IncludeObject::kMetadata, kNow + 7200));
}

// The whole server over a watch cache, as `vkube serve` runs it: the cache
// shares unchanged items between LISTs, so rows are found again.
struct CachedServer : testing::ApiServerOverStore {
  std::unique_ptr<storage::Backend> cache;

  CachedServer() {
    api->shutdown();
    auto c = storage::make_watch_cache(*store);
    REQUIRE(c.is_ok());
    cache = std::move(c).value();
    Options options;
    options.backend = cache.get();
    api = ApiServer::create(options);
    REQUIRE(call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"w"}})").status == 201);
  }
  ~CachedServer() {
    api->shutdown();
    api.reset();  // before the cache it reads
  }
  http::Response call(const std::string& method, const std::string& target, std::string body = "",
                      std::string accept = "") {
    return testing::admin_call(*api, method, target, std::move(body), accept);
  }
  json table() {
    auto r = call("GET", "/api/v1/namespaces/w/pods", "", kTableAccept);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }
};

TEST_CASE("a Table LIST after a write shows the write", "[apiserver][table]") {
  CachedServer s;
  for (const char* name : {"a", "b"}) {
    json p = pod("Pending");
    p["metadata"] = {{"name", name}};
    REQUIRE(s.call("POST", "/api/v1/namespaces/w/pods", p.dump()).status == 201);
  }
  json first = s.table();
  REQUIRE(first["rows"].size() == 2);
  CHECK(first["rows"][0]["cells"][2] == "Pending");
  CHECK(s.table()["rows"] == first["rows"]);  // within the same second

  json a = json::parse(s.call("GET", "/api/v1/namespaces/w/pods/a").body);
  a["status"]["phase"] = "Running";
  REQUIRE(s.call("PUT", "/api/v1/namespaces/w/pods/a/status", a.dump()).status == 200);
  REQUIRE(s.call("DELETE", "/api/v1/namespaces/w/pods/b?gracePeriodSeconds=0").status == 200);
  json after = s.table();
  REQUIRE(after["rows"].size() == 1);
  CHECK(after["rows"][0]["cells"][0] == "a");
  CHECK(after["rows"][0]["cells"][2] == "Running");
  CHECK(after["rows"][0]["object"]["metadata"]["resourceVersion"] !=
        first["rows"][0]["object"]["metadata"]["resourceVersion"]);
}

}  // namespace
}  // namespace vkube::apiserver
