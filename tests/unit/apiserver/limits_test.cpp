// One request may not crash or balloon the API server: depth, JSON patch
// operations and copies, CRD schema depth, and objects stored too deep
// before the limits existed (docs/api.md, "Limits").
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "support/api_server.h"
#include "vkube/api/limits.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

struct Server : testing::ApiServerOverStore {
  Server() {
    REQUIRE(call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"w"}})").status == 201);
    REQUIRE(call("POST", "/api/v1/namespaces/w/configmaps",
                 R"({"metadata":{"name":"cm","annotations":{"a":"x"}},"data":{"k":"v"}})")
                .status == 201);
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
  http::Response json_patch(const std::string& ops) {
    return call("PATCH", kConfigMap, ops, "application/json-patch+json");
  }
  static constexpr const char* kConfigMap = "/api/v1/namespaces/w/configmaps/cm";
};

// `depth` nested arrays around 1, as text: no recursive dump needed.
std::string nested_arrays(size_t depth) {
  return std::string(depth, '[') + "1" + std::string(depth, ']');
}

// An openAPIV3Schema nesting `levels` objects through properties.x.
std::string deep_schema(size_t levels) {
  std::string open, close;
  for (size_t i = 0; i < levels; ++i) {
    open += R"({"type":"object","properties":{"x":)";
    close += "}}";
  }
  return open + R"({"type":"string"})" + close;
}

std::string crd_with_schema(const std::string& schema) {
  return R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
    "metadata":{"name":"deeps.example.com"},
    "spec":{"group":"example.com","scope":"Namespaced",
      "names":{"plural":"deeps","kind":"Deep"},
      "versions":[{"name":"v1","served":true,"storage":true,
        "schema":{"openAPIV3Schema":)" +
         schema + "}}]}}";
}

TEST_CASE("json_depth counts levels as the text's brackets do", "[apiserver][limits]") {
  CHECK(api::json_depth(json(1)) == 0);
  CHECK(api::json_depth(json::object()) == 1);
  CHECK(api::json_depth(json::parse(R"({"a":[{"b":[]}],"c":1})")) == 4);
  // Measured without recursion, and stopping just past the limit.
  json deep = json::parse(nested_arrays(200000));
  CHECK(api::json_depth(deep, 1000) == 1001);
  CHECK_FALSE(api::within_nesting_limit(deep));
}

TEST_CASE("JSON patches are held to kube's limits", "[apiserver][limits][patch]") {
  Server s;

  SECTION("more than 10,000 operations are 413 with kube's message") {
    std::string ops = "[";
    for (int i = 0; i < 20000; ++i)
      ops += std::string(i ? "," : "") + R"({"op":"add","path":"/metadata/labels/l)" +
             std::to_string(i % 50) + R"(","value":"v"})";
    auto r = s.json_patch(ops + "]");
    INFO(r.body);
    CHECK(r.status == 413);
    CHECK(json::parse(r.body)["message"] ==
          "Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
          "got 20000");
  }
  SECTION("exactly 10,000 operations apply") {
    std::string ops = R"([{"op":"add","path":"/metadata/labels","value":{}})";
    for (int i = 1; i < 10000; ++i)
      ops += R"(,{"op":"add","path":"/metadata/labels/l)" + std::to_string(i % 50) +
             R"(","value":"v"})";
    auto r = s.json_patch(ops + "]");
    INFO(r.body.substr(0, 400));
    CHECK(r.status == 200);
  }
  SECTION("copies adding more than 3 MiB together are 422 (a 2 KB patch no longer builds GiBs)") {
    // Each copy of the list into itself doubles it: 13 of them would build 8 MiB.
    std::string ops =
        R"([{"op":"add","path":"/data/list","value":[")" + std::string(1024, 'x') + R"("]})";
    for (int i = 0; i < 13; ++i)
      ops += R"(,{"op":"copy","from":"/data/list","path":"/data/list/-"})";
    auto r = s.json_patch(ops + "]");
    INFO(r.body.substr(0, 400));
    CHECK(r.status == 422);
    CHECK_THAT(json::parse(r.body)["message"].get<std::string>(),
               Catch::Contains("Unable to complete the copy, the accumulated size increase of "
                               "copy is") &&
                   Catch::Contains("exceeding the limit 3145728"));
  }
  SECTION("copying a value into itself cannot nest the object past 1,000 levels") {
    // Each copy puts /metadata/annotations/d inside its own deepest object,
    // doubling its depth: 15 copies would nest it ~16,000 levels deep.
    std::string ops = R"([{"op":"add","path":"/metadata/annotations/d","value":{}})";
    std::string deepest = "/metadata/annotations/d";
    for (int i = 0; i < 15; ++i) {
      ops += R"(,{"op":"copy","from":"/metadata/annotations/d","path":")" + deepest + R"(/d"})";
      std::string below = deepest.substr(std::string("/metadata/annotations").size());
      deepest += below;  // the copy's own deepest object now lies this far below
    }
    auto r = s.json_patch(ops + "]");
    INFO(r.body.substr(0, 400));
    CHECK(r.status == 422);
    CHECK_THAT(json::parse(r.body)["message"].get<std::string>(),
               Catch::Contains("deeper than 1000 levels"));
    // Nothing was written.
    auto got = json::parse(s.call("GET", Server::kConfigMap).body);
    CHECK(got["metadata"]["annotations"] == json({{"a", "x"}}));
  }
  SECTION("ordinary operations keep working, with kube's errors") {
    auto ok = s.json_patch(R"([{"op":"replace","path":"/data/k","value":"w"},
        {"op":"copy","from":"/data/k","path":"/data/c"},{"op":"move","from":"/data/c","path":"/data/m"},
        {"op":"test","path":"/data/m","value":"w"},{"op":"remove","path":"/metadata/annotations/a"}])");
    INFO(ok.body);
    REQUIRE(ok.status == 200);
    CHECK(json::parse(ok.body)["data"] == json({{"k", "w"}, {"m", "w"}}));
    auto failed = s.json_patch(R"([{"op":"test","path":"/data/k","value":"nope"}])");
    CHECK(failed.status == 422);
    CHECK_THAT(json::parse(failed.body)["message"].get<std::string>(),
               Catch::Contains("testing value /data/k failed"));
    CHECK(s.json_patch(R"([{"op":"remove","path":"/data/missing"}])").status == 422);
    CHECK(s.json_patch(R"({"op":"remove"})").status == 400);
  }
}

TEST_CASE("applied configurations are measured once decoded from YAML", "[apiserver][limits]") {
  Server s;
  // Block-style YAML has no brackets for the transport's text check to count.
  std::string yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n";
  std::string indent = "  ";
  for (int i = 0; i < 1200; ++i) {
    yaml += indent + "d:\n";
    indent += "  ";
  }
  yaml += indent + "x: y\n";
  auto r = s.call("PATCH", Server::kConfigMap + std::string("?fieldManager=t"), yaml,
                  "application/apply-patch+yaml");
  INFO(r.body.substr(0, 400));
  // The YAML decoder may stop it first; either way it is a 400 before any walk.
  CHECK(r.status == 400);
  CHECK_THAT(json::parse(r.body)["message"].get<std::string>(),
             Catch::StartsWith("error decoding YAML: "));
}

TEST_CASE("CRD schemas deeper than 500 levels are refused at create", "[apiserver][limits][crd]") {
  Server s;
  // 300 property levels: 601 JSON levels, within the request limit.
  auto r = s.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                  crd_with_schema(deep_schema(300)));
  INFO(r.body.substr(0, 600));
  CHECK(r.status == 422);
  CHECK_THAT(json::parse(r.body)["message"].get<std::string>(),
             Catch::Contains("spec.versions[0].schema.openAPIV3Schema: Forbidden: must not nest "
                             "objects or arrays deeper than 500 levels"));
  // A deep but reasonable schema is accepted.
  auto ok = s.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                   crd_with_schema(deep_schema(100)));
  INFO(ok.body.substr(0, 600));
  CHECK(ok.status == 201);
}

TEST_CASE("an object stored deeper than the limits can be read and deleted, not crash writes",
          "[apiserver][limits]") {
  Server s;
  const std::string key = "/registry/core/configmaps/w/cm";
  auto kv = s.store->get(key);
  REQUIRE(kv.is_ok());
  // Written past the API, as a store from before the limits may hold it.
  std::string deep = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm",)"
                     R"("namespace":"w","uid":"u1","creationTimestamp":"2024-01-01T00:00:00Z"},)"
                     R"("data":{"k":"v"},"extra":)" +
                     nested_arrays(15000) + "}";
  REQUIRE(s.store->update(key, deep, kv->mod_revision).is_ok());

  auto got = s.call("GET", Server::kConfigMap);
  CHECK(got.status == 200);
  auto listed = s.call("GET", "/api/v1/namespaces/w/configmaps");
  CHECK(listed.status == 200);
  http::Request table = testing::request("GET", "/api/v1/namespaces/w/configmaps");
  table.peer = http::PeerCertificate{"admin", {"system:masters"}};
  table.headers.push_back({"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"});
  CHECK(s.api->handle(table).status == 200);

  for (const char* type :
       {"application/merge-patch+json", "application/strategic-merge-patch+json"}) {
    auto p = s.call("PATCH", Server::kConfigMap, R"({"data":{"k":"w"}})", type);
    INFO(p.body.substr(0, 400));
    CHECK(p.status == 422);
    CHECK_THAT(p.body, Catch::Contains("deeper than 1016 levels"));
  }
  auto put = s.call("PUT", Server::kConfigMap,
                    R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{}})");
  CHECK(put.status == 422);
  auto applied = s.call("PATCH", Server::kConfigMap + std::string("?fieldManager=t"),
                        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: w\n",
                        "application/apply-patch+yaml");
  CHECK(applied.status == 422);
  CHECK(s.call("DELETE", Server::kConfigMap).status == 200);
  CHECK(s.call("GET", Server::kConfigMap).status == 404);
}

}  // namespace
}  // namespace vkube::apiserver
