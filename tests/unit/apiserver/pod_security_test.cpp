// Pod Security admission: what a baseline tenant refuses at create, in
// kube's words, and how a namespace label changes the level.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/api_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

Options level(const std::string& l) {
  Options o;
  o.pod_security = l;
  return o;
}

struct Server : testing::ApiServerOverStore {
  explicit Server(const std::string& l) : ApiServerOverStore(level(l)) {
    REQUIRE(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", "t"}}}}).status == 201);
    REQUIRE(call("POST", "/api/v1/namespaces",
                 {{"metadata",
                   {{"name", "ops"},
                    {"labels", {{"pod-security.kubernetes.io/enforce", "privileged"}}}}}})
                .status == 201);
  }
  http::Response call(const std::string& method, const std::string& target, const json& body) {
    http::Request req = testing::request(method, target);
    req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    req.body = body.dump();
    req.headers.push_back({"Content-Type", "application/json"});
    return api->handle(req);
  }
  http::Response create(const std::string& ns, const json& pod) {
    return call("POST", "/api/v1/namespaces/" + ns + "/pods", pod);
  }
};

json pod(const std::string& name, json container_extra = json::object(),
         json spec_extra = json::object()) {
  json c = {{"name", "app"}, {"image", "nginx"}};
  c.merge_patch(container_extra);
  json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}}},
            {"spec", {{"containers", json::array({c})}}}};
  p["spec"].merge_patch(spec_extra);
  return p;
}

std::string message(const http::Response& r) {
  return json::parse(r.body).value("message", "");
}

}  // namespace

TEST_CASE("a baseline tenant refuses privileged pods at create, in kube's words", "[apiserver]") {
  Server s("baseline");
  auto privileged = s.create("t", pod("p", {{"securityContext", {{"privileged", true}}}}));
  CHECK(privileged.status == 403);
  CHECK(message(privileged) ==
        "pods \"p\" is forbidden: violates PodSecurity \"baseline:latest\": privileged (container "
        "\"app\" must not set securityContext.privileged=true)");
  CHECK(json::parse(privileged.body)["reason"] == "Forbidden");

  auto many = s.create(
      "t",
      pod("q",
          {{"ports", {{{"containerPort", 80}, {"hostPort", 8080}}}},
           {"securityContext", {{"capabilities", {{"add", {"SYS_ADMIN", "NET_BIND_SERVICE"}}}}}}},
          {{"hostNetwork", true},
           {"volumes", {{{"name", "logs"}, {"hostPath", {{"path", "/var/log"}}}}}}}));
  CHECK(many.status == 403);
  CHECK(
      message(many) ==
      "pods \"q\" is forbidden: violates PodSecurity \"baseline:latest\": non-default capabilities "
      "(container \"app\" must not include \"SYS_ADMIN\" in securityContext.capabilities.add), "
      "host namespaces (hostNetwork=true), hostPath volumes (volume \"logs\"), hostPort "
      "(container \"app\" uses hostPort 8080)");
  // Nothing was stored.
  http::Request get = testing::request("GET", "/api/v1/namespaces/t/pods/q");
  get.peer = http::PeerCertificate{"admin", {"system:masters"}};
  CHECK(s.api->handle(get).status == 404);

  // What baseline allows; and a namespace labelled privileged allows all.
  CHECK(s.create("t", pod("ok", {{"securityContext",
                                  {{"capabilities", {{"add", {"NET_BIND_SERVICE"}}}}}}}))
            .status == 201);
  CHECK(s.create("ops", pod("agent", {{"securityContext", {{"privileged", true}}}})).status == 201);
}

TEST_CASE("a privileged server, or namespace, refuses nothing", "[apiserver]") {
  Server s("privileged");
  CHECK(s.create("t", pod("p", {{"securityContext", {{"privileged", true}}}}, {{"hostPID", true}}))
            .status == 201);
}

TEST_CASE("a restricted namespace also wants non-root, dropped capabilities and seccomp",
          "[apiserver]") {
  Server s("restricted");
  auto plain = s.create(
      "t", pod("plain", json::object(),
               {{"volumes", {{{"name", "share"}, {"nfs", {{"server", "f"}, {"path", "/"}}}}}}}));
  CHECK(plain.status == 403);
  CHECK(message(plain) ==
        "pods \"plain\" is forbidden: violates PodSecurity \"restricted:latest\": "
        "allowPrivilegeEscalation != false (container \"app\" must set "
        "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "
        "\"app\" must set securityContext.capabilities.drop=[\"ALL\"]), restricted volume types "
        "(volume \"share\" uses restricted volume type \"nfs\"), runAsNonRoot != true (pod or "
        "container \"app\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or "
        "container \"app\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
        "\"Localhost\")");

  // The pod-level settings cover its containers; NET_BIND_SERVICE may be added.
  json hardened = pod("hardened",
                      {{"securityContext",
                        {{"allowPrivilegeEscalation", false},
                         {"capabilities", {{"drop", {"ALL"}}, {"add", {"NET_BIND_SERVICE"}}}}}}},
                      {{"securityContext",
                        {{"runAsNonRoot", true}, {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
                       {"volumes", {{{"name", "cfg"}, {"configMap", {{"name", "c"}}}}}}});
  CHECK(s.create("t", hardened).status == 201);

  // A container undoing the pod's non-root setting, or running as root, is refused.
  json rooted = hardened;
  rooted["metadata"]["name"] = "rooted";
  rooted["spec"]["containers"][0]["securityContext"]["runAsUser"] = 0;
  auto r = s.create("t", rooted);
  CHECK(r.status == 403);
  CHECK(message(r).find("runAsUser=0 (container \"app\" must not set runAsUser=0)") !=
        std::string::npos);
}

}  // namespace vkube::apiserver
