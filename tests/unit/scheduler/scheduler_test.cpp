// The host scheduler against an in-process API server: placement on GPU
// devices, kube's unschedulable messages and events, retries when capacity
// frees up, and its metrics.
#include <catch2/catch.hpp>

#include "support/control_plane.h"
#include "vkube/scheduler/scheduler.h"

namespace {

using json = nlohmann::json;
using vkube::testing::ControlPlane;

json node(const std::string& name, int gpus, json labels = json::object(),
          json extra = json::object()) {
  json n = {{"apiVersion", "v1"},
            {"kind", "Node"},
            {"metadata", {{"name", name}, {"labels", labels}}},
            {"status",
             {{"allocatable",
               {{"cpu", "32"},
                {"memory", "256Gi"},
                {"pods", "110"},
                {"nvidia.com/gpu", std::to_string(gpus)},
                {"vkube.io/gpu-milli", std::to_string(gpus * 1000)}}},
              {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  n["status"]["capacity"] = n["status"]["allocatable"];
  n.merge_patch(extra);
  return n;
}

json gpu_pod(const std::string& name, json limits, json annotations = json::object(),
             json spec = json::object()) {
  json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"annotations", annotations}}},
            {"spec",
             {{"containers",
               json::array({{{"name", "c"},
                             {"image", "cuda"},
                             {"resources", {{"limits", limits}, {"requests", limits}}}}})}}}};
  p["spec"].merge_patch(spec);
  return p;
}

std::string node_of(ControlPlane& cp, const std::string& pod) {
  return cp.get("/api/v1/namespaces/default/pods/" + pod)["spec"].value("nodeName", "");
}

std::string allocation_of(ControlPlane& cp, const std::string& pod) {
  json p = cp.get("/api/v1/namespaces/default/pods/" + pod);
  return p["metadata"].value("annotations", json::object()).value("gpu.vkube.io/allocation", "");
}

json condition(ControlPlane& cp, const std::string& pod) {
  json p = cp.get("/api/v1/namespaces/default/pods/" + pod);
  for (const json& c : p["status"].value("conditions", json::array()))
    if (c.value("type", "") == "PodScheduled") return c;
  return nullptr;
}

// The scheduler, attached to the control plane's informers. The attach hook
// runs inside ControlPlane's constructor, after its API server exists.
struct Fixture {
  std::unique_ptr<vkube::scheduler::Scheduler> scheduler;
  ControlPlane cp;
  explicit Fixture(vkube::gpu::Policy policy = vkube::gpu::Policy::kBinpack)
      : cp({"namespace"}, nullptr, {[this, policy](vkube::controllers::Informers& inf) {
             vkube::scheduler::Options o;
             o.policy = policy;
             scheduler = vkube::scheduler::Scheduler::create(*cp.server.api, inf, o);
           }}) {
    REQUIRE(scheduler);
    REQUIRE(scheduler->start().is_ok());
  }
  ~Fixture() { scheduler->stop(); }
  void settle() {
    REQUIRE(cp.manager->wait_idle(std::chrono::seconds(5)));
    REQUIRE(scheduler->wait_idle(std::chrono::seconds(5)));
    REQUIRE(cp.manager->wait_idle(std::chrono::seconds(5)));
  }
};

}  // namespace

TEST_CASE("whole GPUs go to distinct devices and are recorded on the pod", "[scheduler]") {
  Fixture f;
  f.cp.create("/api/v1/nodes", node("gpu-a", 4));
  f.cp.create("/api/v1/namespaces/default/pods", gpu_pod("two", {{"nvidia.com/gpu", "2"}}));
  f.cp.create("/api/v1/namespaces/default/pods", gpu_pod("one", {{"nvidia.com/gpu", "1"}}));
  f.settle();
  CHECK(node_of(f.cp, "two") == "gpu-a");
  CHECK(node_of(f.cp, "one") == "gpu-a");
  CHECK(allocation_of(f.cp, "two") == "0=1000,1=1000");
  CHECK(allocation_of(f.cp, "one") == "2=1000");
  CHECK(condition(f.cp, "two").value("status", "") == "True");
  // The Scheduled event names the node.
  auto events = f.cp.items("/api/v1/namespaces/default/events?fieldSelector=reason%3DScheduled");
  REQUIRE(events.size() == 2);
  CHECK(events[0]["message"].get<std::string>().find("to gpu-a") != std::string::npos);
  CHECK(events[0]["source"].value("component", "") == "default-scheduler");
  auto state = f.scheduler->gpu_state();
  CHECK(state.capacity_milli == 4000);
  CHECK(state.allocated_milli == 3000);
  CHECK(state.whole_gpus_free == 1);
}

TEST_CASE(
    "shares of one GPU pack onto one device; a pod that does not fit waits, then starts when a pod "
    "goes",
    "[scheduler]") {
  Fixture f;
  f.cp.create("/api/v1/nodes", node("small", 1));
  f.cp.create("/api/v1/namespaces/default/pods", gpu_pod("a", {{"vkube.io/gpu-milli", "600"}}));
  f.cp.create("/api/v1/namespaces/default/pods",
              gpu_pod("b", json::object(), {{"gpu-fraction", "0.4"}}));
  f.settle();
  CHECK(allocation_of(f.cp, "a") == "0=600");
  CHECK(allocation_of(f.cp, "b") == "0=400");
  f.cp.create("/api/v1/namespaces/default/pods", gpu_pod("c", {{"vkube.io/gpu-milli", "300"}}));
  f.settle();
  CHECK(node_of(f.cp, "c").empty());
  REQUIRE(ControlPlane::eventually([&] { return !condition(f.cp, "c").is_null(); }));
  json cond = condition(f.cp, "c");
  CHECK(cond.value("status", "") == "False");
  CHECK(cond.value("reason", "") == "Unschedulable");
  CHECK(cond.value("message", "") == "0/1 nodes are available: 1 Insufficient vkube.io/gpu-milli.");
  auto failed =
      f.cp.items("/api/v1/namespaces/default/events?fieldSelector=reason%3DFailedScheduling");
  REQUIRE(failed.size() == 1);
  CHECK(failed[0]["type"] == "Warning");
  CHECK(f.scheduler->gpu_state().pending == 1);

  REQUIRE(f.cp.call("DELETE", "/api/v1/namespaces/default/pods/b?gracePeriodSeconds=0").code ==
          200);
  REQUIRE(ControlPlane::eventually([&] { return node_of(f.cp, "c") == "small"; }));
  CHECK(allocation_of(f.cp, "c") == "0=300");
}

TEST_CASE("MIG slices, GPU model selectors, taints and kube's message over many nodes",
          "[scheduler]") {
  Fixture f;
  json mig = node("mig", 0, {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}});
  mig["metadata"]["annotations"] = {
      {"gpu.vkube.io/devices",
       R"({"gpus":[{"index":0,"model":"NVIDIA-H100-80GB-HBM3","memoryMiB":81920,"mig":["3g.40gb","2g.20gb","1g.10gb","1g.10gb"]}]})"}};
  mig["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "2";
  f.cp.create("/api/v1/nodes", mig);
  f.cp.create("/api/v1/nodes", node("t4", 2, {{"nvidia.com/gpu.product", "Tesla-T4"}}));
  f.cp.create(
      "/api/v1/nodes",
      node("tainted", 8, {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}},
           {{"spec",
             {{"taints",
               json::array(
                   {{{"key", "dedicated"}, {"value", "ml"}, {"effect", "NoSchedule"}}})}}}}));

  f.cp.create("/api/v1/namespaces/default/pods",
              gpu_pod("slice", {{"nvidia.com/mig-1g.10gb", "1"}}));
  f.cp.create("/api/v1/namespaces/default/pods",
              gpu_pod("on-t4", {{"nvidia.com/gpu", "1"}}, json::object(),
                      {{"nodeSelector", {{"nvidia.com/gpu.product", "Tesla-T4"}}}}));
  f.cp.create("/api/v1/namespaces/default/pods",
              gpu_pod("a100", {{"nvidia.com/gpu", "4"}}, json::object(), json::parse(R"({
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                  "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB"]}]}]}}},
                "tolerations": [{"key": "dedicated", "operator": "Exists"}]})")));
  f.cp.create("/api/v1/namespaces/default/pods", gpu_pod("eight", {{"nvidia.com/gpu", "8"}}));
  f.settle();
  CHECK(node_of(f.cp, "slice") == "mig");
  CHECK(allocation_of(f.cp, "slice") == "0/2=1g.10gb");
  CHECK(node_of(f.cp, "on-t4") == "t4");
  CHECK(node_of(f.cp, "a100") == "tainted");
  CHECK(node_of(f.cp, "eight").empty());
  REQUIRE(ControlPlane::eventually([&] { return !condition(f.cp, "eight").is_null(); }));
  CHECK(condition(f.cp, "eight").value("message", "") ==
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: ml}, "
        "2 Insufficient nvidia.com/gpu.");

  // Pods of other schedulers are not ours.
  f.cp.create("/api/v1/namespaces/default/pods",
              gpu_pod("theirs", {{"nvidia.com/gpu", "1"}}, json::object(),
                      {{"schedulerName", "kai-scheduler"}}));
  f.settle();
  CHECK(node_of(f.cp, "theirs").empty());
  CHECK(condition(f.cp, "theirs").is_null());

  std::string metrics = f.scheduler->metrics();
  CHECK(metrics.find("vkube_node_gpu_capacity{node=\"t4\",model=\"Tesla-T4\"} 2") !=
        std::string::npos);
  CHECK(metrics.find("vkube_node_mig_slices_allocated{node=\"mig\",profile=\"1g.10gb\"} 1") !=
        std::string::npos);
  CHECK(metrics.find("vkube_namespace_gpu_allocated{namespace=\"default\"} 5") !=
        std::string::npos);
  CHECK(metrics.find("scheduler_pending_pods{queue=\"unschedulable\"} 1") != std::string::npos);
  CHECK(metrics.find("scheduler_pod_scheduling_duration_seconds_count 3") != std::string::npos);
}

TEST_CASE("a restarted scheduler keeps the devices pods already hold", "[scheduler]") {
  Fixture f;
  f.cp.create("/api/v1/nodes", node("n", 2));
  json bound = gpu_pod("held", {{"nvidia.com/gpu", "1"}}, {{"gpu.vkube.io/allocation", "1=1000"}},
                       {{"nodeName", "n"}});
  f.cp.create("/api/v1/namespaces/default/pods", bound);
  f.cp.create("/api/v1/namespaces/default/pods", gpu_pod("new", {{"nvidia.com/gpu", "1"}}));
  f.settle();
  CHECK(allocation_of(f.cp, "new") == "0=1000");
  f.cp.create("/api/v1/namespaces/default/pods", gpu_pod("third", {{"nvidia.com/gpu", "1"}}));
  f.settle();
  CHECK(node_of(f.cp, "third").empty());
}

TEST_CASE("the fragmentation policy keeps GPUs usable for the workload it has seen",
          "[scheduler]") {
  // Two one-GPU nodes; "a" already holds 0.4. The workload so far is mostly
  // half-GPU pods. A 0.2 pod on "a" would leave 0.4 free there, useless to
  // a half: binpack does it anyway, FGD puts it on "b".
  auto place_small = [](vkube::gpu::Policy policy) {
    Fixture f(policy);
    f.cp.create("/api/v1/nodes", node("big", 4, {{"pool", "big"}}));
    f.cp.create("/api/v1/nodes",
                node("a", 1, {{"pool", "small"}, {"kubernetes.io/hostname", "a"}}));
    f.cp.create("/api/v1/nodes", node("b", 1, {{"pool", "small"}}));
    for (const char* name : {"h1", "h2", "h3", "h4"})
      f.cp.create("/api/v1/namespaces/default/pods",
                  gpu_pod(name, {{"vkube.io/gpu-milli", "500"}}, json::object(),
                          {{"nodeSelector", {{"pool", "big"}}}}));
    f.cp.create("/api/v1/namespaces/default/pods",
                gpu_pod("p400", {{"vkube.io/gpu-milli", "400"}}, json::object(),
                        {{"nodeSelector", {{"kubernetes.io/hostname", "a"}}}}));
    f.settle();
    REQUIRE(node_of(f.cp, "p400") == "a");
    f.cp.create("/api/v1/namespaces/default/pods",
                gpu_pod("p200", {{"vkube.io/gpu-milli", "200"}}, json::object(),
                        {{"nodeSelector", {{"pool", "small"}}}}));
    f.settle();
    return std::make_pair(node_of(f.cp, "p200"), f.scheduler->gpu_state().fragmented_milli);
  };
  auto [binpack_node, binpack_frag] = place_small(vkube::gpu::Policy::kBinpack);
  auto [fgd_node, fgd_frag] = place_small(vkube::gpu::Policy::kFragmentation);
  CHECK(binpack_node == "a");
  CHECK(fgd_node == "b");
  CHECK(fgd_frag < binpack_frag);
}
