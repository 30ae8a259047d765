// Request bodies and load as kube-apiserver takes them from a hostile
// client: Content-Type negotiation (415, YAML bodies), YAML alias bombs, and
// the in-flight limit (429) on requests and on the bytes their answers hold.
#include <catch2/catch.hpp>

#include <chrono>

#include <nlohmann/json.hpp>

#include "support/api_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

struct Server : testing::ApiServerOverStore {
  explicit Server(Options o = {}) : ApiServerOverStore(o) {
    REQUIRE(call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"w"}})").status == 201);
  }

  // A request as it comes from a network client (the in-flight limit
  // exempts the server's own in-process calls, which have no remote).
  http::Request from_network(const std::string& method, const std::string& target,
                             std::string body = "", std::string content_type = "") {
    http::Request req = testing::request(method, target);
    req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    req.remote = "127.0.0.1:40000";
    if (!content_type.empty()) req.headers.push_back({"Content-Type", content_type});
    req.body = std::move(body);
    return req;
  }
  http::Response call(const std::string& method, const std::string& target, std::string body = "",
                      std::string content_type = "application/json") {
    http::Request req = from_network(method, target, std::move(body), std::move(content_type));
    return api->handle(req);
  }
};

std::string header(const http::Response& r, const std::string& name) {
  for (const auto& h : r.headers)
    if (h.name == name) return h.value;
  return {};
}

constexpr const char* kConfigMaps = "/api/v1/namespaces/w/configmaps";

TEST_CASE("a body in a media type the server does not speak gets 415 with the ones it does",
          "[apiserver]") {
  Server s;
  const std::string body = R"({"metadata":{"name":"a"},"data":{"k":"v"}})";
  for (std::string type : {"text/plain", "application/x-www-form-urlencoded", "application/xml"}) {
    INFO(type);
    auto r = s.call("POST", kConfigMaps, body, type);
    CHECK(r.status == 415);
    json st = json::parse(r.body);
    CHECK(st["reason"] == "UnsupportedMediaType");
    CHECK(st["message"] ==
          "the body of the request was in an unknown format - accepted media types include: "
          "application/json, application/yaml, application/vnd.kubernetes.protobuf");
  }
  CHECK(s.call("GET", kConfigMaps + std::string("/a")).status == 404);  // nothing was stored
  // The same for an update; no Content-Type at all is JSON, as on kube.
  REQUIRE(s.call("POST", kConfigMaps, body, "").status == 201);
  CHECK(s.call("PUT", kConfigMaps + std::string("/a"), body, "text/plain").status == 415);
  CHECK(s.call("PUT", kConfigMaps + std::string("/a"), body, "Application/JSON; charset=utf-8")
            .status == 200);
}

TEST_CASE("YAML bodies create and update objects", "[apiserver]") {
  Server s;
  auto created = s.call("POST", kConfigMaps, R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: from-yaml
  labels: {app: web}
data:
  answer: "42"
  enabled: "yes"
)",
                        "application/yaml");
  INFO(created.body);
  REQUIRE(created.status == 201);
  json got = json::parse(s.call("GET", kConfigMaps + std::string("/from-yaml")).body);
  CHECK(got["data"] == json{{"answer", "42"}, {"enabled", "yes"}});
  CHECK(got["metadata"]["labels"]["app"] == "web");

  auto updated = s.call("PUT", kConfigMaps + std::string("/from-yaml"), R"(apiVersion: v1
kind: ConfigMap
metadata: {name: from-yaml}
data: {answer: "43"}
)",
                        "application/yaml");
  INFO(updated.body);
  CHECK(updated.status == 200);
  CHECK(json::parse(updated.body)["data"] == json{{"answer", "43"}});
}

// 360 bytes that expand to 9^9 strings: gigabytes if aliases were copied
// without a bound.
const std::string kAliasBomb = R"(apiVersion: v1
kind: ConfigMap
metadata: {name: bomb}
data:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
)";

TEST_CASE("a YAML alias bomb is refused at once, as apply and as a YAML body", "[apiserver]") {
  Server s;
  auto start = std::chrono::steady_clock::now();
  auto applied = s.call("PATCH", kConfigMaps + std::string("/bomb?fieldManager=m"), kAliasBomb,
                        "application/apply-patch+yaml");
  auto created = s.call("POST", kConfigMaps, kAliasBomb, "application/yaml");
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(applied.status == 400);
  CHECK(json::parse(applied.body)["message"] ==
        "error decoding YAML: error converting YAML to JSON: yaml: document contains excessive "
        "aliasing");
  CHECK(created.status == 400);
  CHECK_THAT(created.body, Catch::Contains("yaml: document contains excessive aliasing"));
  CHECK(elapsed < std::chrono::milliseconds(500));

  // A value that contains itself is refused too; sharing a few values is fine.
  auto loop = s.call("PATCH", kConfigMaps + std::string("/loop?fieldManager=m"),
                     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loop}\ndata: &d {a: *d}\n",
                     "application/apply-patch+yaml");
  CHECK(loop.status == 400);
  CHECK_THAT(loop.body, Catch::Contains("anchor 'd' value contains itself"));
  auto shared = s.call("PATCH", kConfigMaps + std::string("/shared?fieldManager=m"),
                       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, labels: &l "
                       "{app: web}, annotations: *l}\n",
                       "application/apply-patch+yaml");
  INFO(shared.body);
  CHECK(shared.status == 201);
  CHECK(json::parse(shared.body)["metadata"]["annotations"]["app"] == "web");
}

TEST_CASE("YAML nested past the depth bound is refused, not recursed into", "[apiserver]") {
  Server s;
  std::string deep = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata:\n";
  std::string indent = "  ";
  for (int i = 0; i < 1100; ++i, indent += " ") deep += indent + "k:\n";
  auto r = s.call("POST", kConfigMaps, deep, "application/yaml");
  CHECK(r.status == 400);
}

TEST_CASE("requests beyond the in-flight limit get 429 until earlier answers are sent",
          "[apiserver]") {
  Options o;
  o.max_requests_inflight = 2;
  Server s(o);
  // An answer holds its slot until the transport lets go of its lease.
  http::Request r1 = s.from_network("GET", kConfigMaps);
  http::Request r2 = s.from_network("GET", kConfigMaps);
  auto held1 = s.api->serve(r1);
  auto held2 = s.api->serve(r2);
  REQUIRE(held1.status == 200);
  REQUIRE(held2.status == 200);

  auto refused = s.call("GET", kConfigMaps);
  CHECK(refused.status == 429);
  CHECK(header(refused, "Retry-After") == "1");
  CHECK(header(refused, "Content-Type") == "text/plain; charset=utf-8");
  CHECK(refused.body == "Too many requests, please try again later.\n");
  // The server's own in-process calls are not limited.
  http::Request inproc = testing::request("GET", kConfigMaps);
  inproc.peer = http::PeerCertificate{"system:apiserver", {"system:masters"}};
  CHECK(s.api->handle(inproc).status == 200);

  held1 = http::Response{};  // sent
  CHECK(s.call("GET", kConfigMaps).status == 200);
}

TEST_CASE("reads beyond the byte budget get 429 while earlier answers hold it", "[apiserver]") {
  Options o;
  o.max_read_bytes_inflight = 64 * 1024;
  Server s(o);
  const std::string value(8 * 1024, 'x');
  for (int i = 0; i < 16; ++i) {
    REQUIRE(
        s.call("POST", kConfigMaps,
               json{{"metadata", {{"name", "cm" + std::to_string(i)}}}, {"data", {{"v", value}}}}
                   .dump())
            .status == 201);
  }
  // One LIST of 128 KiB is served alone, larger than the budget as it is.
  http::Request first = s.from_network("GET", kConfigMaps);
  auto held = s.api->serve(first);
  REQUIRE(held.status == 200);
  REQUIRE(held.body_bytes().size() > 128 * 1024);
  CHECK(s.call("GET", kConfigMaps).status == 429);
  CHECK(s.call("GET", kConfigMaps + std::string("/cm1")).status == 429);
  // Writes are held to their own count, not to the readers' bytes.
  CHECK(s.call("POST", kConfigMaps, R"({"metadata":{"name":"more"}})").status == 201);

  held = http::Response{};
  CHECK(s.call("GET", kConfigMaps).status == 200);
  CHECK(s.call("GET", kConfigMaps + std::string("/cm1")).status == 200);
}

}  // namespace
}  // namespace vkube::apiserver
