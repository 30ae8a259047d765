// Writes as kubectl and helm make them, through the API server's whole
// chain over a real store: strategic merge patches driven by the type
// registry's merge keys, fieldValidation, and protobuf bodies.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/api_server.h"
#include "vkube/schema/protobuf.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

struct Server : testing::ApiServerOverStore {
  Server() {
    REQUIRE(call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"w"}})").status == 201);
  }

  http::Response call(const std::string& method, const std::string& target, std::string body = "",
                      std::string content_type = "application/json") {
    http::Request req = testing::request(method, target);
    req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    if (!body.empty()) {
      req.body = std::move(body);
      req.headers.push_back({"Content-Type", content_type});
    }
    return api->handle(req);
  }
  json patch(const std::string& path, const json& p, int want = 200) {
    auto r = call("PATCH", path, p.dump(), "application/strategic-merge-patch+json");
    INFO(r.body);
    REQUIRE(r.status == want);
    return json::parse(r.body);
  }
};

const char* kDeployment = R"({
  "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "w"},
  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
    "template": {"metadata": {"labels": {"app": "web"}},
      "spec": {"containers": [
        {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
         "ports": [{"containerPort": 80}]},
        {"name": "sidecar", "image": "side:1"}],
        "tolerations": [{"key": "gpu", "operator": "Exists"}]}}}})";

const std::string kPath = "/apis/apps/v1/namespaces/w/deployments/web";

std::string content_type(const http::Response& r) {
  for (const auto& h : r.headers)
    if (h.name == "Content-Type") return h.value;
  return {};
}

TEST_CASE("strategic merge patches merge lists by their merge keys", "[apiserver][patch]") {
  Server s;
  REQUIRE(s.call("POST", "/apis/apps/v1/namespaces/w/deployments", kDeployment).status == 201);

  SECTION("a container is merged by name, its env by name, untouched lists stay") {
    json out = s.patch(kPath, {{"spec", {{"template", {{"spec", {{"containers",
        {{{"name", "app"}, {"image", "app:2"}, {"env", {{{"name", "B"}, {"value", "3"}}}}}}}}}}}}}});
    const json& cs = out["spec"]["template"]["spec"]["containers"];
    REQUIRE(cs.size() == 2);
    CHECK(cs[0]["image"] == "app:2");
    CHECK(cs[0]["env"] == json::parse(R"([{"name":"A","value":"1"},{"name":"B","value":"3"}])"));
    CHECK(cs[1]["name"] == "sidecar");
  }
  SECTION("$patch: delete removes one element; atomic lists are replaced") {
    json out = s.patch(kPath, json::parse(R"({"spec":{"template":{"spec":{
        "containers":[{"name":"sidecar","$patch":"delete"}],
        "tolerations":[{"key":"other","operator":"Exists"}]}}}})"));
    const json& spec = out["spec"]["template"]["spec"];
    REQUIRE(spec["containers"].size() == 1);
    CHECK(spec["containers"][0]["name"] == "app");
    CHECK(spec["tolerations"] == json::parse(R"([{"key":"other","operator":"Exists"}])"));
  }
  SECTION("$setElementOrder orders, $retainKeys drops, $deleteFromPrimitiveList removes") {
    json out = s.patch(kPath, json::parse(R"({"metadata":{"finalizers":["a/x","b/y"]}})"));
    CHECK(out["metadata"]["finalizers"] == json::parse(R"(["a/x","b/y"])"));
    out = s.patch(kPath, json::parse(R"({
        "metadata":{"$deleteFromPrimitiveList/finalizers":["a/x"]},
        "spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"},
          "template":{"spec":{"$setElementOrder/containers":[{"name":"sidecar"},{"name":"app"}]}}}})"));
    CHECK(out["metadata"]["finalizers"] == json::parse(R"(["b/y"])"));
    CHECK(out["spec"]["strategy"] == json{{"type", "Recreate"}});
    CHECK(out["spec"]["template"]["spec"]["containers"][0]["name"] == "sidecar");
  }
  SECTION("an element without its merge key is a 400") {
    auto r = s.call("PATCH", kPath, R"({"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}})",
                    "application/strategic-merge-patch+json");
    CHECK(r.status == 400);
    CHECK_THAT(r.body, Catch::Contains("does not contain declared merge key: name"));
  }
}

TEST_CASE("fieldValidation Strict refuses, Warn warns, Ignore drops unknown fields", "[apiserver]") {
  Server s;
  const std::string cm = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","nmae":"x"},
                            "data":{"a":"1"},"dta":{}})";
  auto strict = s.call("POST", "/api/v1/namespaces/w/configmaps?fieldValidation=Strict", cm);
  CHECK(strict.status == 400);
  CHECK_THAT(strict.body, Catch::Contains(
      R"(ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"dta\", unknown field \"metadata.nmae\")"));
  CHECK(s.call("GET", "/api/v1/namespaces/w/configmaps/c").status == 404);

  auto dup = s.call("POST", "/api/v1/namespaces/w/configmaps?fieldValidation=Strict",
                    R"({"metadata":{"name":"d","name":"e"}})");
  CHECK(dup.status == 400);
  CHECK_THAT(dup.body, Catch::Contains(R"(duplicate field \"metadata.name\")"));

  auto warn = s.call("POST", "/api/v1/namespaces/w/configmaps", cm);
  REQUIRE(warn.status == 201);
  std::vector<std::string> warnings;
  for (auto& h : warn.headers)
    if (h.name == "Warning") warnings.push_back(h.value);
  CHECK(warnings == std::vector<std::string>{R"(299 - "unknown field \"dta\"")",
                                             R"(299 - "unknown field \"metadata.nmae\"")"});
  json stored = json::parse(s.call("GET", "/api/v1/namespaces/w/configmaps/c").body);
  CHECK_FALSE(stored.contains("dta"));
  CHECK_FALSE(stored["metadata"].contains("nmae"));
  CHECK(stored["data"] == json{{"a", "1"}});

  auto bad = s.call("POST", "/api/v1/namespaces/w/configmaps?fieldValidation=Loose", cm);
  CHECK(bad.status == 400);
}

TEST_CASE("protobuf bodies create objects and protobuf is answered when preferred", "[apiserver]") {
  Server s;
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "sh.helm.release.v1.demo.v1"}, {"labels", {{"owner", "helm"}}}}},
                 {"type", "helm.sh/release.v1"},
                 {"data", {{"release", "SDRzSUFBQUFBQUFD"}}}};
  auto body = schema::encode_object(secret);
  REQUIRE(body.is_ok());
  auto r = s.call("POST", "/api/v1/namespaces/w/secrets", *body, "application/vnd.kubernetes.protobuf");
  INFO(r.body);
  REQUIRE(r.status == 201);
  json created = json::parse(r.body);
  CHECK(created["data"]["release"] == "SDRzSUFBQUFBQUFD");
  CHECK(created["metadata"]["labels"]["owner"] == "helm");

  http::Request get = testing::request("GET", "/api/v1/namespaces/w/secrets/sh.helm.release.v1.demo.v1");
  get.peer = http::PeerCertificate{"admin", {"system:masters"}};
  get.headers.push_back({"Accept", "application/vnd.kubernetes.protobuf, */*"});
  auto pr = s.api->handle(get);
  REQUIRE(pr.status == 200);
  CHECK(content_type(pr) == "application/vnd.kubernetes.protobuf");
  auto decoded = schema::decode_object(pr.body);
  REQUIRE(decoded.is_ok());
  CHECK((*decoded)["type"] == "helm.sh/release.v1");
  CHECK((*decoded)["metadata"]["uid"] == created["metadata"]["uid"]);

  // Deleting with a protobuf DeleteOptions (helm uninstall).
  json opts = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}};
  auto del = s.call("DELETE", "/api/v1/namespaces/w/secrets/sh.helm.release.v1.demo.v1",
                    *schema::encode_object(opts), "application/vnd.kubernetes.protobuf");
  CHECK(del.status == 200);

  auto corrupt = s.call("POST", "/api/v1/namespaces/w/secrets", body->substr(0, body->size() / 2),
                        "application/vnd.kubernetes.protobuf");
  CHECK(corrupt.status == 400);
}

}  // namespace
}  // namespace vkube::apiserver

namespace vkube::apiserver {
namespace {

TEST_CASE("a create answers with the object as a GET then reads it, in the form asked for",
          "[apiserver]") {
  Server s;
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "settings"}, {"labels", {{"app", "web"}}}}},
             {"data", {{"metadata", "{\"x\":1}"}, {"z", "last"}}}};
  auto r = s.call("POST", "/api/v1/namespaces/w/configmaps", cm.dump());
  INFO(r.body);
  REQUIRE(r.status == 201);
  CHECK(content_type(r) == "application/json");
  json created = json::parse(r.body);
  auto got = s.call("GET", "/api/v1/namespaces/w/configmaps/settings");
  REQUIRE(got.status == 200);
  CHECK(created == json::parse(got.body));
  CHECK(created["apiVersion"] == "v1");
  CHECK(created["kind"] == "ConfigMap");
  CHECK(created["data"]["metadata"] == "{\"x\":1}");
  CHECK_FALSE(created["metadata"]["resourceVersion"].get<std::string>().empty());
  CHECK(created["metadata"]["managedFields"].size() == 1);

  http::Request table = testing::request("POST", "/api/v1/namespaces/w/configmaps");
  table.peer = http::PeerCertificate{"admin", {"system:masters"}};
  table.headers.push_back({"Content-Type", "application/json"});
  table.headers.push_back({"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"});
  cm["metadata"]["name"] = "as-table";
  table.body = cm.dump();
  auto t = s.api->handle(table);
  REQUIRE(t.status == 201);
  json rows = json::parse(t.body);
  CHECK(rows["kind"] == "Table");
  CHECK(rows["rows"][0]["cells"][0] == "as-table");
}

TEST_CASE("a create served for the transport answers once its write commits", "[apiserver]") {
  // serve() hands a POST's answer over as a DeferredResponse; metrics, the
  // in-flight gauge and errors come with the final answer.
  Server s;
  auto post = [&](const std::string& name) {
    http::Request req = testing::request("POST", "/api/v1/namespaces/w/configmaps");
    req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    req.remote = "127.0.0.1:40000";  // from the network: counted in flight
    req.headers.push_back({"Content-Type", "application/json"});
    req.body = json{{"metadata", {{"name", name}}}, {"data", {{"a", "1"}}}}.dump();
    return s.api->serve(req);
  };
  http::Response first = post("once");
  REQUIRE(first.deferred);
  first = http::DeferredResponse::wait(std::move(first));
  INFO(first.body);
  CHECK(first.status == 201);
  CHECK(json::parse(first.body)["metadata"]["name"] == "once");

  http::Response again = http::DeferredResponse::wait(post("once"));
  CHECK(again.status == 409);
  json status = json::parse(again.body);
  CHECK(status["kind"] == "Status");
  CHECK(status["reason"] == "AlreadyExists");
  CHECK(status["message"] == "configmaps \"once\" already exists");
  CHECK(status["details"] == json{{"name", "once"}, {"kind", "configmaps"}});

  first = again = http::Response{};  // sent: an answer holds its slot until then
  std::string metrics = s.call("GET", "/metrics").body;
  CHECK_THAT(
      metrics,
      Catch::Contains(
          "apiserver_request_total{verb=\"create\",resource=\"configmaps\",code=\"201\"} 1\n"));
  CHECK_THAT(
      metrics,
      Catch::Contains(
          "apiserver_request_total{verb=\"create\",resource=\"configmaps\",code=\"409\"} 1\n"));
  // Nothing is in flight: the creates' slots went with their answers, and
  // the scrape is an in-process call, which is not counted.
  CHECK_THAT(metrics, Catch::Contains("apiserver_current_inflight_requests 0\n"));
}

TEST_CASE("bodies nested absurdly deep are refused and not recursed into", "[apiserver]") {
  Server s;
  std::string deep = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"},"data":)";
  for (int i = 0; i < 200000; ++i) deep += "{\"a\":";
  deep += "1";
  for (int i = 0; i < 200000; ++i) deep += "}";
  deep += "}";
  auto r = s.call("POST", "/api/v1/namespaces/w/configmaps", deep);
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains("deeper than 1000 levels"));
  std::string patch(300000, '[');
  auto p = s.call("PATCH", "/api/v1/namespaces/w/configmaps/d", patch, "application/merge-patch+json");
  CHECK(p.status == 400);
}

}  // namespace
}  // namespace vkube::apiserver
