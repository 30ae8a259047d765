// The ValidatingAdmissionPolicy status controller: each generation of a policy is type-checked
// against the kinds it matches (built-in and custom, found through discovery and /openapi/v3)
// and the result written to status.typeChecking, as kube's controller writes it.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "support/api_server.h"
#include "support/control_plane.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;
using testing::ControlPlane;
using namespace std::chrono_literals;

const std::string kPolicies = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";

json policy(const std::string& name, json rules, json validations, json extra = json::object()) {
  json spec = {{"matchConstraints", {{"resourceRules", std::move(rules)}}},
               {"validations", std::move(validations)}};
  spec.update(extra);
  return {{"metadata", {{"name", name}}}, {"spec", std::move(spec)}};
}

json rule(const std::string& group, const std::string& version, const std::string& resource) {
  return {{"apiGroups", {group}},
          {"apiVersions", {version}},
          {"operations", {"CREATE", "UPDATE"}},
          {"resources", {resource}}};
}

// The policy once the controller has checked its current generation.
json checked(ControlPlane& cp, const std::string& name) {
  json p;
  for (int i = 0; i < 200; ++i) {
    REQUIRE(cp.manager->wait_idle(10s));
    p = cp.get(kPolicies + "/" + name);
    if (p["status"].value("observedGeneration", json()) == p["metadata"]["generation"]) return p;
    std::this_thread::sleep_for(10ms);
  }
  FAIL("the policy was not checked: " << p.dump());
  return p;
}

TEST_CASE("a policy's expressions are type-checked against the kinds it matches",
          "[controllers][admission]") {
  ControlPlane cp({"validatingadmissionpolicy-status"});
  cp.create(kPolicies,
            policy("replicas", {rule("apps", "v1", "deployments")},
                   {{{"expression", "object.spec.replica > 1"},
                     {"messageExpression", "'has ' + object.spec.replicas"}},
                    {{"expression",
                      "object.spec.template.spec.containers.all(c, c.image.startsWith('r/'))"}},
                    {{"expression",
                      "object.metadata.labels.team == 'a' && "
                      "object.metadata.?annotations.orValue({}).size() < 10"}},
                    {{"expression", "variables.spec.replicas > 0 && variables.spec.paused"}},
                    {{"expression", "variables.containers.all(c, c.imagePullPolicy != 'x')"}},
                    {{"expression", "variables.spec.replica > 0"}},
                    {{"expression",
                      "object.spec.template.spec.containers.all(i, c, i < 10 && c.imagee != '')"}}},
                   {{"variables",
                     {{{"name", "spec"}, {"expression", "object.spec"}},
                      {{"name", "containers"},
                       {"expression", "variables.spec.template.spec.containers"}}}}}));
  json p = checked(cp, "replicas");
  const json& warnings = p["status"]["typeChecking"]["expressionWarnings"];
  REQUIRE(warnings.size() == 4);
  INFO(warnings.dump(2));
  CHECK(warnings[0]["fieldRef"] == "spec.validations[0].expression");
  CHECK(warnings[0]["warning"] ==
        "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'\n"
        " | object.spec.replica > 1\n"
        " | ...........^\n");
  CHECK(warnings[1]["fieldRef"] == "spec.validations[0].messageExpression");
  CHECK(warnings[1]["warning"] ==
        "apps/v1, Kind=Deployment: ERROR: <input>:1:8: found no matching overload for '_+_' "
        "applied to '(string, int)'\n"
        " | 'has ' + object.spec.replicas\n"
        " | .......^\n");
  // Through a variable, which has the type of its expression (object.spec).
  CHECK(warnings[2]["fieldRef"] == "spec.validations[5].expression");
  CHECK(warnings[2]["warning"] ==
        "apps/v1, Kind=Deployment: ERROR: <input>:1:15: undefined field 'replica'\n"
        " | variables.spec.replica > 0\n"
        " | ..............^\n");
  // A two-variable comprehension over a list: the index, then the element.
  CHECK(warnings[3]["fieldRef"] == "spec.validations[6].expression");
  CHECK(warnings[3]["warning"] ==
        "apps/v1, Kind=Deployment: ERROR: <input>:1:59: undefined field 'imagee'\n"
        " | object.spec.template.spec.containers.all(i, c, i < 10 && c.imagee != '')\n"
        " | ..........................................................^\n");

  // A fixed policy is checked again at its new generation, and its warnings go.
  json fixed = p;
  fixed["spec"]["validations"][0] = {{"expression", "object.spec.replicas > 1"}};
  fixed["spec"]["validations"][5] = {{"expression", "variables.spec.replicas > 0"}};
  fixed["spec"]["validations"][6] = {
      {"expression", "object.spec.template.spec.containers.all(i, c, i < 10 && c.image != '')"}};
  REQUIRE(cp.call("PUT", kPolicies + "/replicas", fixed).code == 200);
  p = checked(cp, "replicas");
  CHECK(p["metadata"]["generation"] == 2);
  CHECK(p["status"]["typeChecking"] == json::object());
}

TEST_CASE("type checking covers custom resources, params, and every matched kind",
          "[controllers][admission]") {
  ControlPlane cp({"validatingadmissionpolicy-status"});
  cp.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json::parse(R"({
    "metadata": {"name": "boxes.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
      "names": {"plural": "boxes", "kind": "Box"},
      "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"count": {"type": "integer"}}}}}}}]}})"));
  REQUIRE(cp.manager->wait_idle(10s));
  cp.create(kPolicies,
            policy("mixed", {rule("example.com", "v1", "boxes"), rule("", "v1", "configmaps")},
                   {{{"expression", "object.spec.count <= params.data.max"}},
                    {{"expression", "object.metadata.name.size() < 20"}}},
                   {{"paramKind", {{"apiVersion", "v1"}, {"kind", "ConfigMap"}}}}));
  json p = checked(cp, "mixed");
  const json& warnings = p["status"]["typeChecking"]["expressionWarnings"];
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0]["fieldRef"] == "spec.validations[0].expression");
  // Each kind in turn, in kube's order: a ConfigMap has no spec; a Box's count is an int, and
  // params (a ConfigMap) has string data.
  CHECK(warnings[0]["warning"] ==
        "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'spec'\n"
        " | object.spec.count <= params.data.max\n"
        " | ......^\n"
        "\n"
        "example.com/v1, Kind=Box: ERROR: <input>:1:19: found no matching overload for '_<=_' "
        "applied to '(int, string)'\n"
        " | object.spec.count <= params.data.max\n"
        " | ..................^\n");
}

}  // namespace
}  // namespace vkube::controllers
