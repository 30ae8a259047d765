// The default/kubernetes Service: present with the first address of the
// service range and port 443 to the API server, its Endpoints and
// EndpointSlice naming the server, and put back when deleted or changed;
// --service-cluster-ip-range is checked as kube-apiserver checks it and
// decides where Services get their addresses.
#include <catch2/catch.hpp>

#include <chrono>

#include "support/admin_server.h"
#include "vkube/controllers/manager.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

struct Cluster {
  testing::AdminApiServer server;
  std::unique_ptr<ControllerManager> manager;

  explicit Cluster(const std::string& cidr) : server(options(cidr)) {
    server.make_namespace("default");
    ManagerOptions o;
    o.controllers = {"kubernetes-service"};
    o.service_cidr = cidr;
    o.api_address = "127.0.0.1";
    o.api_port = 6443;
    auto m = ControllerManager::start(*server.api, *server.store, o);
    REQUIRE(m.is_ok());
    manager = std::move(m).value();
    REQUIRE(manager->wait_idle(10s));
  }
  ~Cluster() { manager->stop(); }

  static apiserver::Options options(const std::string& cidr) {
    apiserver::Options o;
    o.service_cidr = cidr;
    return o;
  }
};

}  // namespace

TEST_CASE("parse_service_cidr checks --service-cluster-ip-range as kube-apiserver does",
          "[controllers][kubernetes-service]") {
  CHECK(*apiserver::parse_service_cidr("10.96.0.0/12") == "10.96.0.1");
  CHECK(*apiserver::parse_service_cidr("10.100.7.9/16") == "10.100.0.1");
  CHECK(apiserver::parse_service_cidr("10.0.0.0/8").status().message() ==
        "specified --service-cluster-ip-range 10.0.0.0/8 is too large; for 32-bit addresses, the "
        "mask must be >= 12");
  CHECK(apiserver::parse_service_cidr("10.0.0.0/31").status().code() == Code::kInvalid);
  CHECK(apiserver::parse_service_cidr("fd00::/108")
            .status()
            .message()
            .find("only IPv4 ranges are supported") != std::string::npos);
  for (const char* bad : {"", "10.96.0.0", "10.96.0/12", "banana/12", "10.96.0.0/x", "1.2.3.4/40"})
    CHECK(apiserver::parse_service_cidr(bad).status().code() == Code::kInvalid);
}

TEST_CASE("default/kubernetes exists, points at the API server and comes back",
          "[controllers][kubernetes-service]") {
  Cluster c("10.100.0.0/16");
  json svc = c.server.get("/api/v1/namespaces/default/services/kubernetes");
  CHECK(svc["spec"]["clusterIP"] == "10.100.0.1");
  CHECK(svc["spec"]["type"] == "ClusterIP");
  CHECK(svc["spec"]["ports"] == json::parse(R"([{"name":"https","port":443,"protocol":"TCP",
                                                  "targetPort":6443}])"));
  CHECK(svc["metadata"]["labels"] == json{{"component", "apiserver"}, {"provider", "kubernetes"}});
  json ep = c.server.get("/api/v1/namespaces/default/endpoints/kubernetes");
  CHECK(ep["subsets"] == json::parse(R"([{"addresses":[{"ip":"127.0.0.1"}],
                                          "ports":[{"name":"https","port":6443,"protocol":"TCP"}]}])"));
  json slice =
      c.server.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes");
  CHECK(slice["endpoints"][0]["addresses"] == json{"127.0.0.1"});
  CHECK(slice["metadata"]["labels"]["kubernetes.io/service-name"] == "kubernetes");

  // A Service of the user's gets an address from the same range.
  json web = {{"metadata", {{"name", "web"}}},
              {"spec", {{"ports", {{{"port", 80}}}}, {"selector", {{"app", "web"}}}}}};
  auto r = c.server.call("POST", "/api/v1/namespaces/default/services", web);
  REQUIRE(r.status == 201);
  const std::string ip = json::parse(r.body)["spec"]["clusterIP"];
  CHECK(ip.rfind("10.100.", 0) == 0);
  CHECK(ip != "10.100.0.1");

  // Deleted, it comes back with the same address; changed, it is put back.
  REQUIRE(c.server.call("DELETE", "/api/v1/namespaces/default/services/kubernetes").status == 200);
  REQUIRE(c.server.call("DELETE", "/api/v1/namespaces/default/endpoints/kubernetes").status == 200);
  REQUIRE(c.manager->wait_idle(10s));
  json again = c.server.get("/api/v1/namespaces/default/services/kubernetes");
  CHECK(again["spec"]["clusterIP"] == "10.100.0.1");
  CHECK(again["metadata"]["uid"] != svc["metadata"]["uid"]);
  CHECK(c.server.get("/api/v1/namespaces/default/endpoints/kubernetes")["subsets"] ==
        ep["subsets"]);
  again["spec"]["ports"][0]["port"] = 8443;
  REQUIRE(c.server.call("PUT", "/api/v1/namespaces/default/services/kubernetes", again).status ==
          200);
  REQUIRE(c.manager->wait_idle(10s));
  CHECK(c.server.get(
            "/api/v1/namespaces/default/services/kubernetes")["spec"]["ports"][0]["port"] == 443);
}

TEST_CASE("default/kubernetes given a host Service's port by the syncer keeps it",
          "[controllers][kubernetes-service]") {
  Cluster c("10.100.0.0/16");
  json svc = c.server.get("/api/v1/namespaces/default/services/kubernetes");
  svc["metadata"]["annotations"]["vkube.io/host-service"] = "vkube-t/vkube";
  svc["spec"]["ports"][0]["port"] = 8443;
  REQUIRE(c.server.call("PUT", "/api/v1/namespaces/default/services/kubernetes", svc).status ==
          200);
  REQUIRE(c.manager->wait_idle(10s));
  json now = c.server.get("/api/v1/namespaces/default/services/kubernetes");
  CHECK(now["spec"]["ports"][0]["port"] == 8443);
  // Its labels are still the controller's to keep.
  now["metadata"]["labels"].erase("provider");
  REQUIRE(c.server.call("PUT", "/api/v1/namespaces/default/services/kubernetes", now).status ==
          200);
  REQUIRE(c.manager->wait_idle(10s));
  json back = c.server.get("/api/v1/namespaces/default/services/kubernetes");
  CHECK(back["metadata"]["labels"]["provider"] == "kubernetes");
  CHECK(back["spec"]["ports"][0]["port"] == 8443);
}

}  // namespace vkube::controllers
