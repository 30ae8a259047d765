// Custom resources through the API server's whole chain over a real store:
// lists serve the stored JSON with only the resourceVersion added (a nested
// "metadata" is left alone), in the version asked for; a CRD registers and
// unregisters its kind, also across a restart.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/api_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

http::Response call(ApiServer& api, const std::string& method, const std::string& target,
                    const json& body = nullptr) {
  http::Request req = testing::request(method, target);
  req.peer = http::PeerCertificate{"admin", {"system:masters"}};
  if (!body.is_null()) {
    req.body = body.dump();
    req.headers.push_back({"Content-Type", "application/json"});
  }
  return api.handle(req);
}

const json kCrd = testing::boxes_crd();

TEST_CASE("custom resource lists splice only the top-level resourceVersion", "[apiserver][crd]") {
  testing::ApiServerOverStore s;
  REQUIRE(call(*s.api, "POST", "/api/v1/namespaces", {{"metadata", {{"name", "w"}}}}).status ==
          201);
  REQUIRE(call(*s.api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", kCrd)
              .status == 201);
  // "config" sorts before "metadata" and holds a "metadata" of its own.
  json box = {
      {"apiVersion", "example.com/v1"},
      {"kind", "Box"},
      {"metadata", {{"name", "b1"}}},
      {"config", {{"metadata", {{"name", "inner"}}}, {"note", "a \"metadata\":{ in text"}}}};
  auto created = call(*s.api, "POST", "/apis/example.com/v1/namespaces/w/boxes", box);
  REQUIRE(created.status == 201);
  // The create's answer (the stored bytes with the version spliced in) too.
  json answer = json::parse(created.body);
  CHECK_FALSE(answer["metadata"]["resourceVersion"].get<std::string>().empty());
  CHECK(answer["config"]["metadata"] == json{{"name", "inner"}});
  CHECK(answer["config"]["note"] == "a \"metadata\":{ in text");
  box["metadata"]["name"] = "b2";
  box["config"] = json::object();
  REQUIRE(call(*s.api, "POST", "/apis/example.com/v1/namespaces/w/boxes", box).status == 201);

  auto listed = call(*s.api, "GET", "/apis/example.com/v1/namespaces/w/boxes");
  REQUIRE(listed.status == 200);
  json list = json::parse(listed.body);
  CHECK(list["kind"] == "BoxList");
  REQUIRE(list["items"].size() == 2);
  const json& b1 = list["items"][0];
  CHECK(b1["metadata"]["resourceVersion"] ==
        json::parse(created.body)["metadata"]["resourceVersion"]);
  CHECK(b1["config"]["metadata"] == json{{"name", "inner"}});
  CHECK(b1["config"]["note"] == "a \"metadata\":{ in text");
  CHECK(list["items"][1]["metadata"].contains("resourceVersion"));
  CHECK(list["metadata"].contains("resourceVersion"));

  // Pages: limit and continue hold on the fast path too.
  json page =
      json::parse(call(*s.api, "GET", "/apis/example.com/v1/namespaces/w/boxes?limit=1").body);
  REQUIRE(page["items"].size() == 1);
  CHECK(page["items"][0]["metadata"]["name"] == "b1");
  std::string cont = page["metadata"].value("continue", "");
  REQUIRE_FALSE(cont.empty());
  page = json::parse(
      call(*s.api, "GET", "/apis/example.com/v1/namespaces/w/boxes?limit=1&continue=" + cont).body);
  REQUIRE(page["items"].size() == 1);
  CHECK(page["items"][0]["metadata"]["name"] == "b2");
  CHECK(page["metadata"].value("continue", "").empty());

  // The other version: same objects, shown in that version.
  json beta = json::parse(call(*s.api, "GET", "/apis/example.com/v1beta1/namespaces/w/boxes").body);
  REQUIRE(beta["items"].size() == 2);
  CHECK(beta["items"][0]["apiVersion"] == "example.com/v1beta1");
  CHECK(beta["items"][0]["config"]["metadata"]["name"] == "inner");

  // Label selectors still look into the objects.
  auto selected =
      call(*s.api, "GET", "/apis/example.com/v1/namespaces/w/boxes?labelSelector=x%3Dy");
  CHECK(json::parse(selected.body)["items"].empty());
}

TEST_CASE("a CRD's kind is served at once and goes with it", "[apiserver][crd]") {
  testing::ApiServerOverStore s;
  CHECK(call(*s.api, "GET", "/apis/example.com/v1/boxes").status == 404);
  REQUIRE(call(*s.api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", kCrd)
              .status == 201);
  CHECK(call(*s.api, "GET", "/apis/example.com/v1/boxes").status == 200);
  json groups = json::parse(call(*s.api, "GET", "/apis").body);
  bool found = false;
  for (const json& g : groups["groups"])
    if (g["name"] == "example.com") {
      found = true;
      CHECK(g["preferredVersion"]["version"] == "v1");
    }
  CHECK(found);
  auto doc = call(*s.api, "GET", "/openapi/v3/apis/example.com/v1");
  REQUIRE(doc.status == 200);
  CHECK(json::parse(doc.body)["components"]["schemas"].contains("com.example.v1.Box"));

  // A second server over the same store serves it from the stored CRD.
  auto again = ApiServer::create([&] {
    Options o;
    o.backend = s.store.get();
    return o;
  }());
  CHECK(call(*again, "GET", "/apis/example.com/v1/boxes").status == 200);
  again->shutdown();

  // Without objects, deletion is immediate once the finalizer is removed;
  // here nothing removes it (no controllers): the CRD stays Terminating and
  // new objects are refused.
  auto del = call(*s.api, "DELETE",
                  "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/boxes.example.com");
  CHECK(del.status == 200);
  json crd =
      json::parse(call(*s.api, "GET",
                       "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/boxes.example.com")
                      .body);
  CHECK(crd["metadata"]["finalizers"] ==
        json::array({"customresourcecleanup.apiextensions.k8s.io"}));
  REQUIRE(call(*s.api, "POST", "/api/v1/namespaces", {{"metadata", {{"name", "w"}}}}).status ==
          201);
  auto refused = call(*s.api, "POST", "/apis/example.com/v1/namespaces/w/boxes",
                      {{"metadata", {{"name", "late"}}}});
  CHECK(refused.status == 405);
  CHECK(refused.body.find("custom resource definition is terminating") != std::string::npos);
  // The finalizer removed: the CRD and its kind are gone.
  crd["metadata"]["finalizers"] = json::array();
  REQUIRE(call(*s.api, "PUT",
               "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/boxes.example.com", crd)
              .status == 200);
  CHECK(call(*s.api, "GET", "/apis/example.com/v1/boxes").status == 404);
}

}  // namespace
}  // namespace vkube::apiserver
