// Retries, backoff and stop(), against small real HTTP servers that answer
// as an overloaded or vanished API server would.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <future>
#include <thread>

#include "hostclient/host_server.h"

namespace vkube::hostclient {
namespace {

using namespace testing;
using Clock = std::chrono::steady_clock;

// A plain-HTTP server whose first `failures` requests get `code` (with
// `retry_after` when set), then 200 {"kind":"Ok"}.
struct FlakyServer {
  std::atomic<int> requests{0};
  std::mutex mu;
  std::string headers;  // "Accept User-Agent" of the last good request
  std::unique_ptr<http::Server> server;

  FlakyServer(int failures, int code, std::string retry_after = "", std::string body = "") {
    auto s = http::Server::start({}, [=, this](http::Request& r) {
      http::Response resp;
      int n = ++requests;
      if (n <= failures) {
        resp.status = code;
        if (!retry_after.empty()) resp.set_header("Retry-After", retry_after);
        resp.set_header("Content-Type", "text/plain");
        resp.body = body.empty() ? "busy" : body;
        return resp;
      }
      {
        // Catch2 assertions are for the test thread only.
        std::lock_guard lock(mu);
        headers = std::string(r.header("Accept")) + " " + std::string(r.header("User-Agent"));
      }
      resp.set_header("Content-Type", "application/json");
      resp.body = R"({"kind":"Ok"})";
      return resp;
    });
    REQUIRE(s.is_ok());
    server = std::move(s).value();
  }

  std::unique_ptr<Client> client(Options o = {}) {
    Config config;
    config.server = "http://127.0.0.1:" + std::to_string(server->port());
    o.user_agent = "hostclient-test";
    auto c = Client::create(config, o);
    REQUIRE(c.is_ok());
    return std::move(c).value();
  }
};

// A port nothing listens on (taken from a server that was shut down).
uint16_t closed_port() {
  auto s = http::Server::start({}, [](http::Request&) { return http::Response{}; });
  REQUIRE(s.is_ok());
  uint16_t port = (*s)->port();
  (*s)->shutdown(0ms);
  return port;
}

TEST_CASE("503 twice, then 200: call() retries and returns the 200", "[hostclient]") {
  FlakyServer s(2, 503);
  auto c = s.client();
  Response r = c->call("GET", "/api/v1/namespaces");
  CHECK(r.code == 200);
  CHECK(r.body["kind"] == "Ok");
  CHECK(s.requests == 3);
  CHECK(c->reachable());
  std::lock_guard lock(s.mu);
  CHECK(s.headers == "application/json hostclient-test");
}

TEST_CASE("429 with Retry-After: 1 waits a second before trying again", "[hostclient]") {
  FlakyServer s(1, 429, "1");
  auto c = s.client();
  auto start = Clock::now();
  Response r = c->call("GET", "/x");
  CHECK(Clock::now() - start >= 900ms);
  CHECK(r.code == 200);
  CHECK(s.requests == 2);
}

TEST_CASE("other answers return at once; non-JSON bodies become a Status", "[hostclient]") {
  FlakyServer s(1, 404, "", "<html>no such page</html>");
  auto c = s.client();
  Response r = c->call("GET", "/x");
  CHECK(r.code == 404);
  CHECK(r.body["kind"] == "Status");
  CHECK(r.message() == "<html>no such page</html>");
  CHECK(s.requests == 1);
}

TEST_CASE("retries end after retry_for with the last answer", "[hostclient]") {
  Options o;
  o.retry_for = 600ms;
  SECTION("a server that keeps answering 503") {
    FlakyServer s(1000, 503);
    auto start = Clock::now();
    Response r = s.client(o)->call("GET", "/x");
    CHECK(r.code == 503);
    CHECK(Clock::now() - start >= 500ms);
    CHECK(Clock::now() - start < 3s);
    CHECK(s.requests >= 3);
  }
  SECTION("an unreachable server: code 0") {
    Config config;
    config.server = "https://127.0.0.1:" + std::to_string(closed_port());
    auto c = Client::create(config, o);
    REQUIRE(c.is_ok());
    auto start = Clock::now();
    Response r = (*c)->call("GET", "/x");
    CHECK(r.code == 0);
    INFO(r.message());
    CHECK(r.message().find("refused") != std::string::npos);
    CHECK(Clock::now() - start >= 500ms);
    CHECK(Clock::now() - start < 3s);
    CHECK_FALSE((*c)->reachable());
  }
}

TEST_CASE("stop() ends a call that is backing off, one in flight, and later calls",
          "[hostclient]") {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  // 503 for /busy; /hang never answers until the test ends.
  auto s = http::Server::start({}, [&](http::Request& r) {
    http::Response resp;
    if (r.path == "/hang") {
      std::unique_lock lock(mu);
      cv.wait_for(lock, 10s, [&] { return release; });
    }
    resp.status = 503;
    return resp;
  });
  REQUIRE(s.is_ok());
  Config config;
  config.server = "http://127.0.0.1:" + std::to_string((*s)->port());
  Options o;
  o.retry_for = 60s;
  o.initial_backoff = 200ms;
  auto c = Client::create(config, o);
  REQUIRE(c.is_ok());

  auto busy = std::async(std::launch::async, [&] { return (*c)->call("GET", "/busy"); });
  auto hang = std::async(std::launch::async, [&] { return (*c)->call("GET", "/hang"); });
  std::this_thread::sleep_for(500ms);
  auto start = Clock::now();
  (*c)->stop();
  REQUIRE(busy.wait_for(2s) == std::future_status::ready);
  REQUIRE(hang.wait_for(2s) == std::future_status::ready);
  CHECK(Clock::now() - start < 1s);
  CHECK(busy.get().code == 0);
  Response h = hang.get();
  CHECK(h.code == 0);
  CHECK(h.message().find("stopped") != std::string::npos);
  CHECK((*c)->call("GET", "/busy").code == 0);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
}

TEST_CASE("stop() ends a watch in progress", "[hostclient]") {
  HostServer host;
  auto c = host.admin_client();
  make_namespace(*c, "t");
  REQUIRE(c->call("POST", "/api/v1/namespaces/t/configmaps", config_map("t", "a")).code == 201);
  std::atomic<int> events{0};
  auto w = std::async(std::launch::async, [&] {
    return c->watch("/api/v1/namespaces/t/configmaps?watch=1&timeoutSeconds=60",
                    [&](std::string_view, json) {
                      ++events;
                      return true;
                    });
  });
  REQUIRE(eventually([&] { return events > 0; }));
  auto start = Clock::now();
  c->stop();
  REQUIRE(w.wait_for(2s) == std::future_status::ready);
  CHECK(Clock::now() - start < 1s);
  CHECK(w.get().code == 0);
}

TEST_CASE("a Cancellation ends one watch and leaves the client usable", "[hostclient]") {
  HostServer host;
  auto c = host.admin_client();
  Cancellation cancel;
  auto w = std::async(std::launch::async, [&] {
    return c->watch_cancellable(
        "/api/v1/namespaces?watch=1&timeoutSeconds=60", [](std::string_view, json) { return true; },
        cancel);
  });
  REQUIRE(eventually([&] { return host.count("watch=1") == 1; }));
  cancel.cancel();
  REQUIRE(w.wait_for(2s) == std::future_status::ready);
  CHECK(w.get().code == 0);
  CHECK(c->call("GET", "/api/v1/namespaces").code == 200);
  CHECK(
      c->call_cancellable("GET", "/api/v1/namespaces", nullptr, "application/json", cancel).code ==
      0);
}

}  // namespace
}  // namespace vkube::hostclient
