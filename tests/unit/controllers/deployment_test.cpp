// The Deployment controller with the ReplicaSet controller over a real API
// server, the test acting as the kubelet: the new ReplicaSet and its
// revision, rolling updates within maxSurge/maxUnavailable, Recreate, pause,
// scaling, history cleanup, rollback by template and the progress deadline.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <thread>

#include "support/control_plane.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;
using testing::ControlPlane;

const std::string kDeploys = "/apis/apps/v1/namespaces/w/deployments";
const std::string kRss = "/apis/apps/v1/namespaces/w/replicasets";
const std::string kPods = "/api/v1/namespaces/w/pods";

json deployment(const std::string& name, int replicas, const std::string& image = "nginx:1") {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", "w"}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", name}}}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", image}}}}}}}}}}};
}

// A user's write. Like kubectl's retrying edits, a 409 (a controller wrote
// the object at the same moment) is tried again on the latest version.
ControlPlane::Answer retry_conflicts(const std::function<ControlPlane::Answer()>& write) {
  ControlPlane::Answer a;
  for (int i = 0; i < 20; ++i) {
    a = write();
    if (a.code != 409) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return a;
}

json merge(ControlPlane& cp, const std::string& path, const json& patch) {
  auto a = retry_conflicts(
      [&] { return cp.call("PATCH", path, patch, "application/merge-patch+json"); });
  INFO("PATCH " << path << " " << patch.dump() << " -> " << a.body.dump());
  REQUIRE(a.code == 200);
  return a.body;
}

void set_image(ControlPlane& cp, const std::string& name, const std::string& image) {
  auto a = retry_conflicts([&] {
    json d = cp.get(kDeploys + "/" + name);
    d["spec"]["template"]["spec"]["containers"][0]["image"] = image;
    return cp.call("PUT", kDeploys + "/" + name, d);
  });
  INFO(a.body.dump());
  REQUIRE(a.code == 200);
}

std::vector<json> replica_sets(ControlPlane& cp) {
  return cp.items(kRss);
}

std::vector<json> active_pods(ControlPlane& cp) {
  std::vector<json> out;
  for (json& p : cp.items(kPods))
    if (!p["metadata"].contains("deletionTimestamp")) out.push_back(std::move(p));
  return out;
}

std::string annotation(const json& obj, const std::string& key) {
  return obj["metadata"].value("annotations", json::object()).value(key, "");
}

std::string image_of(const json& rs) {
  return rs["spec"]["template"]["spec"]["containers"][0]["image"];
}

// The condition of `type`, or an empty object.
json find_condition(const json& status, const std::string& type) {
  for (const json& c : status.value("conditions", json::array()))
    if (c.value("type", "") == type) return c;
  return json::object();
}

std::string condition_reason(const json& d, const std::string& type) {
  return find_condition(d["status"], type).value("reason", "");
}

std::vector<std::string> event_messages(ControlPlane& cp, const std::string& reason) {
  std::vector<std::string> out;
  auto events = cp.items("/api/v1/namespaces/w/events");
  std::sort(events.begin(), events.end(), [](const json& a, const json& b) {
    return a["metadata"]["name"].get<std::string>() < b["metadata"]["name"].get<std::string>();
  });
  for (const json& e : events)
    if (e.value("reason", "") == reason) out.push_back(e.value("message", ""));
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Marks pods ready until the deployment's rollout completes.
bool roll_to_completion(ControlPlane& cp, const std::string& name) {
  return ControlPlane::eventually(
      [&] {
        cp.manager->wait_idle(seconds(5));
        cp.mark_pods_ready("w");
        json d = cp.get(kDeploys + "/" + name);
        return condition_reason(d, "Progressing") == "NewReplicaSetAvailable" &&
               d["status"].value("updatedReplicas", 0) == d["spec"]["replicas"] &&
               d["status"].value("replicas", 0) == d["spec"]["replicas"] &&
               d["status"].value("availableReplicas", 0) == d["spec"]["replicas"];
      },
      seconds(20));
}

TEST_CASE("a Deployment makes a hashed ReplicaSet at revision 1", "[controllers][deployment]") {
  ControlPlane cp({"deployment", "replicaset"});
  json d = cp.create(kDeploys, deployment("web", 2));
  REQUIRE(ControlPlane::eventually([&] { return active_pods(cp).size() == 2; }));
  auto rss = replica_sets(cp);
  REQUIRE(rss.size() == 1);
  const json& rs = rss[0];
  std::string hash = rs["metadata"]["labels"]["pod-template-hash"];
  CHECK_FALSE(hash.empty());
  CHECK(rs["metadata"]["name"] == "web-" + hash);
  CHECK(rs["spec"]["selector"]["matchLabels"]["pod-template-hash"] == hash);
  CHECK(rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == hash);
  CHECK(rs["metadata"]["ownerReferences"][0]["uid"] == d["metadata"]["uid"]);
  CHECK(annotation(rs, "deployment.kubernetes.io/revision") == "1");
  CHECK(annotation(rs, "deployment.kubernetes.io/desired-replicas") == "2");
  // maxSurge 25% of 2 rounds up to 1.
  CHECK(annotation(rs, "deployment.kubernetes.io/max-replicas") == "3");
  for (const json& p : active_pods(cp)) CHECK(p["metadata"]["labels"]["pod-template-hash"] == hash);

  REQUIRE(cp.manager->wait_idle(seconds(5)));
  json cur = cp.get(kDeploys + "/web");
  CHECK(annotation(cur, "deployment.kubernetes.io/revision") == "1");
  CHECK(cur["status"]["observedGeneration"] == 1);
  // As on kube, the revision goes with a status write (the status strategy
  // keeps metadata changes): the controller's status entry owns it, and no
  // write of the object itself changed the generation.
  CHECK(cur["metadata"]["generation"] == 1);
  std::string revision_owner;
  for (const json& e : cur["metadata"].value("managedFields", json::array()))
    if (e["fieldsV1"].value("f:metadata", json::object())
            .value("f:annotations", json::object())
            .contains("f:deployment.kubernetes.io/revision"))
      revision_owner = e.value("manager", "") + "/" + e.value("subresource", "");
  CHECK(revision_owner == "kube-controller-manager/status");
  CHECK(cur["status"]["replicas"] == 2);
  CHECK(cur["status"]["updatedReplicas"] == 2);
  CHECK(cur["status"]["unavailableReplicas"] == 2);
  // maxUnavailable 25% of 2 rounds down to 0: both must be available.
  CHECK(condition_reason(cur, "Available") == "MinimumReplicasUnavailable");
  CHECK(contains(event_messages(cp, "ScalingReplicaSet"),
                 "Scaled up replica set web-" + hash + " from 0 to 2"));

  REQUIRE(roll_to_completion(cp, "web"));
  cur = cp.get(kDeploys + "/web");
  CHECK(condition_reason(cur, "Available") == "MinimumReplicasAvailable");
  CHECK(find_condition(cur["status"], "Progressing").value("message", "") ==
        "ReplicaSet \"web-" + hash + "\" has successfully progressed.");
  CHECK_FALSE(cur["status"].contains("unavailableReplicas"));
}

TEST_CASE("a rolling update stays within maxSurge and maxUnavailable",
          "[controllers][deployment]") {
  ControlPlane cp({"deployment", "replicaset"});
  json d = deployment("web", 4);
  d["spec"]["strategy"] = {{"type", "RollingUpdate"},
                           {"rollingUpdate", {{"maxSurge", 1}, {"maxUnavailable", 1}}}};
  cp.create(kDeploys, d);
  REQUIRE(roll_to_completion(cp, "web"));
  const std::string old_name = replica_sets(cp)[0]["metadata"]["name"];

  set_image(cp, "web", "nginx:2");
  bool done = false;
  for (int step = 0; step < 40 && !done; ++step) {
    REQUIRE(cp.manager->wait_idle(seconds(5)));
    int64_t sized = 0;
    for (const json& rs : replica_sets(cp)) sized += rs["spec"].value("replicas", 0);
    int ready = 0;
    std::vector<std::string> unready;
    for (const json& p : active_pods(cp)) {
      bool r = false;
      for (const json& c : p["status"].value("conditions", json::array()))
        r |= c["type"] == "Ready" && c["status"] == "True";
      if (r)
        ++ready;
      else
        unready.push_back(p["metadata"]["name"]);
    }
    INFO("step " << step);
    CHECK(sized <= 5);  // replicas + maxSurge
    CHECK(ready >= 3);  // replicas - maxUnavailable
    // The kubelet: one pod becomes ready per step.
    if (!unready.empty()) cp.set_pod_status("w", unready[0], "Running", true);
    json cur = cp.get(kDeploys + "/web");
    done = condition_reason(cur, "Progressing") == "NewReplicaSetAvailable" &&
           cur["status"].value("updatedReplicas", 0) == 4 &&
           cur["status"].value("replicas", 0) == 4;
  }
  REQUIRE(done);
  REQUIRE(roll_to_completion(cp, "web"));
  auto rss = replica_sets(cp);
  REQUIRE(rss.size() == 2);
  for (const json& rs : rss) {
    if (rs["metadata"]["name"] == old_name) {
      CHECK(rs["spec"]["replicas"] == 0);
      CHECK(rs["status"]["replicas"] == 0);
      CHECK(annotation(rs, "deployment.kubernetes.io/revision") == "1");
    } else {
      CHECK(image_of(rs) == "nginx:2");
      CHECK(rs["spec"]["replicas"] == 4);
      CHECK(annotation(rs, "deployment.kubernetes.io/revision") == "2");
    }
  }
  json cur = cp.get(kDeploys + "/web");
  CHECK(annotation(cur, "deployment.kubernetes.io/revision") == "2");
  CHECK(cur["status"]["observedGeneration"] == 2);
  CHECK(cur["status"]["replicas"] == 4);
  CHECK(cur["status"]["updatedReplicas"] == 4);
  CHECK(cur["status"]["readyReplicas"] == 4);
  CHECK(cur["status"]["availableReplicas"] == 4);
  CHECK(condition_reason(cur, "Available") == "MinimumReplicasAvailable");
  REQUIRE(cp.manager->wait_idle(seconds(5)));
  CHECK(contains(event_messages(cp, "ScalingReplicaSet"),
                 "Scaled down replica set " + old_name + " from 4 to 3"));
}

TEST_CASE("Recreate removes the old pods before it makes new ones", "[controllers][deployment]") {
  ControlPlane cp({"deployment", "replicaset"});
  json d = deployment("web", 2);
  d["spec"]["strategy"] = {{"type", "Recreate"}};
  // A finalizer keeps deleted pods around, as a kubelet would while they stop.
  d["spec"]["template"]["metadata"]["finalizers"] = {"example.com/hold"};
  cp.create(kDeploys, d);
  REQUIRE(roll_to_completion(cp, "web"));
  set_image(cp, "web", "nginx:2");
  REQUIRE(ControlPlane::eventually([&] {
    auto rss = replica_sets(cp);
    return rss.size() == 1 && rss[0]["spec"]["replicas"] == 0 && rss[0]["status"]["replicas"] == 0;
  }));
  // Old pods still terminating: no new ReplicaSet yet.
  REQUIRE(cp.manager->wait_idle(seconds(5)));
  CHECK(replica_sets(cp).size() == 1);
  auto pods = cp.items(kPods);
  REQUIRE(pods.size() == 2);
  for (const json& p : pods) {
    CHECK(p["metadata"].contains("deletionTimestamp"));
    merge(cp, kPods + "/" + p["metadata"]["name"].get<std::string>(),
          {{"metadata", {{"finalizers", nullptr}}}});
  }
  REQUIRE(ControlPlane::eventually([&] { return replica_sets(cp).size() == 2; }));
  REQUIRE(roll_to_completion(cp, "web"));
  for (const json& p : active_pods(cp)) CHECK(p["spec"]["containers"][0]["image"] == "nginx:2");
}

TEST_CASE("a paused deployment scales but does not roll out", "[controllers][deployment]") {
  ControlPlane cp({"deployment", "replicaset"});
  cp.create(kDeploys, deployment("web", 2));
  REQUIRE(roll_to_completion(cp, "web"));
  merge(cp, kDeploys + "/web", {{"spec", {{"paused", true}}}});
  REQUIRE(ControlPlane::eventually([&] {
    return condition_reason(cp.get(kDeploys + "/web"), "Progressing") == "DeploymentPaused";
  }));
  json cur = cp.get(kDeploys + "/web");
  CHECK(find_condition(cur["status"], "Progressing").value("status", "") == "Unknown");
  set_image(cp, "web", "nginx:2");
  merge(cp, kDeploys + "/web", {{"spec", {{"replicas", 3}}}});
  REQUIRE(ControlPlane::eventually([&] { return active_pods(cp).size() == 3; }));
  REQUIRE(cp.manager->wait_idle(seconds(5)));
  auto rss = replica_sets(cp);
  REQUIRE(rss.size() == 1);
  CHECK(image_of(rss[0]) == "nginx:1");

  merge(cp, kDeploys + "/web", {{"spec", {{"paused", false}}}});
  REQUIRE(ControlPlane::eventually([&] { return replica_sets(cp).size() == 2; }));
  REQUIRE(roll_to_completion(cp, "web"));
  for (const json& p : active_pods(cp)) CHECK(p["spec"]["containers"][0]["image"] == "nginx:2");
}

TEST_CASE("scaling a stable deployment resizes its ReplicaSet at once",
          "[controllers][deployment]") {
  ControlPlane cp({"deployment", "replicaset"});
  cp.create(kDeploys, deployment("web", 2));
  REQUIRE(roll_to_completion(cp, "web"));
  const std::string rs = replica_sets(cp)[0]["metadata"]["name"];
  merge(cp, kDeploys + "/web/scale", {{"spec", {{"replicas", 5}}}});
  REQUIRE(ControlPlane::eventually([&] { return active_pods(cp).size() == 5; }));
  REQUIRE(cp.manager->wait_idle(seconds(5)));
  auto rss = replica_sets(cp);
  REQUIRE(rss.size() == 1);
  CHECK(annotation(rss[0], "deployment.kubernetes.io/desired-replicas") == "5");
  CHECK(contains(event_messages(cp, "ScalingReplicaSet"),
                 "Scaled up replica set " + rs + " from 2 to 5"));
}

TEST_CASE("scaling mid-rollout scales every ReplicaSet proportionally",
          "[controllers][deployment]") {
  ControlPlane cp({"deployment", "replicaset"});
  json d = deployment("web", 10);
  d["spec"]["strategy"] = {{"type", "RollingUpdate"},
                           {"rollingUpdate", {{"maxSurge", 3}, {"maxUnavailable", 2}}}};
  cp.create(kDeploys, d);
  REQUIRE(roll_to_completion(cp, "web"));
  set_image(cp, "web", "nginx:2");
  // No pod of the new ReplicaSet becomes ready: the rollout stops at 8 old + 5 new.
  REQUIRE(ControlPlane::eventually([&] {
    cp.manager->wait_idle(seconds(5));
    auto rss = replica_sets(cp);
    return rss.size() == 2 &&
           rss[0]["spec"]["replicas"].get<int>() + rss[1]["spec"]["replicas"].get<int>() == 13;
  }));
  merge(cp, kDeploys + "/web", {{"spec", {{"replicas", 20}}}});
  REQUIRE(ControlPlane::eventually([&] {
    cp.manager->wait_idle(seconds(5));
    auto rss = replica_sets(cp);
    int total = 0;
    for (const json& rs : rss) total += rs["spec"]["replicas"].get<int>();
    return total == 23;
  }));
  // 10 more (23 allowed, 13 there) in proportion to the sizes they had
  // for 13: 8 * 23/13 = 14.15 -> 14 and 5 * 23/13 = 8.85 -> 9.
  for (const json& rs : replica_sets(cp)) {
    CHECK(rs["spec"]["replicas"] == (image_of(rs) == "nginx:1" ? 14 : 9));
    CHECK(annotation(rs, "deployment.kubernetes.io/desired-replicas") == "20");
    CHECK(annotation(rs, "deployment.kubernetes.io/max-replicas") == "23");
  }
}

TEST_CASE(
    "old ReplicaSets beyond revisionHistoryLimit are deleted; a reverted template "
    "brings its ReplicaSet back with a new revision",
    "[controllers][deployment]") {
  ControlPlane cp({"deployment", "replicaset"});
  json d = deployment("web", 1);
  d["spec"]["revisionHistoryLimit"] = 1;
  cp.create(kDeploys, d);
  REQUIRE(roll_to_completion(cp, "web"));
  const std::string first = replica_sets(cp)[0]["metadata"]["name"];
  set_image(cp, "web", "nginx:2");
  REQUIRE(roll_to_completion(cp, "web"));
  set_image(cp, "web", "nginx:3");
  REQUIRE(roll_to_completion(cp, "web"));
  REQUIRE(ControlPlane::eventually([&] { return replica_sets(cp).size() == 2; }));
  for (const json& rs : replica_sets(cp)) {
    CHECK(rs["metadata"]["name"] != first);
    CHECK(image_of(rs) != "nginx:1");
  }

  // Back to nginx:2: its ReplicaSet is new again, at revision 4.
  set_image(cp, "web", "nginx:2");
  REQUIRE(roll_to_completion(cp, "web"));
  auto rss = replica_sets(cp);
  REQUIRE(rss.size() == 2);
  for (const json& rs : rss) {
    if (image_of(rs) != "nginx:2") continue;
    CHECK(annotation(rs, "deployment.kubernetes.io/revision") == "4");
    CHECK(annotation(rs, "deployment.kubernetes.io/revision-history") == "2");
    CHECK(rs["spec"]["replicas"] == 1);
  }
  CHECK(annotation(cp.get(kDeploys + "/web"), "deployment.kubernetes.io/revision") == "4");
}

TEST_CASE("a rollout without progress exceeds its deadline", "[controllers][deployment]") {
  ControlPlane cp({"deployment", "replicaset"});
  json d = deployment("web", 1);
  d["spec"]["progressDeadlineSeconds"] = 1;
  cp.create(kDeploys, d);
  REQUIRE(ControlPlane::eventually([&] {
    return condition_reason(cp.get(kDeploys + "/web"), "Progressing") == "NewReplicaSetCreated" ||
           condition_reason(cp.get(kDeploys + "/web"), "Progressing") == "ReplicaSetUpdated";
  }));
  // Pods never become ready: the controller's own timer notices.
  REQUIRE(ControlPlane::eventually(
      [&] {
        return condition_reason(cp.get(kDeploys + "/web"), "Progressing") ==
               "ProgressDeadlineExceeded";
      },
      seconds(6)));
  json cur = cp.get(kDeploys + "/web");
  json c = find_condition(cur["status"], "Progressing");
  CHECK(c.value("status", "") == "False");
  std::string rs = replica_sets(cp)[0]["metadata"]["name"];
  CHECK(c.value("message", "") == "ReplicaSet \"" + rs + "\" has timed out progressing.");
}

TEST_CASE("change-cause is copied to the ReplicaSet", "[controllers][deployment]") {
  ControlPlane cp({"deployment", "replicaset"});
  json d = deployment("web", 1);
  d["metadata"]["annotations"] = {{"kubernetes.io/change-cause", "first"}};
  cp.create(kDeploys, d);
  REQUIRE(ControlPlane::eventually([&] { return replica_sets(cp).size() == 1; }));
  CHECK(annotation(replica_sets(cp)[0], "kubernetes.io/change-cause") == "first");
}

}  // namespace
}  // namespace vkube::controllers
