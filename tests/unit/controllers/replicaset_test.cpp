// The ReplicaSet and ReplicationController controllers over a real API
// server: pods created and replaced, surplus pods chosen as kube chooses
// them, orphans adopted and strays released, and the status a user reads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <thread>

#include "support/control_plane.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;
using testing::ControlPlane;

const std::string kRss = "/apis/apps/v1/namespaces/w/replicasets";
const std::string kPods = "/api/v1/namespaces/w/pods";

json replica_set(const std::string& name, int replicas, const std::string& app = "web") {
  return {{"apiVersion", "apps/v1"},
          {"kind", "ReplicaSet"},
          {"metadata", {{"name", name}, {"namespace", "w"}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app", app}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", app}, {"tier", "front"}}}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "nginx:1"}}}}}}}}}}};
}

json pod(const std::string& name, const json& labels) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "w"}, {"labels", labels}}},
          {"spec", {{"containers", {{{"name", "c"}, {"image", "nginx:1"}}}}}}};
}

std::vector<json> active_pods(ControlPlane& cp) {
  std::vector<json> out;
  for (json& p : cp.items(kPods))
    if (!p["metadata"].contains("deletionTimestamp")) out.push_back(std::move(p));
  return out;
}

std::set<std::string> pod_names(ControlPlane& cp) {
  std::set<std::string> out;
  for (const json& p : active_pods(cp)) out.insert(p["metadata"]["name"].get<std::string>());
  return out;
}

bool has_pods(ControlPlane& cp, size_t n) {
  return ControlPlane::eventually([&] { return active_pods(cp).size() == n; });
}

std::vector<json> events_of(ControlPlane& cp, const std::string& reason) {
  std::vector<json> out;
  for (json& e : cp.items("/api/v1/namespaces/w/events"))
    if (e.value("reason", "") == reason) out.push_back(std::move(e));
  return out;
}

// A user's merge patch; a 409 (a controller wrote the object at the same
// moment) is tried again, as kubectl's retrying writes do.
int patch(ControlPlane& cp, const std::string& path, const json& body) {
  int code = 0;
  for (int i = 0; i < 20; ++i) {
    code = cp.call("PATCH", path, body, "application/merge-patch+json").code;
    if (code != 409) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return code;
}

TEST_CASE("a ReplicaSet creates its pods from the template", "[controllers][replicaset]") {
  ControlPlane cp({"replicaset"});
  json rs = cp.create(kRss, replica_set("web", 3));
  REQUIRE(has_pods(cp, 3));
  for (const json& p : active_pods(cp)) {
    std::string name = p["metadata"]["name"];
    CHECK(name.rfind("web-", 0) == 0);
    CHECK(p["metadata"]["labels"]["tier"] == "front");
    const json& ref = p["metadata"]["ownerReferences"][0];
    CHECK(ref["kind"] == "ReplicaSet");
    CHECK(ref["uid"] == rs["metadata"]["uid"]);
    CHECK(ref["controller"] == true);
  }
  REQUIRE(ControlPlane::eventually([&] {
    json s = cp.get(kRss + "/web")["status"];
    return s.value("replicas", 0) == 3 && s.value("observedGeneration", 0) == 1;
  }));
  json status = cp.get(kRss + "/web")["status"];
  CHECK(status["fullyLabeledReplicas"] == 3);
  CHECK_FALSE(status.contains("readyReplicas"));
  REQUIRE(cp.manager->wait_idle(std::chrono::seconds(5)));
  auto created = events_of(cp, "SuccessfulCreate");
  REQUIRE(created.size() == 3);
  CHECK(created[0]["source"]["component"] == "replicaset-controller");
  CHECK(created[0]["involvedObject"]["name"] == "web");
  CHECK(created[0]["message"].get<std::string>().rfind("Created pod: web-", 0) == 0);
}

TEST_CASE("a ReplicaSet replaces a deleted pod", "[controllers][replicaset]") {
  ControlPlane cp({"replicaset"});
  cp.create(kRss, replica_set("web", 2));
  REQUIRE(has_pods(cp, 2));
  std::string victim = *pod_names(cp).begin();
  REQUIRE(cp.call("DELETE", kPods + "/" + victim).code == 200);
  REQUIRE(ControlPlane::eventually([&] {
    auto names = pod_names(cp);
    return names.size() == 2 && !names.count(victim);
  }));
}

TEST_CASE("scaling down deletes not-ready pods first", "[controllers][replicaset]") {
  ControlPlane cp({"replicaset"});
  cp.create(kRss, replica_set("web", 4));
  REQUIRE(has_pods(cp, 4));
  auto names = pod_names(cp);
  // All running, two of them ready: the other two go.
  std::vector<std::string> ready(names.begin(), std::next(names.begin(), 2));
  for (const std::string& n : names)
    cp.set_pod_status("w", n, "Running", std::count(ready.begin(), ready.end(), n) > 0);
  REQUIRE(ControlPlane::eventually(
      [&] { return cp.get(kRss + "/web")["status"].value("readyReplicas", 0) == 2; }));
  REQUIRE(patch(cp, kRss + "/web/scale", {{"spec", {{"replicas", 2}}}}) == 200);
  REQUIRE(has_pods(cp, 2));
  auto left = pod_names(cp);
  CHECK(left == std::set<std::string>(ready.begin(), ready.end()));
  REQUIRE(cp.manager->wait_idle(std::chrono::seconds(5)));
  CHECK(events_of(cp, "SuccessfulDelete").size() == 2);
  json status = cp.get(kRss + "/web")["status"];
  CHECK(status["replicas"] == 2);
  CHECK(status["readyReplicas"] == 2);
}

TEST_CASE("a ReplicaSet adopts matching orphans and releases pods that stop matching",
          "[controllers][replicaset]") {
  ControlPlane cp({"replicaset"});
  cp.create(kPods, pod("orphan", {{"app", "web"}}));
  cp.create(kPods, pod("other", {{"app", "db"}}));
  json rs = cp.create(kRss, replica_set("web", 2));
  REQUIRE(has_pods(cp, 3));
  json orphan = cp.get(kPods + "/orphan");
  REQUIRE(orphan["metadata"].contains("ownerReferences"));
  CHECK(orphan["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]);
  CHECK_FALSE(cp.get(kPods + "/other")["metadata"].contains("ownerReferences"));

  // Relabelled out of the selector: released, and replaced.
  REQUIRE(patch(cp, kPods + "/orphan", {{"metadata", {{"labels", {{"app", "away"}}}}}}) == 200);
  REQUIRE(ControlPlane::eventually(
      [&] { return !cp.get(kPods + "/orphan")["metadata"].contains("ownerReferences"); }));
  REQUIRE(has_pods(cp, 4));
  int controlled = 0;
  for (const json& p : active_pods(cp))
    controlled += p["metadata"].contains("ownerReferences") ? 1 : 0;
  CHECK(controlled == 2);
}

TEST_CASE("ReplicaSet status counts ready and available pods", "[controllers][replicaset]") {
  ControlPlane cp({"replicaset"});
  cp.create(kRss, replica_set("web", 3));
  REQUIRE(has_pods(cp, 3));
  // A pod labelled only with the selector's label counts, but not as fully labelled.
  REQUIRE(patch(cp, kPods + "/" + *pod_names(cp).begin(),
                {{"metadata", {{"labels", {{"tier", nullptr}}}}}}) == 200);
  REQUIRE(cp.mark_pods_ready("w") == 3);
  REQUIRE(ControlPlane::eventually([&] {
    json s = cp.get(kRss + "/web")["status"];
    return s.value("readyReplicas", 0) == 3 && s.value("availableReplicas", 0) == 3;
  }));
  json s = cp.get(kRss + "/web")["status"];
  CHECK(s["replicas"] == 3);
  CHECK(s["fullyLabeledReplicas"] == 2);
}

TEST_CASE("minReadySeconds delays availability", "[controllers][replicaset]") {
  ControlPlane cp({"replicaset"});
  json rs = replica_set("web", 1);
  rs["spec"]["minReadySeconds"] = 1;
  cp.create(kRss, rs);
  REQUIRE(has_pods(cp, 1));
  std::string name = *pod_names(cp).begin();
  // Ready from now on, as a kubelet reports it.
  std::time_t t = std::time(nullptr);
  char now[32];
  std::strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  json status = {
      {"phase", "Running"},
      {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", now}}}}};
  REQUIRE(patch(cp, kPods + "/" + name + "/status", {{"status", status}}) == 200);
  REQUIRE(ControlPlane::eventually(
      [&] { return cp.get(kRss + "/web")["status"].value("readyReplicas", 0) == 1; }));
  CHECK(cp.get(kRss + "/web")["status"].value("availableReplicas", 0) == 0);
  // Nothing else happens: only the controller's own timer makes it available.
  CHECK(ControlPlane::eventually(
      [&] { return cp.get(kRss + "/web")["status"].value("availableReplicas", 0) == 1; },
      std::chrono::seconds(4)));
}

TEST_CASE("a ReplicationController keeps its pods", "[controllers][replicaset]") {
  ControlPlane cp({"replicationcontroller"});
  json rc = {{"apiVersion", "v1"},
             {"kind", "ReplicationController"},
             {"metadata", {{"name", "legacy"}, {"namespace", "w"}}},
             {"spec",
              {{"replicas", 2},
               {"selector", {{"app", "legacy"}}},
               {"template",
                {{"metadata", {{"labels", {{"app", "legacy"}}}}},
                 {"spec", {{"containers", {{{"name", "c"}, {"image", "nginx:1"}}}}}}}}}}};
  const std::string rcs = "/api/v1/namespaces/w/replicationcontrollers";
  json created = cp.create(rcs, rc);
  REQUIRE(has_pods(cp, 2));
  for (const json& p : active_pods(cp)) {
    CHECK(p["metadata"]["name"].get<std::string>().rfind("legacy-", 0) == 0);
    CHECK(p["metadata"]["ownerReferences"][0]["kind"] == "ReplicationController");
    CHECK(p["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]);
  }
  REQUIRE(cp.mark_pods_ready("w") == 2);
  REQUIRE(ControlPlane::eventually(
      [&] { return cp.get(rcs + "/legacy")["status"].value("readyReplicas", 0) == 2; }));
  REQUIRE(patch(cp, rcs + "/legacy", {{"spec", {{"replicas", 1}}}}) == 200);
  REQUIRE(has_pods(cp, 1));
  REQUIRE(cp.manager->wait_idle(std::chrono::seconds(5)));
  auto created_events = events_of(cp, "SuccessfulCreate");
  REQUIRE_FALSE(created_events.empty());
  CHECK(created_events[0]["source"]["component"] == "replication-controller");
  CHECK(created_events[0]["involvedObject"]["kind"] == "ReplicationController");
  REQUIRE(ControlPlane::eventually(
      [&] { return cp.get(rcs + "/legacy")["status"].value("replicas", 0) == 1; }));
}

}  // namespace
}  // namespace vkube::controllers
