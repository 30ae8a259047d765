// Identical LISTs from network clients share one answer (list_bodies.h):
// the bytes are built once while an answer of them is in flight, a LIST
// after a write sees the write, different pages or media types are not
// mixed up, and the shared bytes go once the last answer is sent.
#include <catch2/catch.hpp>

#include <thread>

#include <nlohmann/json.hpp>

#include "apiserver/list_bodies.h"
#include "support/api_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

constexpr const char* kConfigMaps = "/api/v1/namespaces/w/configmaps";

struct Server : testing::ApiServerOverStore {
  Server() {
    REQUIRE(call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"w"}})").status == 201);
    for (int i = 0; i < 3; ++i) create("cm" + std::to_string(i));
  }
  // A request as a network client sends it; the answer as the transport
  // gets it (not yet sent).
  http::Response list(const std::string& query = "", const std::string& accept = "") {
    http::Request req = testing::request("GET", kConfigMaps + query);
    req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    req.remote = "127.0.0.1:40000";
    if (!accept.empty()) req.headers.push_back({"Accept", accept});
    return http::DeferredResponse::wait(api->serve(req));
  }
  http::Response call(const std::string& method, const std::string& target, std::string body = "") {
    http::Request req = testing::request(method, target);
    req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    if (!body.empty()) {
      req.body = std::move(body);
      req.headers.push_back({"Content-Type", "application/json"});
    }
    return api->handle(req);
  }
  void create(const std::string& name) {
    REQUIRE(call("POST", kConfigMaps, json{{"metadata", {{"name", name}}}}.dump()).status == 201);
  }
};

std::vector<std::string> names(const http::Response& r) {
  std::vector<std::string> out;
  const json list = json::parse(r.body_bytes());
  for (const json& item : list["items"])
    out.push_back(item["metadata"]["name"]);
  return out;
}

TEST_CASE("identical LISTs in flight share one answer", "[apiserver][list]") {
  Server s;
  http::Response first = s.list();
  http::Response second = s.list();
  REQUIRE(first.status == 200);
  REQUIRE(second.status == 200);
  REQUIRE(first.shared_body != nullptr);
  CHECK(second.shared_body == first.shared_body);
  CHECK(names(second) == std::vector<std::string>{"cm0", "cm1", "cm2"});
  CHECK(std::string(second.body_bytes()) == s.call("GET", kConfigMaps).body);

  // Released once the answers are sent: the next LIST builds anew.
  std::weak_ptr<const std::string> kept = first.shared_body;
  first = second = http::Response{};
  CHECK(kept.expired());
}

TEST_CASE("a shared LIST after a write sees the write", "[apiserver][list]") {
  Server s;
  http::Response before = s.list();
  s.create("cm3");
  http::Response after = s.list();
  CHECK(after.shared_body != before.shared_body);
  CHECK(names(before).size() == 3);
  CHECK(names(after) == std::vector<std::string>{"cm0", "cm1", "cm2", "cm3"});
}

TEST_CASE("LISTs of other pages or media types are not shared", "[apiserver][list]") {
  Server s;
  http::Response all = s.list();
  http::Response page = s.list("?limit=2");
  http::Response table = s.list("", "application/json;as=Table;v=v1;g=meta.k8s.io");
  CHECK(names(page) == std::vector<std::string>{"cm0", "cm1"});
  CHECK(json::parse(table.body_bytes())["kind"] == "Table");
  CHECK(page.shared_body != all.shared_body);
  CHECK(table.shared_body != all.shared_body);
  // The same page again is the same bytes.
  CHECK(s.list("?limit=2").shared_body == page.shared_body);
}

TEST_CASE("concurrent identical LISTs all get the whole answer", "[apiserver][list]") {
  Server s;
  const std::string expected = s.call("GET", kConfigMaps).body;
  std::vector<http::Response> answers(8);
  std::vector<std::thread> clients;
  for (auto& a : answers) clients.emplace_back([&s, &a] { a = s.list(); });
  for (auto& t : clients) t.join();
  for (const auto& a : answers) {
    REQUIRE(a.status == 200);
    CHECK(std::string(a.body_bytes()) == expected);
  }
}

TEST_CASE("a builder that fails leaves the waiters to build their own", "[apiserver][list]") {
  ListBodies bodies;
  ListBodies::Claim first = bodies.claim("k", 5);
  REQUIRE(first.build);
  std::thread waiter([&] {
    // Nothing published: it builds (alone, or for those after it).
    CHECK_FALSE(bodies.claim("k", 5).answer.body);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  first.build.reset();  // an error answer: not published
  waiter.join();
  // An answer older than what a request must see is not handed out.
  ListBodies::Claim third = bodies.claim("k", 5);
  REQUIRE(third.build);
  auto body = std::make_shared<const std::string>("x");
  third.build->publish(ListBody{body, {}, 4});
  ListBodies::Claim fourth = bodies.claim("k", 5);
  CHECK_FALSE(fourth.answer.body);
  CHECK(fourth.build);
  fourth.build->publish(ListBody{body, {}, 6});
  CHECK(bodies.claim("k", 5).answer.body == body);
}

}  // namespace
}  // namespace vkube::apiserver
