// Pod Security admission: what a baseline tenant refuses at create, in
// kube's words, and how a namespace label tightens (never loosens) the level.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/admin_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;
using testing::message;

Options level(const std::string& l) {
  Options o;
  o.pod_security = l;
  return o;
}

struct Server : testing::AdminApiServer {
  explicit Server(const std::string& l) : AdminApiServer(level(l)) {
    make_namespace("t");
    make_namespace("ops", {{"pod-security.kubernetes.io/enforce", "privileged"}});
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

  // What baseline allows.
  CHECK(s.create("t", pod("ok", {{"securityContext",
                                  {{"capabilities", {{"add", {"NET_BIND_SERVICE"}}}}}}}))
            .status == 201);
}

TEST_CASE("the server's level is a ceiling: a namespace label may tighten it, never loosen it",
          "[apiserver][pod-security]") {
  Server s("baseline");
  // "ops" is labelled privileged: the label is clamped to the tenant's baseline.
  for (const json& spec :
       {json{{"hostNetwork", true}},
        json{{"volumes", {{{"name", "root"}, {"hostPath", {{"path", "/"}}}}}}}}) {
    auto r = s.create("ops", pod("agent", json::object(), spec));
    CHECK(r.status == 403);
    CHECK(message(r).find("violates PodSecurity \"baseline:latest\"") != std::string::npos);
  }
  auto priv = s.create("ops", pod("agent", {{"securityContext", {{"privileged", true}}}}));
  CHECK(priv.status == 403);
  CHECK(message(priv) ==
        "pods \"agent\" is forbidden: violates PodSecurity \"baseline:latest\": privileged "
        "(container \"app\" must not set securityContext.privileged=true)");

  // The admin who sets the looser label is told it is not honoured.
  auto relabel =
      s.call("PATCH", "/api/v1/namespaces/t",
             {{"metadata", {{"labels", {{"pod-security.kubernetes.io/enforce", "privileged"}}}}}},
             "application/merge-patch+json");
  CHECK(relabel.status == 200);
  CHECK(testing::warnings(relabel) ==
        std::vector<std::string>{
            "pod-security.kubernetes.io/enforce=privileged is below this tenant's ceiling "
            "\"baseline\" and is not honoured: pods in namespace \"t\" are held to PodSecurity "
            "\"baseline:latest\""});

  // A stricter label is honoured: restricted refuses a pod baseline admits.
  s.make_namespace("strict", {{"pod-security.kubernetes.io/enforce", "restricted"}});
  CHECK(s.create("t", pod("plain")).status == 201);
  auto plain = s.create("strict", pod("plain"));
  CHECK(plain.status == 403);
  CHECK(message(plain).find("violates PodSecurity \"restricted:latest\"") != std::string::npos);

  // A stricter level pinned to an old version is held to the ceiling's latest
  // too: restricted v1.33 has no probe-host check, baseline latest has.
  s.make_namespace("pinned", {{"pod-security.kubernetes.io/enforce", "restricted"},
                              {"pod-security.kubernetes.io/enforce-version", "v1.33"}});
  json probe = pod("probe",
                   {{"livenessProbe", {{"httpGet", {{"host", "10.0.0.1"}, {"port", 80}}}}},
                    {"securityContext",
                     {{"allowPrivilegeEscalation", false}, {"capabilities", {{"drop", {"ALL"}}}}}}},
                   {{"securityContext",
                     {{"runAsNonRoot", true}, {"seccompProfile", {{"type", "RuntimeDefault"}}}}}});
  auto pinned = s.create("pinned", probe);
  CHECK(pinned.status == 403);
  CHECK(message(pinned).find("violates PodSecurity \"baseline:latest\": probe or lifecycle host") !=
        std::string::npos);
}

TEST_CASE("a privileged server (vkube host) refuses nothing; its namespace labels govern",
          "[apiserver][pod-security]") {
  Server s("privileged");
  CHECK(s.create("t", pod("p", {{"securityContext", {{"privileged", true}}}}, {{"hostPID", true}}))
            .status == 201);
  CHECK(s.create("ops", pod("agent", {{"securityContext", {{"privileged", true}}}})).status == 201);
  // A tenant's host namespace is labelled baseline by the syncer.
  s.make_namespace("vkube-a", {{"pod-security.kubernetes.io/enforce", "baseline"}});
  auto r = s.create("vkube-a", pod("p", {{"securityContext", {{"privileged", true}}}}));
  CHECK(r.status == 403);
  CHECK(message(r).find("violates PodSecurity \"baseline:latest\"") != std::string::npos);
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
