// Client against the repo's API server over real HTTPS: requests, answers
// passed through, certificate verification, watches and the keep-alive pool.
#include <catch2/catch.hpp>

#include <thread>

#include "hostclient/host_server.h"

namespace vkube::hostclient {
namespace {

using namespace testing;
using Clock = std::chrono::steady_clock;

TEST_CASE("create, get, merge patch and delete round trip; 404 and 409 pass through",
          "[hostclient]") {
  HostServer host;
  auto c = host.admin_client();
  make_namespace(*c, "t");
  const std::string coll = "/api/v1/namespaces/t/configmaps";

  Response created = c->call("POST", coll, config_map("t", "a", {{"app", "x"}}, {{"k", "1"}}));
  INFO(created.message());
  REQUIRE(created.code == 201);
  CHECK(created.body["metadata"]["uid"].is_string());

  Response dup = c->call("POST", coll, config_map("t", "a"));
  CHECK(dup.code == 409);
  CHECK(dup.body["reason"] == "AlreadyExists");
  CHECK(dup.message().find("already exists") != std::string::npos);

  Response got = c->call("GET", coll + "/a");
  REQUIRE(got.code == 200);
  CHECK(got.body["data"]["k"] == "1");

  Response patched = c->call("PATCH", coll + "/a", {{"data", {{"k", "2"}, {"n", "3"}}}},
                             "application/merge-patch+json");
  INFO(patched.message());
  REQUIRE(patched.code == 200);
  CHECK(patched.body["data"] == json({{"k", "2"}, {"n", "3"}}));
  CHECK(patched.body["metadata"]["labels"]["app"] == "x");

  // A stale resourceVersion: 409 Conflict, not retried.
  json stale = got.body;
  stale["data"]["k"] = "old";
  Response conflict = c->call("PUT", coll + "/a", stale);
  CHECK(conflict.code == 409);
  CHECK(conflict.body["reason"] == "Conflict");

  Response listed = c->call("GET", coll + "?labelSelector=app%3Dx");
  REQUIRE(listed.code == 200);
  CHECK(listed.body["items"].size() == 1);

  CHECK(c->call("DELETE", coll + "/a").code == 200);
  Response missing = c->call("GET", coll + "/a");
  CHECK(missing.code == 404);
  CHECK(missing.body["reason"] == "NotFound");
  CHECK(c->call("DELETE", coll + "/a").code == 404);
}

TEST_CASE("an untrusted server certificate fails at once, with a clear message", "[hostclient]") {
  HostServer host;
  Options o;
  o.retry_for = 30s;
  Config config = host.admin_config();
  auto refused = [&] {
    auto c = Client::create(config, o);
    REQUIRE(c.is_ok());
    auto start = Clock::now();
    Response r = (*c)->call("GET", "/api/v1/namespaces");
    CHECK(Clock::now() - start < 5s);
    CHECK(r.code == 0);
    INFO(r.message());
    CHECK(r.message().find("not trusted") != std::string::npos);
    CHECK_FALSE((*c)->reachable());
    // One connection was tried, no retry storm: nothing reached the handler.
    CHECK(host.targets().empty());
  };

  SECTION("a CA the server's certificate does not chain to") {
    vkube::testing::TempDir other;
    pki::PkiOptions po;
    po.dir = other.path();
    po.ca_common_name = "another-ca";
    auto bundle = pki::ensure_pki(po);
    REQUIRE(bundle.is_ok());
    config.ca_pem = bundle->ca.cert_pem;
    refused();
  }
  SECTION("a server name the certificate does not cover") {
    config.tls_server_name = "api.example.com";
    refused();
  }
}

TEST_CASE("tls-server-name localhost verifies against the serving certificate", "[hostclient]") {
  HostServer host;
  Config config = host.admin_config();
  config.tls_server_name = "localhost";
  auto c = Client::create(config);
  REQUIRE(c.is_ok());
  CHECK((*c)->call("GET", "/api/v1/namespaces").code == 200);
}

// Lists `coll`; its resourceVersion, to watch from.
std::string list_revision(Client& c, const std::string& coll) {
  Response list = c.call("GET", coll);
  REQUIRE(list.code == 200);
  return list.body["metadata"]["resourceVersion"];
}

TEST_CASE("watch delivers ADDED, MODIFIED and DELETED events", "[hostclient]") {
  HostServer host;
  auto c = host.admin_client();
  make_namespace(*c, "t");
  const std::string coll = "/api/v1/namespaces/t/configmaps";
  std::string rv = list_revision(*c, coll);

  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> events;  // type, data.k
  Response watched;
  std::thread watcher([&] {
    watched = c->watch(coll + "?watch=1&resourceVersion=" + rv + "&timeoutSeconds=30",
                       [&](std::string_view type, json obj) {
                         std::lock_guard lock(mu);
                         events.emplace_back(std::string(type), obj["data"].value("k", ""));
                         return type != "DELETED";
                       });
  });
  REQUIRE(c->call("POST", coll, config_map("t", "w", {}, {{"k", "1"}})).code == 201);
  REQUIRE(c->call("PATCH", coll + "/w", {{"data", {{"k", "2"}}}}, "application/merge-patch+json")
              .code == 200);
  REQUIRE(c->call("DELETE", coll + "/w").code == 200);
  watcher.join();
  CHECK(watched.code == 200);
  using E = std::pair<std::string, std::string>;
  CHECK(events == std::vector<E>{{"ADDED", "1"}, {"MODIFIED", "2"}, {"DELETED", "2"}});
}

TEST_CASE("a watch from a compacted revision reports 410 as an ERROR event", "[hostclient]") {
  HostServer host;
  auto c = host.admin_client();
  make_namespace(*c, "t");
  const std::string coll = "/api/v1/namespaces/t/configmaps";
  REQUIRE(c->call("POST", coll, config_map("t", "a")).code == 201);
  REQUIRE(c->call("POST", coll, config_map("t", "b")).code == 201);
  REQUIRE(host.store->compact(host.store->current_revision()).is_ok());
  int code = 0;
  Response r = c->watch(coll + "?watch=1&resourceVersion=1", [&](std::string_view type, json obj) {
    if (type == "ERROR") code = obj.value("code", 0);
    return true;
  });
  CHECK(r.code == 200);
  CHECK(code == 410);
}

TEST_CASE("requests share kept-alive connections and may run concurrently", "[hostclient]") {
  HostServer host;
  auto c = host.admin_client();
  for (int i = 0; i < 5; ++i) REQUIRE(c->call("GET", "/api/v1/namespaces").code == 200);
  CHECK(host.server->open_connections() == 1);

  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i)
        if (c->call("GET", "/api/v1/namespaces").code == 200) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == 80);
  CHECK(host.server->open_connections() <= 8);
}

TEST_CASE("a watch starts on the connection a list left idle", "[hostclient]") {
  HostServer host;
  auto c = host.admin_client();
  make_namespace(*c, "t");
  const std::string coll = "/api/v1/namespaces/t/configmaps";
  std::string rv = list_revision(*c, coll);
  REQUIRE(host.server->open_connections() == 1);
  std::atomic<bool> started{false};
  size_t while_watching = 0;
  std::thread watcher([&] {
    c->watch(coll + "?watch=1&resourceVersion=" + rv + "&timeoutSeconds=30",
             [&](std::string_view, const json&) {
               started = true;
               return false;  // the first event ends the watch
             });
  });
  // The watch is open well before this; a connection of its own would be
  // the second.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  while_watching = host.server->open_connections();
  auto other = host.admin_client();
  REQUIRE(other->call("POST", coll, config_map("t", "a")).code == 201);
  watcher.join();
  CHECK(started);
  CHECK(while_watching == 1);
}

TEST_CASE("a client's later connections resume its TLS session, as the same user",
          "[hostclient]") {
  HostServer host;
  auto c = host.admin_client();  // authenticated by its client certificate
  make_namespace(*c, "t");
  const std::string coll = "/api/v1/namespaces/t/configmaps";
  std::string rv = list_revision(*c, coll);
  REQUIRE(host.server->tls_handshakes() == 1);
  CHECK(host.server->tls_resumptions() == 0);
  std::atomic<bool> started{false};
  std::thread watcher([&] {
    c->watch(coll + "?watch=1&resourceVersion=" + rv + "&timeoutSeconds=30",
             [&](std::string_view, const json&) {
               started = true;
               return false;
             });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The watch holds the first connection: this write needs a second one,
  // which resumes the session and is still the admin (writes need it).
  Response created = c->call("POST", coll, config_map("t", "a"));
  INFO(created.message());
  CHECK(created.code == 201);
  watcher.join();
  CHECK(started);
  CHECK(host.server->tls_handshakes() == 2);
  CHECK(host.server->tls_resumptions() == 1);
  // Another client (another process, as it were) starts afresh.
  auto other = host.admin_client();
  REQUIRE(other->call("GET", coll).code == 200);
  CHECK(host.server->tls_handshakes() == 3);
  CHECK(host.server->tls_resumptions() == 1);
}

}  // namespace
}  // namespace vkube::hostclient
