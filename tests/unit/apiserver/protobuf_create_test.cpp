// Creates sent and answered as protobuf (what kubectl create sends): they run
// on the transport's I/O thread and join the store's commit group, as JSON
// creates do, and the answer is the created object encoded as protobuf.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/api_server.h"
#include "vkube/schema/protobuf.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

constexpr const char* kProtobuf = "application/vnd.kubernetes.protobuf";
constexpr const char* kClientGoAccept = "application/vnd.kubernetes.protobuf,application/json";

http::Request admin_request(const std::string& method, const std::string& target) {
  http::Request req = testing::request(method, target);
  req.peer = http::PeerCertificate{"admin", {"system:masters"}};
  return req;
}

http::Request protobuf_create(const json& obj, const std::string& accept) {
  http::Request req = admin_request("POST", "/api/v1/namespaces/pb/configmaps");
  auto body = schema::encode_object(obj);
  REQUIRE(body.is_ok());
  req.body = std::move(*body);
  req.headers.push_back({"Content-Type", kProtobuf});
  req.headers.push_back({"Accept", accept});
  return req;
}

std::string header(const http::Response& r, const std::string& name) {
  for (const auto& h : r.headers)
    if (h.name == name) return h.value;
  return {};
}

// A server over a fresh store with the namespace "pb".
struct Server : testing::ApiServerOverStore {
  Server() {
    http::Request ns = admin_request("POST", "/api/v1/namespaces");
    ns.body = R"({"metadata":{"name":"pb"}})";
    ns.headers.push_back({"Content-Type", "application/json"});
    REQUIRE(api->handle(ns).status == 201);
  }
};

json configmap(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", {{"app", "pb"}}}}},
          {"data", {{"key", "value"}}}};
}

TEST_CASE("protobuf creates run on the I/O thread and answer protobuf once committed",
          "[apiserver][protobuf]") {
  Server s;
  http::Request req = protobuf_create(configmap("pb-inline"), kClientGoAccept);
  // The transport may run it without a handler thread: it never waits on the store.
  CHECK(s.api->serves_without_blocking(req));

  http::Response r = http::DeferredResponse::wait(s.api->serve(req));
  REQUIRE(r.status == 201);
  CHECK(header(r, "Content-Type") == kProtobuf);
  REQUIRE(r.body.starts_with(schema::kProtobufMagic));
  auto created = schema::decode_object(r.body);
  REQUIRE(created.is_ok());
  CHECK((*created)["kind"] == "ConfigMap");
  CHECK((*created)["metadata"]["name"] == "pb-inline");
  CHECK((*created)["metadata"]["namespace"] == "pb");
  CHECK((*created)["metadata"]["labels"]["app"] == "pb");
  CHECK((*created)["data"]["key"] == "value");
  CHECK(!(*created)["metadata"]["uid"].get<std::string>().empty());

  // The answer carries the revision the object was stored at.
  http::Request get = admin_request("GET", "/api/v1/namespaces/pb/configmaps/pb-inline");
  http::Response got = s.api->handle(get);
  REQUIRE(got.status == 200);
  json stored = json::parse(got.body);
  CHECK((*created)["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]);
  CHECK((*created)["metadata"]["uid"] == stored["metadata"]["uid"]);
  CHECK((*created)["metadata"]["creationTimestamp"] == stored["metadata"]["creationTimestamp"]);
}

TEST_CASE("a protobuf create of an existing name answers 409 AlreadyExists",
          "[apiserver][protobuf]") {
  Server s;
  http::Request first = protobuf_create(configmap("pb-twice"), kClientGoAccept);
  REQUIRE(s.api->handle(first).status == 201);
  http::Request again = protobuf_create(configmap("pb-twice"), kClientGoAccept);
  http::Response r = s.api->handle(again);
  CHECK(r.status == 409);
}

TEST_CASE("protobuf creates that want a Table still go to a handler thread",
          "[apiserver][protobuf]") {
  Server s;
  http::Request req =
      protobuf_create(configmap("pb-table"), "application/json;as=Table;v=v1;g=meta.k8s.io");
  CHECK_FALSE(s.api->serves_without_blocking(req));
  http::Response r = s.api->handle(req);
  REQUIRE(r.status == 201);
  CHECK(json::parse(r.body)["kind"] == "Table");
}

}  // namespace
}  // namespace vkube::apiserver
