// The disruption controller over a real API server: PodDisruptionBudget
// status from the ready pods its selector matches, for minAvailable and
// maxUnavailable as numbers and percentages of the pods' controllers' scale.
#include <catch2/catch.hpp>

#include <chrono>

#include "support/control_plane.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;
using testing::ControlPlane;
using namespace std::chrono_literals;

const std::string kPods = "/api/v1/namespaces/w/pods";
const std::string kBudgets = "/apis/policy/v1/namespaces/w/poddisruptionbudgets";

bool settle(ControlPlane& cp) {
  return cp.manager->wait_idle(10s);
}

json pod(const std::string& name, const json& owner = nullptr) {
  json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"labels", {{"app", "web"}}}}},
            {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx"}}}}}}};
  if (!owner.is_null())
    p["metadata"]["ownerReferences"] = {{{"apiVersion", owner["apiVersion"]},
                                         {"kind", owner["kind"]},
                                         {"name", owner["metadata"]["name"]},
                                         {"uid", owner["metadata"]["uid"]},
                                         {"controller", true}}};
  return p;
}

json budget(const json& spec_fields) {
  json spec = {{"selector", {{"matchLabels", {{"app", "web"}}}}}};
  spec.update(spec_fields);
  return {{"apiVersion", "policy/v1"},
          {"kind", "PodDisruptionBudget"},
          {"metadata", {{"name", "web"}}},
          {"spec", spec}};
}

json replica_set(ControlPlane& cp, int replicas) {
  json rs = {{"apiVersion", "apps/v1"},
             {"kind", "ReplicaSet"},
             {"metadata", {{"name", "web"}}},
             {"spec",
              {{"replicas", replicas},
               {"selector", {{"matchLabels", {{"app", "web"}}}}},
               {"template",
                {{"metadata", {{"labels", {{"app", "web"}}}}},
                 {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx"}}}}}}}}}}};
  json created = cp.create("/apis/apps/v1/namespaces/w/replicasets", rs);
  created["apiVersion"] = "apps/v1";
  created["kind"] = "ReplicaSet";
  return created;
}

json status(ControlPlane& cp) {
  return cp.get(kBudgets + "/web")["status"];
}

const json& allowed_condition(const json& st) {
  for (const json& c : st["conditions"])
    if (c["type"] == "DisruptionAllowed") return c;
  FAIL("no DisruptionAllowed condition in " << st.dump());
  static const json none;
  return none;
}

void respec(ControlPlane& cp, const json& spec) {
  REQUIRE(
      cp.call("PATCH", kBudgets + "/web", {{"spec", spec}}, "application/merge-patch+json").code ==
      200);
}

bool has_event(ControlPlane& cp, const std::string& reason, const std::string& text) {
  for (const json& e : cp.items("/api/v1/namespaces/w/events"))
    if (e["reason"] == reason && e["involvedObject"]["kind"] == "PodDisruptionBudget" &&
        e["message"].get<std::string>().find(text) != std::string::npos)
      return true;
  return false;
}

TEST_CASE("minAvailable 2 over 3 ready pods allows one disruption", "[controllers][disruption]") {
  ControlPlane cp({"disruption"});
  for (const char* name : {"a", "b", "c"}) cp.create(kPods, pod(name));
  cp.mark_pods_ready("w");
  cp.create(kBudgets, budget({{"minAvailable", 2}}));
  REQUIRE(settle(cp));
  json st = status(cp);
  CHECK(st["expectedPods"] == 3);
  CHECK(st["currentHealthy"] == 3);
  CHECK(st["desiredHealthy"] == 2);
  CHECK(st["disruptionsAllowed"] == 1);
  CHECK(st["observedGeneration"] == 1);
  CHECK_FALSE(st.contains("disruptedPods"));
  json c = allowed_condition(st);
  CHECK(c["status"] == "True");
  CHECK(c["reason"] == "SufficientPods");
  CHECK(c["observedGeneration"] == 1);

  // A pod that stops being ready uses up the budget.
  cp.set_pod_status("w", "a", "Running", false);
  REQUIRE(settle(cp));
  st = status(cp);
  CHECK(st["currentHealthy"] == 2);
  CHECK(st["disruptionsAllowed"] == 0);
  CHECK(allowed_condition(st)["status"] == "False");
  CHECK(allowed_condition(st)["reason"] == "InsufficientPods");

  // A changed spec is observed.
  respec(cp, {{"minAvailable", 1}});
  REQUIRE(settle(cp));
  st = status(cp);
  CHECK(st["observedGeneration"] == 2);
  CHECK(st["disruptionsAllowed"] == 1);
}

TEST_CASE("percentages count against the scale of the pods' controllers",
          "[controllers][disruption]") {
  ControlPlane cp({"disruption"});
  json rs = replica_set(cp, 4);
  for (const char* name : {"a", "b", "c"}) cp.create(kPods, pod(name, rs));
  cp.mark_pods_ready("w");
  cp.create(kBudgets, budget({{"minAvailable", "50%"}}));
  REQUIRE(settle(cp));
  json st = status(cp);
  CHECK(st["expectedPods"] == 4);  // spec.replicas, not the 3 pods that exist
  CHECK(st["desiredHealthy"] == 2);
  CHECK(st["currentHealthy"] == 3);
  CHECK(st["disruptionsAllowed"] == 1);

  // maxUnavailable 25% of 4 -> at most 1 down: 3 of 4 must be healthy.
  respec(cp, {{"minAvailable", nullptr}, {"maxUnavailable", "25%"}});
  REQUIRE(settle(cp));
  st = status(cp);
  CHECK(st["desiredHealthy"] == 3);
  CHECK(st["disruptionsAllowed"] == 0);
  cp.create(kPods, pod("d", rs));
  cp.mark_pods_ready("w");
  REQUIRE(settle(cp));
  CHECK(status(cp)["disruptionsAllowed"] == 1);

  // maxUnavailable as a number, against a Deployment's scale.
  json deployment =
      cp.create("/apis/apps/v1/namespaces/w/deployments",
                {{"metadata", {{"name", "web"}}},
                 {"spec",
                  {{"replicas", 10},
                   {"selector", {{"matchLabels", {{"app", "web"}}}}},
                   {"template",
                    {{"metadata", {{"labels", {{"app", "web"}}}}},
                     {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx"}}}}}}}}}}});
  json owned = cp.get("/apis/apps/v1/namespaces/w/replicasets/web");
  owned["metadata"]["ownerReferences"] = {{{"apiVersion", "apps/v1"},
                                           {"kind", "Deployment"},
                                           {"name", "web"},
                                           {"uid", deployment["metadata"]["uid"]},
                                           {"controller", true}}};
  REQUIRE(cp.call("PUT", "/apis/apps/v1/namespaces/w/replicasets/web", owned).code == 200);
  respec(cp, {{"maxUnavailable", 7}});
  REQUIRE(settle(cp));
  st = status(cp);
  CHECK(st["expectedPods"] == 10);
  CHECK(st["desiredHealthy"] == 3);
  CHECK(st["disruptionsAllowed"] == 1);
}

TEST_CASE("budgets without pods, unmanaged pods and unknown controllers",
          "[controllers][disruption]") {
  ControlPlane cp({"disruption"});
  cp.create(kBudgets, budget({{"maxUnavailable", "50%"}}));
  REQUIRE(settle(cp));
  json st = status(cp);
  CHECK(st["expectedPods"] == 0);
  CHECK(st["disruptionsAllowed"] == 0);
  CHECK(has_event(cp, "NoPods", "No matching pods found"));

  // A percentage over pods without a controller: they count for nothing.
  cp.create(kPods, pod("loose"));
  cp.mark_pods_ready("w");
  REQUIRE(settle(cp));
  CHECK(status(cp)["disruptionsAllowed"] == 0);
  CHECK(has_event(cp, "UnmanagedPods", "were found to be unmanaged"));

  // A controller whose scale is unknown makes the budget fail safe.
  json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", "batch"}, {"uid", "1234"}}}};
  cp.create(kPods, pod("worker", job));
  cp.mark_pods_ready("w");
  REQUIRE(settle(cp));
  st = status(cp);
  CHECK(st["disruptionsAllowed"] == 0);
  CHECK(allowed_condition(st)["reason"] == "SyncFailed");
  CHECK(allowed_condition(st)["message"] == "found no controllers for pod \"worker\"");
  CHECK(has_event(cp, "CalculateExpectedPodCountFailed",
                  "Failed to calculate the number of expected pods: found no controllers for pod"));
}

}  // namespace
}  // namespace vkube::controllers
