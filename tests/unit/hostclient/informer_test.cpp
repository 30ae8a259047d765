// Informer against the repo's API server over HTTPS: paged initial list,
// watch events, selectors, resumed watches and the relist after 410 Gone.
#include <catch2/catch.hpp>

#include <algorithm>
#include <future>
#include <map>

#include "hostclient/host_server.h"
#include "vkube/hostclient/informer.h"

namespace vkube::hostclient {
namespace {

using namespace testing;
using controllers::EventType;
using controllers::ObjectEvent;
using Clock = std::chrono::steady_clock;

const std::string kColl = "/api/v1/namespaces/t/configmaps";

// What handlers saw, readable from the test thread.
struct Recorder {
  std::mutex mu;
  std::vector<ObjectEvent> events;

  controllers::Handler handler() {
    return [this](const ObjectEvent& e) {
      std::lock_guard lock(mu);
      events.push_back(e);
    };
  }
  size_t size() {
    std::lock_guard lock(mu);
    return events.size();
  }
  // "A:t/a", "M:t/a", "D:t/a" from event `from` on.
  std::vector<std::string> summary(size_t from = 0) {
    std::lock_guard lock(mu);
    std::vector<std::string> out;
    for (size_t i = from; i < events.size(); ++i) {
      const char* t = events[i].type == EventType::kAdded      ? "A:"
                      : events[i].type == EventType::kModified ? "M:"
                                                               : "D:";
      out.push_back(t + events[i].key);
    }
    return out;
  }
  ObjectEvent at(size_t i) {
    std::lock_guard lock(mu);
    return events.at(i);
  }
};

struct Fixture {
  HostServer host;
  std::unique_ptr<Client> client = host.admin_client();
  Recorder seen;

  Fixture() { make_namespace(*client, "t"); }

  void create(const std::string& name, json labels = json::object()) {
    Response r = client->call("POST", kColl, config_map("t", name, std::move(labels)));
    INFO(r.message());
    REQUIRE(r.code == 201);
  }
  void patch(const std::string& name, const json& p) {
    Response r = client->call("PATCH", kColl + "/" + name, p, "application/merge-patch+json");
    INFO(r.message());
    REQUIRE(r.code == 200);
  }
  void remove(const std::string& name) {
    REQUIRE(client->call("DELETE", kColl + "/" + name).code == 200);
  }

  std::unique_ptr<Informer> informer(InformerOptions o = {}) {
    o.path = kColl;
    o.resource = {"core", "configmaps"};
    auto inf = std::make_unique<Informer>(*client, std::move(o));
    inf->on_event(seen.handler());
    return inf;
  }
};

TEST_CASE("Informer lists in pages, then watches; handlers see every change", "[hostclient]") {
  Fixture f;
  for (int i = 0; i < 5; ++i) f.create("cm-" + std::to_string(i));
  InformerOptions o;
  o.page_size = 2;
  auto inf = f.informer(o);
  inf->start();
  REQUIRE(inf->wait_synced(10s));
  CHECK(inf->synced());
  CHECK(f.host.count("limit=2") == 3);
  CHECK(f.host.count("continue=") == 2);
  CHECK(inf->size() == 5);
  CHECK(f.seen.summary() ==
        std::vector<std::string>{"A:t/cm-0", "A:t/cm-1", "A:t/cm-2", "A:t/cm-3", "A:t/cm-4"});
  CHECK(f.seen.at(0).resource == controllers::ResourceKey{"core", "configmaps"});
  auto obj = inf->get("t", "cm-3");
  REQUIRE(obj);
  CHECK((*obj)["kind"] == "ConfigMap");
  CHECK((*obj)["apiVersion"] == "v1");
  CHECK_FALSE((*obj)["metadata"].contains("managedFields"));
  CHECK(inf->list("t").size() == 5);
  CHECK(inf->list("other").empty());

  f.create("new");
  f.patch("cm-1", {{"data", {{"k", "v"}}}});
  f.remove("cm-4");
  REQUIRE(eventually([&] { return f.seen.size() == 8; }));
  CHECK(f.seen.summary(5) == std::vector<std::string>{"A:t/new", "M:t/cm-1", "D:t/cm-4"});
  ObjectEvent modified = f.seen.at(6);
  CHECK((*modified.object)["data"]["k"] == "v");
  CHECK(modified.old);
  CHECK_FALSE((*modified.old).value("data", json::object()).contains("k"));
  CHECK_FALSE((*modified.object)["metadata"].contains("managedFields"));
  CHECK(f.seen.at(7).object);
  CHECK(inf->get("t/cm-4") == nullptr);
  CHECK((*inf->get("t/cm-1"))["data"]["k"] == "v");
  CHECK(inf->size() == 5);
  inf->stop();
}

TEST_CASE("Informer: a label selector filters; objects leaving it are deleted", "[hostclient]") {
  Fixture f;
  f.create("a1", {{"app", "a"}});
  f.create("a2", {{"app", "a"}});
  f.create("b1", {{"app", "b"}});
  InformerOptions o;
  o.label_selector = "app=a";
  auto inf = f.informer(o);
  inf->start();
  REQUIRE(inf->wait_synced(10s));
  CHECK(inf->size() == 2);
  CHECK(inf->get("t/b1") == nullptr);

  f.create("b2", {{"app", "b"}});
  f.patch("a2", {{"metadata", {{"labels", {{"app", "b"}}}}}});
  f.create("a3", {{"app", "a"}});
  REQUIRE(eventually([&] { return f.seen.size() == 4; }));
  CHECK(f.seen.summary(2) == std::vector<std::string>{"D:t/a2", "A:t/a3"});
  CHECK(inf->size() == 2);
}

TEST_CASE("Informer: controlled_by finds objects by their controller's uid", "[hostclient]") {
  Fixture f;
  json owned = config_map("t", "owned");
  owned["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                           {"kind", "ConfigMap"},
                                           {"name", "owner"},
                                           {"uid", "uid-1"},
                                           {"controller", true}}};
  REQUIRE(f.client->call("POST", kColl, owned).code == 201);
  json referenced = config_map("t", "referenced");
  referenced["metadata"]["ownerReferences"] = {
      {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "owner"}, {"uid", "uid-1"}}};
  REQUIRE(f.client->call("POST", kColl, referenced).code == 201);
  f.create("free");
  auto inf = f.informer();
  inf->start();
  REQUIRE(inf->wait_synced(10s));
  auto owned_list = inf->controlled_by("uid-1");
  REQUIRE(owned_list.size() == 1);
  CHECK((*owned_list[0])["metadata"]["name"] == "owned");
  CHECK(inf->controlled_by("uid-2").empty());
}

TEST_CASE("Informer resumes ended watches, and relists after 410 with the difference",
          "[hostclient]") {
  Fixture f;
  for (int i = 0; i < 5; ++i) f.create("cm-" + std::to_string(i));
  f.host.short_watches = true;  // every watch ends after a second
  auto inf = f.informer();
  inf->start();
  REQUIRE(inf->wait_synced(10s));
  REQUIRE(f.seen.size() == 5);

  // Watches end and are resumed from the last revision: no relist.
  REQUIRE(eventually([&] { return f.host.count("watch=1") >= 3; }));
  f.create("live");
  REQUIRE(eventually([&] { return f.seen.size() == 6; }));
  CHECK(f.host.count("limit=") == 1);

  // Cut the informer off, change things, and compact them out of history.
  f.host.refuse_watches = true;
  int refused = f.host.refused;
  REQUIRE(eventually([&] { return f.host.refused > refused; }));
  f.remove("cm-1");
  f.patch("cm-2", {{"data", {{"k", "v"}}}});
  f.create("later");
  f.remove("live");
  REQUIRE(f.host.store->compact(f.host.store->current_revision()).is_ok());
  f.host.refuse_watches = false;

  REQUIRE(eventually([&] { return f.seen.size() == 10; }, 20s));
  CHECK(f.host.count("limit=") == 2);
  auto diff = f.seen.summary(6);
  std::sort(diff.begin(), diff.end());
  CHECK(diff == std::vector<std::string>{"A:t/later", "D:t/cm-1", "D:t/live", "M:t/cm-2"});
  CHECK(inf->size() == 5);
  CHECK(inf->get("t/cm-1") == nullptr);
  CHECK((*inf->get("t/cm-2"))["data"]["k"] == "v");
  // Nothing more: unchanged objects are not announced again.
  std::this_thread::sleep_for(300ms);
  CHECK(f.seen.size() == 10);
}

TEST_CASE("Informer::stop() returns promptly while the host is unreachable", "[hostclient]") {
  auto s = http::Server::start({}, [](http::Request&) { return http::Response{}; });
  REQUIRE(s.is_ok());
  Config config;
  config.server = "http://127.0.0.1:" + std::to_string((*s)->port());
  (*s)->shutdown(0ms);
  Options o;
  o.retry_for = 60s;
  auto c = Client::create(config, o);
  REQUIRE(c.is_ok());
  InformerOptions io;
  io.path = kColl;
  Informer inf(**c, io);
  inf.start();
  CHECK_FALSE(inf.wait_synced(300ms));
  auto start = Clock::now();
  inf.stop();
  CHECK(Clock::now() - start < 1s);
  CHECK_FALSE(inf.synced());
}

}  // namespace
}  // namespace vkube::hostclient
