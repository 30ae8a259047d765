// The StatefulSet controller over a real API server: ordinal pods created in
// order or in parallel, claims from volumeClaimTemplates, scale down from
// the highest ordinal, rolling updates with a partition, revisions and
// status. The test plays the kubelet by marking pods Running and Ready.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <set>

#include "support/control_plane.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;
using testing::ControlPlane;
using namespace std::chrono_literals;

const std::string kSets = "/apis/apps/v1/namespaces/w/statefulsets";
const std::string kPods = "/api/v1/namespaces/w/pods";
const std::string kClaims = "/api/v1/namespaces/w/persistentvolumeclaims";

json stateful_set(int replicas, const std::string& policy = "OrderedReady") {
  return {{"apiVersion", "apps/v1"},
          {"kind", "StatefulSet"},
          {"metadata", {{"name", "web"}, {"namespace", "w"}}},
          {"spec",
           {{"replicas", replicas},
            {"serviceName", "nginx"},
            {"podManagementPolicy", policy},
            {"selector", {{"matchLabels", {{"app", "web"}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", "web"}}}}},
              // The template's own "data" volume gives way to the claim of that name.
              // (It is there because vkube's validation does not yet count
              // volumeClaimTemplates as volumes for volumeMounts.)
              {"spec",
               {{"containers",
                 {{{"name", "nginx"},
                   {"image", "nginx:1.27"},
                   {"volumeMounts", {{{"name", "data"}, {"mountPath", "/data"}}}}}}},
                {"volumes", {{{"name", "data"}, {"emptyDir", json::object()}}}}}}}},
            {"volumeClaimTemplates",
             {{{"metadata", {{"name", "data"}}},
               {"spec",
                {{"accessModes", {"ReadWriteOnce"}},
                 {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}}}}}}};
}

std::set<std::string> pod_names(ControlPlane& cp) {
  std::set<std::string> names;
  for (const json& p : cp.items(kPods)) names.insert(p["metadata"]["name"].get<std::string>());
  return names;
}

bool settle(ControlPlane& cp) {
  return cp.manager->wait_idle(10s);
}

// Marks pods ready as they appear until `done` holds.
bool roll(ControlPlane& cp, const std::function<bool()>& done) {
  return ControlPlane::eventually([&] {
    cp.mark_pods_ready("w");
    return done();
  });
}

json set_status(ControlPlane& cp) {
  return cp.get(kSets + "/web")["status"];
}

// Events are written in the background: waits for "<reason>: <message>".
bool has_event(ControlPlane& cp, const std::string& text) {
  return ControlPlane::eventually([&] {
    for (const json& e : cp.items("/api/v1/namespaces/w/events"))
      if (e["source"].value("component", "") == "statefulset-controller" &&
          e.value("reason", "") + ": " + e.value("message", "") == text)
        return true;
    return false;
  });
}

TEST_CASE("OrderedReady creates each ordinal only after the previous is ready",
          "[controllers][statefulset]") {
  ControlPlane cp({"statefulset"});
  cp.create(kSets, stateful_set(3));
  REQUIRE(ControlPlane::eventually([&] { return pod_names(cp).count("web-0") == 1; }));
  REQUIRE(settle(cp));
  CHECK(pod_names(cp) == std::set<std::string>{"web-0"});

  json pod = cp.get(kPods + "/web-0");
  CHECK(pod["spec"]["hostname"] == "web-0");
  CHECK(pod["spec"]["subdomain"] == "nginx");
  CHECK(pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "web-0");
  CHECK(pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "0");
  CHECK(pod["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet");
  CHECK(pod["metadata"]["ownerReferences"][0]["controller"] == true);
  json status = set_status(cp);
  CHECK(pod["metadata"]["labels"]["controller-revision-hash"] == status["updateRevision"]);

  cp.set_pod_status("w", "web-0", "Running", true);
  REQUIRE(ControlPlane::eventually([&] { return pod_names(cp).count("web-1") == 1; }));
  REQUIRE(settle(cp));
  CHECK(pod_names(cp) == std::set<std::string>{"web-0", "web-1"});

  // Running but not Ready holds the next ordinal back too.
  cp.set_pod_status("w", "web-1", "Running", false);
  REQUIRE(settle(cp));
  CHECK(pod_names(cp).count("web-2") == 0);
  cp.set_pod_status("w", "web-1", "Running", true);
  REQUIRE(ControlPlane::eventually([&] { return pod_names(cp).count("web-2") == 1; }));

  CHECK(has_event(cp, "SuccessfulCreate: create Pod web-0 in StatefulSet web successful"));
  CHECK(has_event(
      cp, "SuccessfulCreate: create Claim data-web-0 Pod web-0 in StatefulSet web success"));
}

TEST_CASE("Parallel creates every ordinal at once", "[controllers][statefulset]") {
  ControlPlane cp({"statefulset"});
  json set = stateful_set(4, "Parallel");
  set["spec"]["ordinals"] = {{"start", 5}};
  cp.create(kSets, set);
  REQUIRE(ControlPlane::eventually([&] { return pod_names(cp).size() == 4; }));
  CHECK(pod_names(cp) == std::set<std::string>{"web-5", "web-6", "web-7", "web-8"});
  CHECK(cp.get(kPods + "/web-7")["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "7");
}

TEST_CASE("volumeClaimTemplates make one claim per ordinal, mounted by its pod",
          "[controllers][statefulset]") {
  ControlPlane cp({"statefulset"});
  cp.create(kSets, stateful_set(2, "Parallel"));
  REQUIRE(ControlPlane::eventually([&] { return pod_names(cp).size() == 2; }));
  for (int i = 0; i < 2; ++i) {
    const std::string ordinal = std::to_string(i);
    json claim = cp.get(kClaims + "/data-web-" + ordinal);
    CHECK(claim["metadata"]["labels"]["app"] == "web");
    CHECK(claim["spec"]["resources"]["requests"]["storage"] == "1Gi");
    // The default retention policy (Retain) leaves the claim unowned.
    CHECK_FALSE(claim["metadata"].contains("ownerReferences"));
    json pod = cp.get(kPods + "/web-" + ordinal);
    json volumes = pod["spec"]["volumes"];
    auto data = std::find_if(volumes.begin(), volumes.end(),
                             [](const json& v) { return v["name"] == "data"; });
    REQUIRE(data != volumes.end());
    CHECK((*data)["persistentVolumeClaim"]["claimName"] == "data-web-" + ordinal);
    CHECK_FALSE(data->contains("emptyDir"));
    CHECK(volumes.size() == 1);
  }
}

TEST_CASE("scaling down removes the highest ordinal first and keeps its claim",
          "[controllers][statefulset]") {
  ControlPlane cp({"statefulset"});
  cp.create(kSets, stateful_set(3));
  REQUIRE(roll(cp, [&] { return set_status(cp).value("readyReplicas", 0) == 3; }));

  auto scale = [&](int n) {
    cp.must_patch(kSets + "/web", {{"spec", {{"replicas", n}}}}, "application/merge-patch+json");
  };
  // Scale down waits while a remaining pod is not ready.
  cp.set_pod_status("w", "web-0", "Running", false);
  scale(2);
  REQUIRE(settle(cp));
  CHECK(pod_names(cp).size() == 3);

  cp.set_pod_status("w", "web-0", "Running", true);
  REQUIRE(ControlPlane::eventually([&] { return pod_names(cp).size() == 2; }));
  CHECK(pod_names(cp) == std::set<std::string>{"web-0", "web-1"});
  scale(1);
  REQUIRE(ControlPlane::eventually([&] { return pod_names(cp).size() == 1; }));
  CHECK(pod_names(cp) == std::set<std::string>{"web-0"});
  CHECK(cp.call("GET", kClaims + "/data-web-2").code == 200);
  CHECK(cp.call("GET", kClaims + "/data-web-1").code == 200);
  CHECK(ControlPlane::eventually([&] {
    json s = set_status(cp);
    return s.value("replicas", 0) == 1 && s.value("readyReplicas", 0) == 1;
  }));
  CHECK(has_event(cp, "SuccessfulDelete: delete Pod web-2 in StatefulSet web successful"));
}

TEST_CASE("whenScaled Delete removes the claims of scaled-down pods",
          "[controllers][statefulset]") {
  ControlPlane cp({"statefulset", "garbage-collector"});
  json set = stateful_set(2, "Parallel");
  set["spec"]["persistentVolumeClaimRetentionPolicy"] = {{"whenScaled", "Delete"},
                                                         {"whenDeleted", "Retain"}};
  cp.create(kSets, set);
  REQUIRE(roll(cp, [&] { return set_status(cp).value("readyReplicas", 0) == 2; }));
  cp.must_patch(kSets + "/web", {{"spec", {{"replicas", 1}}}}, "application/merge-patch+json");
  CHECK(ControlPlane::eventually(
      [&] { return cp.call("GET", kClaims + "/data-web-1").code == 404; }));
  CHECK(cp.call("GET", kClaims + "/data-web-0").code == 200);
}

TEST_CASE("whenDeleted Delete removes the claims with the set", "[controllers][statefulset]") {
  ControlPlane cp({"statefulset", "garbage-collector"});
  json set = stateful_set(2, "Parallel");
  set["spec"]["persistentVolumeClaimRetentionPolicy"] = {{"whenScaled", "Retain"},
                                                         {"whenDeleted", "Delete"}};
  cp.create(kSets, set);
  REQUIRE(ControlPlane::eventually([&] { return pod_names(cp).size() == 2; }));
  json claim = cp.get(kClaims + "/data-web-1");
  REQUIRE(claim["metadata"]["ownerReferences"].size() == 1);
  CHECK(claim["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet");
  REQUIRE(cp.call("DELETE", kSets + "/web").code == 200);
  CHECK(ControlPlane::eventually([&] { return cp.items(kClaims).empty(); }));
  CHECK(ControlPlane::eventually([&] { return cp.items(kPods).empty(); }));
}

TEST_CASE("a rolling update with a partition only updates ordinals at or above it",
          "[controllers][statefulset]") {
  ControlPlane cp({"statefulset"});
  cp.create(kSets, stateful_set(3));
  REQUIRE(roll(cp, [&] { return set_status(cp).value("readyReplicas", 0) == 3; }));
  const std::string first = set_status(cp)["currentRevision"];

  json patch = {{"spec",
                 {{"updateStrategy", {{"rollingUpdate", {{"partition", 1}}}}},
                  {"template",
                   {{"spec", {{"containers", {{{"name", "nginx"}, {"image", "nginx:1.28"}}}}}}}}}}};
  cp.must_patch(kSets + "/web", patch, "application/strategic-merge-patch+json");
  auto image = [&](int i) {
    return cp.get(kPods + "/web-" + std::to_string(i))["spec"]["containers"][0]["image"];
  };
  REQUIRE(roll(cp, [&] {
    json s = set_status(cp);
    return s.value("updatedReplicas", 0) == 2 && s.value("readyReplicas", 0) == 3;
  }));
  REQUIRE(settle(cp));
  CHECK(image(0) == "nginx:1.27");
  CHECK(image(1) == "nginx:1.28");
  CHECK(image(2) == "nginx:1.28");
  json s = set_status(cp);
  CHECK(s["currentRevision"] == first);
  CHECK(s["updateRevision"] != first);
  CHECK(s["currentReplicas"] == 1);
  CHECK(s["observedGeneration"] == 2);

  // Partition 0 finishes the rollout; the update revision becomes current.
  cp.must_patch(kSets + "/web",
             {{"spec", {{"updateStrategy", {{"rollingUpdate", {{"partition", 0}}}}}}}},
             "application/merge-patch+json");
  REQUIRE(roll(cp, [&] {
    json st = set_status(cp);
    return st.value("updatedReplicas", 0) == 3 && st.value("readyReplicas", 0) == 3 &&
           st["currentRevision"] == st["updateRevision"];
  }));
  CHECK(image(0) == "nginx:1.28");
  s = set_status(cp);
  CHECK(s["currentReplicas"] == 3);
  CHECK(s["availableReplicas"] == 3);
  CHECK(s["replicas"] == 3);

  auto revisions = cp.items("/apis/apps/v1/namespaces/w/controllerrevisions");
  REQUIRE(revisions.size() == 2);
  std::set<int64_t> numbers;
  for (const json& r : revisions) {
    numbers.insert(r["revision"].get<int64_t>());
    CHECK(r["metadata"]["ownerReferences"][0]["name"] == "web");
    CHECK(r["data"]["spec"]["template"]["$patch"] == "replace");
  }
  CHECK(numbers == std::set<int64_t>{1, 2});
}

TEST_CASE("going back to an earlier template reuses its revision", "[controllers][statefulset]") {
  ControlPlane cp({"statefulset"});
  cp.create(kSets, stateful_set(1));
  REQUIRE(roll(cp, [&] { return set_status(cp).value("readyReplicas", 0) == 1; }));
  const std::string first = set_status(cp)["updateRevision"];
  auto set_image = [&](const std::string& image) {
    json patch = {
        {"spec",
         {{"template", {{"spec", {{"containers", {{{"name", "nginx"}, {"image", image}}}}}}}}}}};
    cp.must_patch(kSets + "/web", patch, "application/strategic-merge-patch+json");
  };
  set_image("nginx:1.28");
  REQUIRE(roll(cp, [&] {
    json s = set_status(cp);
    return s["updateRevision"] != first && s["currentRevision"] == s["updateRevision"] &&
           s.value("readyReplicas", 0) == 1;
  }));
  set_image("nginx:1.27");
  REQUIRE(roll(cp, [&] {
    json s = set_status(cp);
    return s["updateRevision"] == first && s["currentRevision"] == first &&
           s.value("readyReplicas", 0) == 1;
  }));
  auto revisions = cp.items("/apis/apps/v1/namespaces/w/controllerrevisions");
  REQUIRE(revisions.size() == 2);
  for (const json& r : revisions)
    if (r["metadata"]["name"] == first) CHECK(r["revision"] == 3);
}

TEST_CASE("OnDelete replaces a pod only when it is deleted", "[controllers][statefulset]") {
  ControlPlane cp({"statefulset"});
  json set = stateful_set(2, "Parallel");
  set["spec"]["updateStrategy"] = {{"type", "OnDelete"}};
  cp.create(kSets, set);
  REQUIRE(roll(cp, [&] { return set_status(cp).value("readyReplicas", 0) == 2; }));
  json patch = {{"spec",
                 {{"template",
                   {{"spec", {{"containers", {{{"name", "nginx"}, {"image", "nginx:1.28"}}}}}}}}}}};
  cp.must_patch(kSets + "/web", patch, "application/strategic-merge-patch+json");
  REQUIRE(settle(cp));
  CHECK(cp.get(kPods + "/web-1")["spec"]["containers"][0]["image"] == "nginx:1.27");
  REQUIRE(cp.call("DELETE", kPods + "/web-1").code == 200);
  CHECK(ControlPlane::eventually([&] {
    auto r = cp.call("GET", kPods + "/web-1");
    return r.code == 200 && r.body["spec"]["containers"][0]["image"] == "nginx:1.28";
  }));
  CHECK(cp.get(kPods + "/web-0")["spec"]["containers"][0]["image"] == "nginx:1.27");
}

TEST_CASE("a failed pod is deleted and recreated", "[controllers][statefulset]") {
  ControlPlane cp({"statefulset"});
  cp.create(kSets, stateful_set(1));
  REQUIRE(ControlPlane::eventually([&] { return pod_names(cp).count("web-0") == 1; }));
  const std::string uid = cp.get(kPods + "/web-0")["metadata"]["uid"];
  cp.set_pod_status("w", "web-0", "Failed", false);
  CHECK(ControlPlane::eventually([&] {
    auto r = cp.call("GET", kPods + "/web-0");
    return r.code == 200 && r.body["metadata"]["uid"] != uid;
  }));
}

}  // namespace
}  // namespace vkube::controllers
