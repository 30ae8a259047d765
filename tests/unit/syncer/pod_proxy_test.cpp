// A tenant relaying its pods' streams to the host pods: the host's answer
// head and bytes pass through untouched, and the host's refusals come back
// in the tenant's names.
#include <atomic>
#include <thread>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "vkube/hostclient/client.h"
#include "vkube/http/duplex.h"
#include "vkube/http/server.h"
#include "vkube/syncer/pod_proxy.h"

namespace vkube::syncer {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

class Lines : public http::ResponseStream {
 public:
  void start(std::shared_ptr<http::StreamSink> sink) override {
    sink->write("line 1\n");
    sink->write("line 2\n");
    sink->close();
  }
  void stop() override {}
};

// The host's API, as far as pods' streams go.
http::Response host_api(http::Request& req, std::vector<std::string>* seen) {
  seen->push_back(req.method + " " + req.target);
  const std::string pod = "/api/v1/namespaces/vkube-t/pods/web-x-default-x-t/";
  http::Response r;
  if (req.path == pod + "log") {
    r.set_header("Content-Type", "text/plain");
    r.stream = std::make_shared<Lines>();
    return r;
  }
  if (req.path == pod + "exec" && req.header("Upgrade") == "websocket") {
    r.status = 101;
    r.headers = {{"Upgrade", "websocket"},
                 {"Connection", "Upgrade"},
                 {"Sec-WebSocket-Protocol", std::string(req.header("Sec-WebSocket-Protocol"))}};
    r.upgrade = [](std::shared_ptr<http::Duplex> d) {
      if (!d) return;
      std::thread([d] {
        char buf[4096];
        for (;;) {
          auto n = d->read(buf, sizeof buf);
          if (!n.is_ok() || *n == 0) break;
          std::string up(buf, *n);
          for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
          if (!d->write(up).is_ok()) return;
        }
        d->close_write();
      }).detach();
    };
    return r;
  }
  r.status = 404;
  r.set_header("Content-Type", "application/json");
  r.body = json{
      {"kind", "Status"},
      {"apiVersion", "v1"},
      {"status", "Failure"},
      {"message", "pods \"web-x-default-x-t\" not found in namespace \"vkube-t\""},
      {"reason", "NotFound"},
      {"details", {{"name", "web-x-default-x-t"}, {"kind", "pods"}}},
      {"code",
       404}}.dump();
  return r;
}

struct Setup {
  std::vector<std::string> seen;
  std::unique_ptr<http::Server> host, tenant;
  std::shared_ptr<apiserver::PodConnector> proxy;

  Setup() {
    auto h = http::Server::start({}, [this](http::Request& r) { return host_api(r, &seen); });
    REQUIRE(h.is_ok());
    host = std::move(h).value();
    hostclient::Config config;
    config.server = "http://127.0.0.1:" + std::to_string(host->port());
    auto client = hostclient::Client::create(config);
    REQUIRE(client.is_ok());
    proxy = make_pod_proxy(NameMapper("t"), "vkube-t",
                           std::shared_ptr<hostclient::Client>(std::move(client).value()));
    json pod = {{"metadata", {{"name", "web"}, {"namespace", "default"}}}};
    auto t = http::Server::start({}, [this, pod](http::Request& r) {
      std::string sub = r.path.substr(r.path.rfind('/') + 1);
      return proxy->connect(apiserver::PodRequest{sub, pod, "app"}, r);
    });
    REQUIRE(t.is_ok());
    tenant = std::move(t).value();
  }

  std::unique_ptr<http::Duplex> connect() {
    auto d = http::dial_tcp("127.0.0.1", tenant->port(), 5s);
    REQUIRE(d.is_ok());
    (*d)->set_deadline(http::Duplex::Clock::now() + 10s);
    return std::move(d).value();
  }
};

std::string read_to_end(http::Duplex& d, std::string got) {
  char buf[4096];
  for (;;) {
    auto n = d.read(buf, sizeof buf);
    REQUIRE(n.is_ok());
    if (*n == 0) return got;
    got.append(buf, *n);
  }
}

TEST_CASE("A tenant relays an upgraded pod stream to the host pod", "[syncer][pods]") {
  Setup s;
  auto d = s.connect();
  REQUIRE(http::write_request(*d, "GET",
                              "/api/v1/namespaces/default/pods/web/exec?command=sh&stdin=true",
                              {{"Host", "tenant"},
                               {"Upgrade", "websocket"},
                               {"Connection", "Upgrade"},
                               {"Sec-WebSocket-Protocol", "v5.channel.k8s.io"}})
              .is_ok());
  auto head = http::read_response_head(*d);
  REQUIRE(head.is_ok());
  CHECK(head->status == 101);
  CHECK(head->header("Sec-WebSocket-Protocol") == "v5.channel.k8s.io");
  REQUIRE(d->write("hello host").is_ok());
  d->close_write();
  CHECK(read_to_end(*d, head->rest) == "HELLO HOST");
  REQUIRE(!s.seen.empty());
  CHECK(s.seen[0] ==
        "GET /api/v1/namespaces/vkube-t/pods/web-x-default-x-t/exec?command=sh&stdin=true");
}

TEST_CASE("A tenant relays a streamed pod log as the host sends it", "[syncer][pods]") {
  Setup s;
  auto d = s.connect();
  REQUIRE(http::write_request(*d, "GET", "/api/v1/namespaces/default/pods/web/log?follow=true",
                              {{"Host", "tenant"}})
              .is_ok());
  auto head = http::read_response_head(*d);
  REQUIRE(head.is_ok());
  CHECK(head->status == 200);
  CHECK(head->header("Content-Type") == "text/plain");
  auto body = http::read_response_body(*d, *head, 1 << 20);
  REQUIRE(body.is_ok());
  CHECK(*body == "line 1\nline 2\n");
}

TEST_CASE("The host's refusals name the tenant's pod, and an unreachable host says so",
          "[syncer][pods]") {
  Setup s;
  auto d = s.connect();
  REQUIRE(http::write_request(*d, "POST", "/api/v1/namespaces/default/pods/web/attach",
                              {{"Host", "tenant"}})
              .is_ok());
  auto head = http::read_response_head(*d);
  REQUIRE(head.is_ok());
  CHECK(head->status == 404);
  auto body = http::read_response_body(*d, *head, 1 << 20);
  REQUIRE(body.is_ok());
  json status = json::parse(*body);
  CHECK(status["message"] == "pods \"web\" not found in namespace \"default\"");
  CHECK(status["details"]["name"] == "web");

  const uint16_t port = s.host->port();
  s.host->shutdown(0ms);
  s.host.reset();
  auto e = s.connect();
  REQUIRE(http::write_request(*e, "GET", "/api/v1/namespaces/default/pods/web/log", {{"Host", "t"}})
              .is_ok());
  head = http::read_response_head(*e);
  REQUIRE(head.is_ok());
  CHECK(head->status == 503);
  body = http::read_response_body(*e, *head, 1 << 20);
  REQUIRE(body.is_ok());
  CHECK(json::parse(*body)["message"] ==
        "cannot reach pod web: the host cluster at http://127.0.0.1:" +
            std::to_string(port) + " is unreachable: dial tcp 127.0.0.1:" + std::to_string(port) +
            ": connect: connection refused");
}

}  // namespace
}  // namespace vkube::syncer
