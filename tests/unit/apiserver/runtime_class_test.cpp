// RuntimeClass admission: node.k8s.io/v1 RuntimeClasses are served, a pod
// naming one that does not exist is refused in kube's words, and one that
// exists gives the pod its overhead and scheduling.
#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "support/admin_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

struct Server : testing::AdminApiServer {
  Server() { make_namespace("t"); }
};

}  // namespace

TEST_CASE("a pod naming an unknown RuntimeClass is refused", "[apiserver]") {
  Server s;
  auto r = s.call("POST", "/api/v1/namespaces/t/pods",
                  testing::nginx_pod("p", {{"runtimeClassName", "gvisor"}}));
  CHECK(r.status == 403);
  const json status = json::parse(r.body);
  CHECK(status["reason"] == "Forbidden");
  CHECK(status["message"] ==
        "pods \"p\" is forbidden: pod rejected: RuntimeClass \"gvisor\" not found");
  CHECK(s.call("GET", "/api/v1/namespaces/t/pods/p", nullptr).status == 404);
}

TEST_CASE("a RuntimeClass gives its pods overhead, node selector and tolerations", "[apiserver]") {
  Server s;
  json rc = {{"apiVersion", "node.k8s.io/v1"},
             {"kind", "RuntimeClass"},
             {"metadata", {{"name", "kata"}}},
             {"handler", "kata"},
             {"overhead", {{"podFixed", {{"cpu", "250m"}, {"memory", "120Mi"}}}}},
             {"scheduling",
              {{"nodeSelector", {{"runtime", "kata"}}},
               {"tolerations", {{{"key", "kata"}, {"operator", "Exists"}}}}}}};
  REQUIRE(s.call("POST", "/apis/node.k8s.io/v1/runtimeclasses", rc).status == 201);
  auto got = s.call("GET", "/apis/node.k8s.io/v1/runtimeclasses/kata", nullptr);
  REQUIRE(got.status == 200);
  CHECK(json::parse(got.body)["handler"] == "kata");

  auto r = s.call("POST", "/api/v1/namespaces/t/pods",
                  testing::nginx_pod("p", {{"runtimeClassName", "kata"}}));
  REQUIRE(r.status == 201);
  const json spec = json::parse(r.body)["spec"];
  CHECK(spec["overhead"] == json{{"cpu", "250m"}, {"memory", "120Mi"}});
  CHECK(spec["nodeSelector"] == json{{"runtime", "kata"}});
  // The class's toleration joins the defaults (not-ready, unreachable) kube adds too.
  const json& tolerations = spec["tolerations"];
  CHECK(std::count(tolerations.begin(), tolerations.end(),
                   json{{"key", "kata"}, {"operator", "Exists"}}) == 1);

  auto conflict = s.call("POST", "/api/v1/namespaces/t/pods",
                         testing::nginx_pod("q", {{"runtimeClassName", "kata"},
                                                  {"nodeSelector", {{"runtime", "runc"}}}}));
  CHECK(conflict.status == 403);
  CHECK(json::parse(conflict.body)["message"] ==
        "pods \"q\" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = "
        "kata; pod.spec.nodeSelector[runtime] = runc");

  auto overhead = s.call("POST", "/api/v1/namespaces/t/pods",
                         testing::nginx_pod("o", {{"overhead", {{"cpu", "1"}}}}));
  CHECK(overhead.status == 403);
  CHECK(json::parse(overhead.body)["message"] ==
        "pods \"o\" is forbidden: pod rejected: Pod Overhead set without corresponding "
        "RuntimeClass defined Overhead");
}

}  // namespace vkube::apiserver
