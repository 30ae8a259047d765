// The Endpoints and EndpointSlice controllers over a real API server: the
// addresses of ready and not-ready pods, named target ports, pods coming and
// going, terminating pods, headless and selector-less services, and slices
// (conditions, ownership, in-place updates, 100 endpoints per slice).
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <set>

#include "support/control_plane.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;
using testing::ControlPlane;
using namespace std::chrono_literals;

const std::string kPods = "/api/v1/namespaces/w/pods";
const std::string kServices = "/api/v1/namespaces/w/services";
const std::string kEndpoints = "/api/v1/namespaces/w/endpoints";
const std::string kSlices = "/apis/discovery.k8s.io/v1/namespaces/w/endpointslices";

json pod(const std::string& name, const json& labels = {{"app", "web"}}) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec",
           {{"containers",
             {{{"name", "web"},
               {"image", "nginx"},
               {"ports", {{{"name", "http"}, {"containerPort", 8080}}}}}}}}}};
}

json service(const std::string& name, const json& selector = {{"app", "web"}},
             const json& target_port = "http") {
  json svc = {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", {{"name", name}, {"labels", {{"tier", "front"}}}}},
      {"spec", {{"ports", {{{"name", "web"}, {"port", 80}, {"targetPort", target_port}}}}}}};
  if (!selector.is_null()) svc["spec"]["selector"] = selector;
  return svc;
}

bool settle(ControlPlane& cp) {
  return cp.manager->wait_idle(10s);
}

std::string pod_ip(ControlPlane& cp, const std::string& name) {
  return cp.get(kPods + "/" + name)["status"]["podIP"];
}

// ip -> pod name, from one list of EndpointAddresses.
std::map<std::string, std::string> addresses(const json& subset, const char* field) {
  std::map<std::string, std::string> out;
  for (const json& a : subset.value(field, json::array()))
    out[a["ip"].get<std::string>()] = a["targetRef"]["name"].get<std::string>();
  return out;
}

std::vector<json> managed_slices(ControlPlane& cp, const std::string& svc) {
  return cp.items(kSlices + "?labelSelector=kubernetes.io%2Fservice-name%3D" + svc);
}

TEST_CASE("endpoints list ready and not-ready pods on the named target port",
          "[controllers][endpoints]") {
  ControlPlane cp({"endpoints"});
  for (const char* name : {"a", "b", "c", "pending"}) cp.create(kPods, pod(name));
  cp.create(kPods, pod("other", {{"app", "db"}}));
  cp.set_pod_status("w", "a", "Running", true);
  cp.set_pod_status("w", "b", "Running", true);
  cp.set_pod_status("w", "c", "Running", false);
  cp.set_pod_status("w", "other", "Running", true);
  json svc = cp.create(kServices, service("web"));
  REQUIRE(settle(cp));

  json ep = cp.get(kEndpoints + "/web");
  CHECK(ep["metadata"]["labels"] == json{{"tier", "front"}});
  CHECK(ep["metadata"]["annotations"].contains("endpoints.kubernetes.io/last-change-trigger-time"));
  CHECK_FALSE(ep["metadata"].contains("ownerReferences"));
  REQUIRE(ep["subsets"].size() == 1);
  const json& subset = ep["subsets"][0];
  CHECK(addresses(subset, "addresses") ==
        std::map<std::string, std::string>{{pod_ip(cp, "a"), "a"}, {pod_ip(cp, "b"), "b"}});
  CHECK(addresses(subset, "notReadyAddresses") ==
        std::map<std::string, std::string>{{pod_ip(cp, "c"), "c"}});
  CHECK(subset["ports"] == json::array({{{"name", "web"}, {"port", 8080}, {"protocol", "TCP"}}}));
  const json& ref = subset["addresses"][0]["targetRef"];
  CHECK(ref["kind"] == "Pod");
  CHECK(ref["namespace"] == "w");
  CHECK(ref["uid"] == cp.get(kPods + "/" + ref["name"].get<std::string>())["metadata"]["uid"]);

  // Readiness changes move a pod between the lists; a deleted pod leaves.
  cp.set_pod_status("w", "c", "Running", true);
  REQUIRE(cp.call("DELETE", kPods + "/a").code == 200);
  REQUIRE(settle(cp));
  json s = cp.get(kEndpoints + "/web")["subsets"][0];
  CHECK(addresses(s, "addresses") ==
        std::map<std::string, std::string>{{pod_ip(cp, "b"), "b"}, {pod_ip(cp, "c"), "c"}});
  CHECK_FALSE(s.contains("notReadyAddresses"));

  // A terminating pod is no endpoint; publishNotReadyAddresses lists everyone.
  json finalized = cp.get(kPods + "/b");
  finalized["metadata"]["finalizers"] = {"test/hold"};
  REQUIRE(cp.call("PUT", kPods + "/b", finalized).code == 200);
  REQUIRE(cp.call("DELETE", kPods + "/b").code == 200);
  cp.set_pod_status("w", "c", "Running", false);
  REQUIRE(settle(cp));
  s = cp.get(kEndpoints + "/web")["subsets"][0];
  CHECK_FALSE(s.contains("addresses"));
  CHECK(addresses(s, "notReadyAddresses") ==
        std::map<std::string, std::string>{{pod_ip(cp, "c"), "c"}});
  REQUIRE(cp.call("PATCH", kServices + "/web", {{"spec", {{"publishNotReadyAddresses", true}}}},
                  "application/merge-patch+json")
              .code == 200);
  REQUIRE(settle(cp));
  s = cp.get(kEndpoints + "/web")["subsets"][0];
  CHECK(addresses(s, "addresses") ==
        std::map<std::string, std::string>{{pod_ip(cp, "b"), "b"}, {pod_ip(cp, "c"), "c"}});
}

TEST_CASE("endpoints follow their service: numeric ports, headless, deletion, no selector",
          "[controllers][endpoints]") {
  ControlPlane cp({"endpoints"});
  cp.create(kPods, pod("a"));
  cp.set_pod_status("w", "a", "Running", true);
  json headless = service("db", {{"app", "web"}}, 5432);
  headless["spec"]["clusterIP"] = "None";
  cp.create(kServices, headless);
  cp.create(kServices, service("manual", nullptr));
  json user_ep = {
      {"metadata", {{"name", "manual"}}},
      {"subsets", {{{"addresses", {{{"ip", "192.0.2.1"}}}}, {"ports", {{{"port", 9}}}}}}}};
  cp.create(kEndpoints, user_ep);
  REQUIRE(settle(cp));

  json ep = cp.get(kEndpoints + "/db");
  CHECK(ep["metadata"]["labels"] ==
        json{{"tier", "front"}, {"service.kubernetes.io/headless", ""}});
  CHECK(ep["subsets"][0]["ports"][0]["port"] == 5432);
  CHECK(addresses(ep["subsets"][0], "addresses") ==
        std::map<std::string, std::string>{{pod_ip(cp, "a"), "a"}});
  // A service without a selector keeps the Endpoints its user wrote.
  CHECK(cp.get(kEndpoints + "/manual")["subsets"][0]["addresses"][0]["ip"] == "192.0.2.1");

  // Deleted Endpoints come back; a deleted service takes its Endpoints along.
  REQUIRE(cp.call("DELETE", kEndpoints + "/db").code == 200);
  REQUIRE(settle(cp));
  CHECK(cp.call("GET", kEndpoints + "/db").code == 200);
  REQUIRE(cp.call("DELETE", kServices + "/db").code == 200);
  REQUIRE(settle(cp));
  CHECK(cp.call("GET", kEndpoints + "/db").code == 404);

  // A pod whose port name no service port targets contributes no subset.
  cp.create(kServices, service("nomatch", {{"app", "web"}}, "grpc"));
  REQUIRE(settle(cp));
  ep = cp.get(kEndpoints + "/nomatch");
  CHECK_FALSE(ep.contains("subsets"));
}

TEST_CASE("endpoint slices carry conditions, ownership and are updated in place",
          "[controllers][endpointslice]") {
  ControlPlane cp({"endpointslice"});
  json svc = cp.create(kServices, service("web"));
  REQUIRE(settle(cp));
  // No pods yet: one empty placeholder slice.
  auto slices = managed_slices(cp, "web");
  REQUIRE(slices.size() == 1);
  CHECK(slices[0]["endpoints"].is_null());

  for (const char* name : {"a", "b"}) cp.create(kPods, pod(name));
  cp.set_pod_status("w", "a", "Running", true);
  cp.set_pod_status("w", "b", "Running", false);
  REQUIRE(settle(cp));
  slices = managed_slices(cp, "web");
  REQUIRE(slices.size() == 1);
  json slice = slices[0];
  const std::string name = slice["metadata"]["name"];
  CHECK(name.rfind("web-", 0) == 0);
  CHECK(slice["metadata"]["generateName"] == "web-");
  CHECK(slice["addressType"] == "IPv4");
  CHECK(slice["metadata"]["labels"] ==
        json{{"tier", "front"},
             {"kubernetes.io/service-name", "web"},
             {"endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io"}});
  json owner = slice["metadata"]["ownerReferences"][0];
  CHECK(owner["kind"] == "Service");
  CHECK(owner["apiVersion"] == "v1");
  CHECK(owner["uid"] == svc["metadata"]["uid"]);
  CHECK(owner["controller"] == true);
  CHECK(slice["ports"] == json::array({{{"name", "web"}, {"port", 8080}, {"protocol", "TCP"}}}));
  std::map<std::string, json> by_pod;
  for (const json& e : slice["endpoints"]) by_pod[e["targetRef"]["name"]] = e;
  REQUIRE(by_pod.size() == 2);
  CHECK(by_pod["a"]["addresses"] == json::array({pod_ip(cp, "a")}));
  CHECK(by_pod["a"]["conditions"] ==
        json{{"ready", true}, {"serving", true}, {"terminating", false}});
  CHECK(by_pod["b"]["conditions"] ==
        json{{"ready", false}, {"serving", false}, {"terminating", false}});

  // A terminating pod stays, serving but not ready; a deleted one goes. Same slice.
  json held = cp.get(kPods + "/a");
  held["metadata"]["finalizers"] = {"test/hold"};
  REQUIRE(cp.call("PUT", kPods + "/a", held).code == 200);
  REQUIRE(cp.call("DELETE", kPods + "/a").code == 200);
  REQUIRE(cp.call("DELETE", kPods + "/b").code == 200);
  REQUIRE(settle(cp));
  slices = managed_slices(cp, "web");
  REQUIRE(slices.size() == 1);
  CHECK(slices[0]["metadata"]["name"] == name);
  REQUIRE(slices[0]["endpoints"].size() == 1);
  CHECK(slices[0]["endpoints"][0]["targetRef"]["name"] == "a");
  CHECK(slices[0]["endpoints"][0]["conditions"] ==
        json{{"ready", false}, {"serving", true}, {"terminating", true}});

  // A slice someone deletes comes back.
  REQUIRE(cp.call("DELETE", kSlices + "/" + name).code == 200);
  REQUIRE(settle(cp));
  CHECK(managed_slices(cp, "web").size() == 1);
  // The service's deletion removes its slices.
  REQUIRE(cp.call("DELETE", kServices + "/web").code == 200);
  REQUIRE(settle(cp));
  CHECK(managed_slices(cp, "web").empty());
}

TEST_CASE("endpoint slices hold at most 100 endpoints and carry node and zone",
          "[controllers][endpointslice]") {
  ControlPlane cp({"endpointslice"});
  cp.create("/api/v1/nodes",
            {{"metadata", {{"name", "n1"}, {"labels", {{"topology.kubernetes.io/zone", "z1"}}}}}});
  for (int i = 0; i < 130; ++i) {
    json p = pod("p" + std::to_string(i));
    p["spec"]["nodeName"] = "n1";
    cp.create(kPods, p);
  }
  cp.mark_pods_ready("w");
  cp.create(kServices, service("web", {{"app", "web"}}, 8080));
  REQUIRE(settle(cp));
  auto slices = managed_slices(cp, "web");
  std::multiset<size_t> sizes;
  std::set<std::string> pods;
  for (const json& s : slices) {
    sizes.insert(s["endpoints"].size());
    for (const json& e : s["endpoints"]) {
      pods.insert(e["targetRef"]["name"].get<std::string>());
      CHECK(e["nodeName"] == "n1");
      CHECK(e["zone"] == "z1");
    }
  }
  CHECK(sizes == std::multiset<size_t>{30, 100});
  CHECK(pods.size() == 130);
}

}  // namespace
}  // namespace vkube::controllers
