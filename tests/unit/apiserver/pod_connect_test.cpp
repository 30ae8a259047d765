// pods/log, exec, attach and portforward through the API server's chain:
// what it checks before it hands a request to the pod's connector.
#include <catch2/catch.hpp>

#include <mutex>

#include <nlohmann/json.hpp>

#include "support/api_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

class Recorder final : public PodConnector {
 public:
  http::Response connect(const PodRequest& p, http::Request& req) override {
    std::lock_guard lock(mu);
    calls.push_back(
        {p.subresource, p.container, p.pod["metadata"]["name"].get<std::string>(), req.method});
    http::Response r;
    r.body = "from the node";
    return r;
  }
  struct Call {
    std::string sub, container, pod, method;
  };
  std::mutex mu;
  std::vector<Call> calls;
};

Options with_tokens() {
  Options o;
  o.tokens["alice-token"] = UserInfo{"alice", {}, "1001"};
  return o;
}

struct Fixture : testing::ApiServerOverStore {
  std::shared_ptr<Recorder> node = std::make_shared<Recorder>();
  Fixture() : ApiServerOverStore(with_tokens()) {
    REQUIRE(call("admin", "POST", "/api/v1/namespaces", R"({"metadata":{"name":"team"}})").status ==
            201);
    api->set_pod_connector(node);
  }
  http::Response call(const std::string& who, const std::string& method, const std::string& target,
                      std::string body = "") {
    http::Request req = testing::request(method, target);
    if (who == "admin")
      req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    else
      req.headers.push_back({"Authorization", "Bearer " + who});
    if (!body.empty()) {
      req.body = std::move(body);
      req.headers.push_back({"Content-Type", "application/json"});
    }
    return api->handle(req);
  }
  void pod(const std::string& name, json containers, const std::string& node_name = "n1",
           json init = json::array()) {
    json p = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}}},
              {"spec", {{"containers", containers}}}};
    if (!node_name.empty()) p["spec"]["nodeName"] = node_name;
    if (!init.empty()) p["spec"]["initContainers"] = init;
    auto r = call("admin", "POST", "/api/v1/namespaces/team/pods", p.dump());
    INFO(r.body);
    REQUIRE(r.status == 201);
  }
};

json c(const std::string& name) {
  return {{"name", name}, {"image", "img"}};
}

std::string message(const http::Response& r) {
  return json::parse(r.body).value("message", "");
}

TEST_CASE("Pod logs and exec reach the connector with the container the pod has",
          "[apiserver][pods]") {
  Fixture f;
  f.pod("one", {c("app")});
  auto r = f.call("admin", "GET", "/api/v1/namespaces/team/pods/one/log?follow=true");
  CHECK(r.status == 200);
  CHECK(r.body == "from the node");
  r = f.call("admin", "POST", "/api/v1/namespaces/team/pods/one/exec?command=ls&stdout=true");
  CHECK(r.status == 200);
  r = f.call("admin", "GET", "/api/v1/namespaces/team/pods/one/portforward?ports=80");
  CHECK(r.status == 200);
  REQUIRE(f.node->calls.size() == 3);
  CHECK(f.node->calls[0].sub == "log");
  CHECK(f.node->calls[0].container == "app");
  CHECK(f.node->calls[1].sub == "exec");
  CHECK(f.node->calls[1].method == "POST");
  CHECK(f.node->calls[2].sub == "portforward");
  CHECK(f.node->calls[2].container.empty());
}

TEST_CASE("A pod of several containers needs one named, and a valid one", "[apiserver][pods]") {
  Fixture f;
  f.pod("two", {c("app"), c("sidecar")}, "n1", {c("setup")});
  auto r = f.call("admin", "GET", "/api/v1/namespaces/team/pods/two/log");
  CHECK(r.status == 400);
  CHECK(message(r) ==
        "a container name must be specified for pod two, choose one of: [app sidecar] or one of "
        "the init containers: [setup]");
  r = f.call("admin", "POST", "/api/v1/namespaces/team/pods/two/exec?container=nope&command=ls");
  CHECK(r.status == 400);
  CHECK(message(r) == "container nope is not valid for pod two");
  r = f.call("admin", "GET", "/api/v1/namespaces/team/pods/two/log?container=setup");
  CHECK(r.status == 200);
  REQUIRE(f.node->calls.size() == 1);
  CHECK(f.node->calls[0].container == "setup");
}

TEST_CASE("Missing pods, unscheduled pods and wrong methods are refused as kube refuses them",
          "[apiserver][pods]") {
  Fixture f;
  f.pod("pending", {c("app")}, "");
  auto r = f.call("admin", "GET", "/api/v1/namespaces/team/pods/ghost/log");
  CHECK(r.status == 404);
  CHECK(message(r) == "pods \"ghost\" not found");
  r = f.call("admin", "POST", "/api/v1/namespaces/team/pods/pending/exec?command=ls");
  CHECK(r.status == 400);
  CHECK(message(r) == "pod pending does not have a host assigned");
  r = f.call("admin", "GET", "/api/v1/namespaces/team/pods/pending/log");
  CHECK(r.status == 200);  // an empty log, as kube answers before scheduling
  CHECK(r.body.empty());
  r = f.call("admin", "DELETE", "/api/v1/namespaces/team/pods/pending/log");
  CHECK(r.status == 405);
  CHECK(f.node->calls.empty());
}

TEST_CASE("Exec over a WebSocket GET needs create as well as get", "[apiserver][pods]") {
  Fixture f;
  f.pod("one", {c("app")});
  // alice may get pods/exec and pods/log, but not create pods/exec.
  REQUIRE(f.call("admin", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles",
                 R"({"metadata":{"name":"reader"},"rules":[{"apiGroups":[""],
                     "resources":["pods/exec","pods/log"],"verbs":["get"]}]})")
              .status == 201);
  REQUIRE(f.call("admin", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings",
                 R"({"metadata":{"name":"alice"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io",
                     "kind":"Role","name":"reader"},"subjects":[{"kind":"User","name":"alice"}]})")
              .status == 201);
  auto r = f.call("alice-token", "GET", "/api/v1/namespaces/team/pods/one/log");
  CHECK(r.status == 200);
  r = f.call("alice-token", "GET", "/api/v1/namespaces/team/pods/one/exec?command=ls");
  CHECK(r.status == 403);
  CHECK(message(r) ==
        "pods \"one\" is forbidden: User \"alice\" cannot create resource \"pods/exec\" in API "
        "group \"\" in the namespace \"team\"");
  CHECK(f.node->calls.size() == 1);
}

TEST_CASE("Without a connector, a pod's streams say that no node agent runs it",
          "[apiserver][pods]") {
  Fixture f;
  f.api->set_pod_connector(nullptr);
  f.pod("one", {c("app")});
  auto r = f.call("admin", "GET", "/api/v1/namespaces/team/pods/one/log");
  CHECK(r.status == 503);
  CHECK_THAT(message(r), Catch::Contains("no node agent serves pod one on node n1"));
}

}  // namespace
}  // namespace vkube::apiserver
