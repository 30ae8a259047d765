// A create or update body kube's JSON decoder cannot read into its Go type
// is a 400 in kube's words (transformDecodeError around encoding/json's
// UnmarshalTypeError), and an object that fails validation is named by its
// GroupKind ("Deployment.apps"), as kube's raw messages are.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/admin_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;
using testing::message;

const std::string kCms = "/api/v1/namespaces/d/configmaps";
const std::string kDeploys = "/apis/apps/v1/namespaces/d/deployments";

json deployment(const std::string& name, const json& replicas) {
  json labels = {{"app", name}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", labels}}},
            {"template",
             {{"metadata", {{"labels", labels}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "nginx"}}}}}}}}}}};
}

struct Server : testing::AdminApiServer {
  Server() { make_namespace("d"); }
};

TEST_CASE("a create body of the wrong JSON type is kube's 400, not a 422",
          "[apiserver][decode-errors]") {
  Server s;
  auto cm = s.call("POST", kCms, {{"metadata", {{"name", "x"}}}, {"data", {{"a", 1}}}});
  CHECK(cm.status == 400);
  CHECK(json::parse(cm.body)["reason"] == "BadRequest");
  CHECK(message(cm) ==
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal "
        "number into Go struct field ConfigMap.data of type string");

  auto d = s.call("POST", kDeploys, deployment("d", "3"));
  CHECK(d.status == 400);
  CHECK(message(d) ==
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal "
        "string into Go struct field DeploymentSpec.spec.replicas of type int32");

  // A fraction where Go wants an integer names the number; a struct given a
  // scalar names the struct's Go type.
  CHECK(message(s.call("POST", kDeploys, deployment("d", 1.5))) ==
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal "
        "number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32");
  CHECK(message(s.call("POST", kDeploys, deployment("d", 3000000000LL))) ==
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal "
        "number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32");
  json bad_spec = deployment("d", 1);
  bad_spec["spec"] = "x";
  CHECK(message(s.call("POST", kDeploys, bad_spec)) ==
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal "
        "string into Go struct field Deployment.spec of type v1.DeploymentSpec");
  CHECK(s.call("GET", kCms + "/x").status == 404);
  CHECK(s.call("GET", kDeploys + "/d").status == 404);
}

TEST_CASE("an update body of the wrong JSON type is kube's 400 and changes nothing",
          "[apiserver][decode-errors]") {
  Server s;
  REQUIRE(s.call("POST", kCms, {{"metadata", {{"name", "x"}}}, {"data", {{"a", "1"}}}}).status ==
          201);
  json next = s.get(kCms + "/x");
  next["metadata"]["labels"] = "oops";
  auto r = s.call("PUT", kCms + "/x", next);
  CHECK(r.status == 400);
  CHECK(message(r) ==
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal "
        "string into Go struct field ObjectMeta.metadata.labels of type map[string]string");
  CHECK(s.get(kCms + "/x")["data"] == json{{"a", "1"}});
}

TEST_CASE("an invalid object is named by its GroupKind, a core one by its kind",
          "[apiserver][decode-errors]") {
  Server s;
  auto d = s.call("POST", kDeploys, deployment("d", -1));
  CHECK(d.status == 422);
  CHECK(message(d) ==
        "Deployment.apps \"d\" is invalid: spec.replicas: Invalid value: -1: must be greater than "
        "or equal to 0");
  // kubectl builds its "The Deployment ..." line from details.kind.
  CHECK(json::parse(d.body)["details"]["kind"] == "Deployment");
  CHECK(json::parse(d.body)["details"]["group"] == "apps");
  auto cm = s.call("POST", kCms, {{"metadata", {{"name", "x"}, {"labels", {{"bad key!", "v"}}}}}});
  CHECK(cm.status == 422);
  CHECK(message(cm).starts_with("ConfigMap \"x\" is invalid: metadata.labels: "));
}

}  // namespace
}  // namespace vkube::apiserver
