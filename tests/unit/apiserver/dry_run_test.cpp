// dryRun wherever kube reads it (the query, a DeleteOptions body), for
// deletions of every shape: nothing is written, so the store's revision (every
// LIST's resourceVersion) stays where it was and no watcher hears of it.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/admin_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

const std::string kMaps = "/api/v1/namespaces/w/configmaps";
const std::string kPods = "/api/v1/namespaces/w/pods";
const json kDryRun = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"dryRun", {"All"}}};

struct Server : testing::AdminApiServer {
  Server() { make_namespace("w"); }

  // The store's revision: a LIST is read at it.
  std::string revision() { return get("/api/v1/namespaces")["metadata"]["resourceVersion"]; }
  void config_map(const std::string& name, const json& finalizers = nullptr) {
    json m = {{"metadata", {{"name", name}}}, {"data", {{"k", "v"}}}};
    if (!finalizers.is_null()) m["metadata"]["finalizers"] = finalizers;
    REQUIRE(call("POST", kMaps, m).status == 201);
  }
};

TEST_CASE("dryRun in a DELETE's body deletes nothing", "[apiserver][dryrun]") {
  Server s;
  s.config_map("a");
  s.config_map("b");
  s.config_map("held", json::array({"example.com/hold"}));
  json pod = {{"metadata", {{"name", "p"}}},
              {"spec", {{"nodeName", "n1"}, {"containers", {{{"name", "c"}, {"image", "x"}}}}}}};
  REQUIRE(s.call("POST", kPods, pod).status == 201);
  const std::string before = s.revision();

  SECTION("one object") {
    auto r = s.call("DELETE", kMaps + "/a", kDryRun);
    INFO(r.body);
    CHECK(r.status == 200);
  }
  SECTION("a collection") {
    auto r = s.call("DELETE", kMaps, kDryRun);
    CHECK(r.status == 200);
    CHECK(json::parse(r.body)["items"].size() == 3);
  }
  SECTION("with foreground or orphan propagation (no finalizer is added)") {
    json o = kDryRun;
    o["propagationPolicy"] = "Foreground";
    CHECK(s.call("DELETE", kMaps + "/a", o).status == 200);
    o["propagationPolicy"] = "Orphan";
    CHECK(s.call("DELETE", kMaps + "/b", o).status == 200);
    CHECK_FALSE(s.get(kMaps + "/a")["metadata"].contains("finalizers"));
  }
  SECTION("an object with finalizers is answered as marked, and is not") {
    auto r = s.call("DELETE", kMaps + "/held", kDryRun);
    REQUIRE(r.status == 200);
    CHECK(json::parse(r.body)["metadata"].contains("deletionTimestamp"));
    CHECK_FALSE(s.get(kMaps + "/held")["metadata"].contains("deletionTimestamp"));
  }
  SECTION("a pod on a node is not made to terminate") {
    CHECK(s.call("DELETE", kPods + "/p", kDryRun).status == 200);
    CHECK_FALSE(s.get(kPods + "/p")["metadata"].contains("deletionTimestamp"));
  }
  SECTION("a namespace stays Active") {
    CHECK(s.call("DELETE", "/api/v1/namespaces/w", kDryRun).status == 200);
    json ns = s.get("/api/v1/namespaces/w");
    CHECK_FALSE(ns["metadata"].contains("deletionTimestamp"));
    CHECK(ns["status"]["phase"] == "Active");
  }
  SECTION("the query parameter, as before") {
    CHECK(s.call("DELETE", kMaps + "/a?dryRun=All").status == 200);
    CHECK(s.call("DELETE", kMaps + "?dryRun=All").status == 200);
  }
  CHECK(s.get(kMaps)["items"].size() == 3);
  CHECK(s.call("GET", kPods + "/p").status == 200);
  CHECK(s.revision() == before);
}

TEST_CASE("unsupported dryRun values get kube's Invalid answer", "[apiserver][dryrun]") {
  Server s;
  s.config_map("a");

  SECTION("in a DeleteOptions body") {
    json o = {{"dryRun", {"Some"}}};
    auto r = s.call("DELETE", kMaps + "/a", o);
    REQUIRE(r.status == 422);
    json status = json::parse(r.body);
    CHECK(status["message"] ==
          "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Some\"]: "
          "supported values: \"All\"");
    CHECK(status["details"]["causes"][0]["field"] == "dryRun");
    CHECK(status["details"]["kind"] == "DeleteOptions");
  }
  SECTION("in a DELETE's query") {
    auto r = s.call("DELETE", kMaps + "/a?dryRun=true");
    REQUIRE(r.status == 422);
    CHECK(json::parse(r.body)["message"] ==
          "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"true\"]: "
          "supported values: \"All\"");
  }
  SECTION("in a create's query") {
    auto r = s.call("POST", kMaps + "?dryRun=true", {{"metadata", {{"name", "b"}}}});
    REQUIRE(r.status == 422);
    CHECK(json::parse(r.body)["message"] ==
          "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"true\"]: "
          "supported values: \"All\"");
    CHECK(s.call("GET", kMaps + "/b").status == 404);
  }
  SECTION("of the wrong type") {
    CHECK(s.call("DELETE", kMaps + "/a", {{"dryRun", "All"}}).status == 400);
  }
  CHECK(s.call("GET", kMaps + "/a").status == 200);
}

TEST_CASE("a dry-run Service create allocates no cluster IP", "[apiserver][dryrun]") {
  Server s;
  json svc = {{"metadata", {{"name", "web"}}},
              {"spec", {{"clusterIP", "10.96.0.50"}, {"ports", {{{"port", 80}}}}}}};
  const std::string path = "/api/v1/namespaces/w/services";
  CHECK(s.call("POST", path + "?dryRun=All", svc).status == 201);
  svc["metadata"]["name"] = "other";
  auto r = s.call("POST", path, svc);
  INFO(r.body);
  CHECK(r.status == 201);
}

}  // namespace
}  // namespace vkube::apiserver
