// The DaemonSet controller over a real API server: a pod pinned to every
// eligible Node (nodeSelector, affinity, taints), pods following nodes that
// come and go, rolling updates within maxUnavailable, and status.
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

const std::string kSets = "/apis/apps/v1/namespaces/w/daemonsets";
const std::string kPods = "/api/v1/namespaces/w/pods";
const std::string kNodes = "/api/v1/nodes";

json daemon_set(const json& node_selector = nullptr) {
  json ds = {{"apiVersion", "apps/v1"},
             {"kind", "DaemonSet"},
             {"metadata", {{"name", "agent"}, {"namespace", "w"}}},
             {"spec",
              {{"selector", {{"matchLabels", {{"app", "agent"}}}}},
               {"template",
                {{"metadata", {{"labels", {{"app", "agent"}}}}},
                 {"spec", {{"containers", {{{"name", "agent"}, {"image", "agent:1"}}}}}}}}}}};
  if (!node_selector.is_null()) ds["spec"]["template"]["spec"]["nodeSelector"] = node_selector;
  return ds;
}

void add_node(ControlPlane& cp, const std::string& name, const json& labels = json::object(),
              const json& taints = nullptr) {
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", name}, {"labels", labels}}},
               {"spec", json::object()}};
  if (!taints.is_null()) node["spec"]["taints"] = taints;
  cp.create(kNodes, node);
}

// The node each daemon pod is pinned to, by pod name.
std::map<std::string, std::string> pods_by_node(ControlPlane& cp) {
  std::map<std::string, std::string> out;
  for (const json& p : cp.items(kPods)) {
    if (p["metadata"].contains("deletionTimestamp")) continue;
    const json& terms = p["spec"]["affinity"]["nodeAffinity"]
                         ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    out[terms[0]["matchFields"][0]["values"][0].get<std::string>()] =
        p["metadata"]["name"].get<std::string>();
  }
  return out;
}

std::set<std::string> nodes_with_pods(ControlPlane& cp) {
  std::set<std::string> out;
  for (const auto& [node, pod] : pods_by_node(cp)) out.insert(node);
  return out;
}

json ds_status(ControlPlane& cp) {
  return cp.get(kSets + "/agent")["status"];
}

bool settle(ControlPlane& cp) {
  return cp.manager->wait_idle(10s);
}

TEST_CASE("a daemon set runs one pod per node, pinned to it", "[controllers][daemonset]") {
  ControlPlane cp({"daemonset"});
  add_node(cp, "n1");
  add_node(cp, "n2");
  add_node(cp, "tainted", json::object(),
           {{{"key", "dedicated"}, {"value", "db"}, {"effect", "NoSchedule"}}});
  cp.create(kSets, daemon_set());
  REQUIRE(ControlPlane::eventually([&] { return cp.items(kPods).size() == 2; }));
  REQUIRE(settle(cp));
  CHECK(nodes_with_pods(cp) == std::set<std::string>{"n1", "n2"});

  json pod = cp.items(kPods)[0];
  CHECK(pod["metadata"]["generateName"] == "agent-");
  CHECK(pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet");
  const json& field =
      pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
         ["nodeSelectorTerms"][0]["matchFields"][0];
  CHECK(field["key"] == "metadata.name");
  CHECK(field["operator"] == "In");
  std::set<std::string> tolerated;
  for (const json& t : pod["spec"]["tolerations"])
    tolerated.insert(t["key"].get<std::string>() + ":" + t["effect"].get<std::string>());
  CHECK(tolerated == std::set<std::string>{"node.kubernetes.io/not-ready:NoExecute",
                                           "node.kubernetes.io/unreachable:NoExecute",
                                           "node.kubernetes.io/disk-pressure:NoSchedule",
                                           "node.kubernetes.io/memory-pressure:NoSchedule",
                                           "node.kubernetes.io/pid-pressure:NoSchedule",
                                           "node.kubernetes.io/unschedulable:NoSchedule"});
  auto revisions = cp.items("/apis/apps/v1/namespaces/w/controllerrevisions");
  REQUIRE(revisions.size() == 1);
  const std::string hash = pod["metadata"]["labels"]["controller-revision-hash"];
  CHECK(revisions[0]["metadata"]["name"] == "agent-" + hash);
  CHECK(revisions[0]["revision"] == 1);

  json s = ds_status(cp);
  CHECK(s["desiredNumberScheduled"] == 2);
  CHECK(s["currentNumberScheduled"] == 2);
  CHECK(s["numberMisscheduled"] == 0);
  CHECK(s["numberReady"] == 0);
  CHECK(s["updatedNumberScheduled"] == 2);
  CHECK(s["numberUnavailable"] == 2);
  CHECK(s["observedGeneration"] == 1);

  for (const json& p : cp.items(kPods))
    cp.set_pod_status("w", p["metadata"]["name"], "Running", true);
  CHECK(ControlPlane::eventually([&] {
    json st = ds_status(cp);
    return st["numberReady"] == 2 && st.value("numberAvailable", 0) == 2 &&
           !st.contains("numberUnavailable");
  }));
  CHECK(ControlPlane::eventually([&] {
    for (const json& e : cp.items("/api/v1/namespaces/w/events"))
      if (e["source"]["component"] == "daemonset-controller" && e["reason"] == "SuccessfulCreate" &&
          e["message"] == "Created pod: " + pod["metadata"]["name"].get<std::string>())
        return true;
    return false;
  }));
}

TEST_CASE("nodes that come and go gain and lose daemon pods", "[controllers][daemonset]") {
  ControlPlane cp({"daemonset"});
  add_node(cp, "n1");
  cp.create(kSets, daemon_set());
  REQUIRE(ControlPlane::eventually([&] { return nodes_with_pods(cp).size() == 1; }));
  add_node(cp, "n2");
  REQUIRE(ControlPlane::eventually([&] {
    return nodes_with_pods(cp) == std::set<std::string>{"n1", "n2"};
  }));
  REQUIRE(cp.call("DELETE", kNodes + "/n1").code == 200);
  REQUIRE(
      ControlPlane::eventually([&] { return nodes_with_pods(cp) == std::set<std::string>{"n2"}; }));
  REQUIRE(settle(cp));
  CHECK(cp.items(kPods).size() == 1);
  CHECK(ds_status(cp)["desiredNumberScheduled"] == 1);
}

TEST_CASE("nodeSelector, node affinity and tolerations choose the nodes",
          "[controllers][daemonset]") {
  ControlPlane cp({"daemonset"});
  add_node(cp, "ssd-1", {{"disk", "ssd"}});
  add_node(cp, "ssd-2", {{"disk", "ssd"}, {"zone", "b"}});
  add_node(cp, "hdd", {{"disk", "hdd"}});
  add_node(cp, "ssd-tainted", {{"disk", "ssd"}},
           {{{"key", "dedicated"}, {"value", "db"}, {"effect", "NoExecute"}}});
  json ds = daemon_set({{"disk", "ssd"}});
  cp.create(kSets, ds);
  REQUIRE(ControlPlane::eventually([&] { return nodes_with_pods(cp).size() == 2; }));
  REQUIRE(settle(cp));
  CHECK(nodes_with_pods(cp) == std::set<std::string>{"ssd-1", "ssd-2"});

  // A toleration opens the tainted node; an affinity term narrows to zone b.
  json patch = {{"spec",
                 {{"template",
                   {{"spec",
                     {{"tolerations", {{{"key", "dedicated"}, {"operator", "Exists"}}}},
                      {"affinity",
                       {{"nodeAffinity",
                         {{"requiredDuringSchedulingIgnoredDuringExecution",
                           {{"nodeSelectorTerms",
                             {{{"matchExpressions",
                                {{{"key", "zone"},
                                  {"operator", "NotIn"},
                                  {"values", {"a"}}}}}}}}}}}}}}}}}}}}};
  cp.must_patch(kSets + "/agent", patch, "application/merge-patch+json");
  REQUIRE(ControlPlane::eventually([&] {
    cp.mark_pods_ready("w");
    return nodes_with_pods(cp) == std::set<std::string>{"ssd-1", "ssd-2", "ssd-tainted"} &&
           ds_status(cp).value("updatedNumberScheduled", 0) == 3;
  }));
}

TEST_CASE("a rolling update replaces pods within maxUnavailable", "[controllers][daemonset]") {
  ControlPlane cp({"daemonset"});
  for (const char* n : {"n1", "n2", "n3"}) add_node(cp, n);
  cp.create(kSets, daemon_set());
  REQUIRE(ControlPlane::eventually([&] {
    cp.mark_pods_ready("w");
    return ds_status(cp).value("numberAvailable", 0) == 3;
  }));
  json patch = {
      {"spec",
       {{"template", {{"spec", {{"containers", {{{"name", "agent"}, {"image", "agent:2"}}}}}}}}}}};
  cp.must_patch(kSets + "/agent", patch, "application/strategic-merge-patch+json");
  // Without pods becoming ready only one node is without an available pod.
  REQUIRE(ControlPlane::eventually([&] { return cp.items(kPods).size() == 3 && settle(cp); }));
  REQUIRE(settle(cp));
  int old_pods = 0;
  for (const json& p : cp.items(kPods))
    if (p["spec"]["containers"][0]["image"] == "agent:1") ++old_pods;
  CHECK(old_pods == 2);

  REQUIRE(ControlPlane::eventually([&] {
    cp.mark_pods_ready("w");
    json s = ds_status(cp);
    return s.value("updatedNumberScheduled", 0) == 3 && s.value("numberAvailable", 0) == 3;
  }));
  for (const json& p : cp.items(kPods)) CHECK(p["spec"]["containers"][0]["image"] == "agent:2");
  CHECK(cp.items("/apis/apps/v1/namespaces/w/controllerrevisions").size() == 2);
  CHECK(pods_by_node(cp).size() == 3);
}

TEST_CASE("OnDelete waits for pods to be deleted by hand", "[controllers][daemonset]") {
  ControlPlane cp({"daemonset"});
  add_node(cp, "n1");
  json ds = daemon_set();
  ds["spec"]["updateStrategy"] = {{"type", "OnDelete"}};
  cp.create(kSets, ds);
  REQUIRE(ControlPlane::eventually([&] { return cp.items(kPods).size() == 1; }));
  json patch = {
      {"spec",
       {{"template", {{"spec", {{"containers", {{{"name", "agent"}, {"image", "agent:2"}}}}}}}}}}};
  cp.must_patch(kSets + "/agent", patch, "application/strategic-merge-patch+json");
  REQUIRE(settle(cp));
  json pod = cp.items(kPods)[0];
  CHECK(pod["spec"]["containers"][0]["image"] == "agent:1");
  REQUIRE(cp.call("DELETE", kPods + "/" + pod["metadata"]["name"].get<std::string>()).code == 200);
  CHECK(ControlPlane::eventually([&] {
    auto pods = cp.items(kPods);
    return pods.size() == 1 && pods[0]["spec"]["containers"][0]["image"] == "agent:2";
  }));
}

}  // namespace
}  // namespace vkube::controllers
