// A tenant's GPU share as KAI and Kueue queue objects on a real host: the
// table of docs/gpu-queues.md, one row per setting.
#include <catch2/catch.hpp>

#include "vkube/gpu/host_queues.h"

using json = nlohmann::json;
using vkube::gpu::GpuShare;
using vkube::gpu::HostQueueMode;

namespace {

GpuShare share(std::string_view text) {
  auto s = vkube::gpu::parse_gpu_share(text);
  REQUIRE(s.is_ok());
  return *s;
}

std::vector<json> objects(HostQueueMode mode, std::string_view text) {
  return vkube::gpu::host_queue_objects(mode, share(text), "a", "vkube-a");
}

json kai_queue(std::string_view text) {
  auto objs = objects(HostQueueMode::kKai, text);
  REQUIRE(objs.size() == 2);
  return objs[1];
}

json kueue_cq(std::string_view text) {
  for (const json& o : objects(HostQueueMode::kKueue, text))
    if (o["kind"] == "ClusterQueue") return o;
  FAIL("no ClusterQueue");
  return nullptr;
}

// The GPU quotas of a ClusterQueue, by flavor.
json gpu_flavors(const json& cq) {
  json out = json::object();
  for (const json& f : cq["spec"]["resourceGroups"][1]["flavors"])
    out[f["name"].get<std::string>()] = f["resources"][0];
  return out;
}

}  // namespace

TEST_CASE("host queue modes parse as vkube, kai or kueue", "[host-queues]") {
  CHECK(*vkube::gpu::parse_host_queue_mode("kai") == HostQueueMode::kKai);
  CHECK(*vkube::gpu::parse_host_queue_mode("kueue") == HostQueueMode::kKueue);
  CHECK(*vkube::gpu::parse_host_queue_mode("vkube") == HostQueueMode::kVkube);
  auto bad = vkube::gpu::parse_host_queue_mode("volcano");
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message() == "--host-gpu-sharing must be vkube, kai or kueue, got 'volcano'");
  CHECK(objects(HostQueueMode::kVkube, "deserved=8").empty());
  auto p = vkube::gpu::host_queue_pod_policy(HostQueueMode::kVkube, share("deserved=8"), "a");
  CHECK(p.scheduler_name.empty());
  CHECK(p.labels.empty());
}

TEST_CASE("KAI: a leaf queue under the pool's parent queue", "[host-queues]") {
  auto objs = objects(HostQueueMode::kKai, "deserved=8,limit=24,weight=2");
  REQUIRE(objs.size() == 2);
  const json& pool = objs[0];
  CHECK(pool["apiVersion"] == "scheduling.run.ai/v2");
  CHECK(pool["kind"] == "Queue");
  CHECK(pool["metadata"]["name"] == "vkube-pool");
  CHECK_FALSE(pool["spec"].contains("parentQueue"));
  CHECK(pool["spec"]["resources"]["gpu"] ==
        json({{"quota", 8}, {"limit", -1}, {"overQuotaWeight", 1}}));
  const json& q = objs[1];
  CHECK(q["metadata"]["name"] == "vkube-a");
  CHECK(q["metadata"]["labels"]["vkube.io/tenant"] == "a");
  CHECK(q["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "vkube");
  CHECK(q["metadata"]["annotations"]["vkube.io/gpu-share"] == "deserved=8,limit=24,weight=2");
  CHECK(q["spec"]["parentQueue"] == "vkube-pool");
  CHECK(q["spec"]["resources"]["gpu"] ==
        json({{"quota", 8}, {"limit", 24}, {"overQuotaWeight", 2}}));
  // cpu and memory are not shared out: KAI's -1, unlimited quota and no limit.
  CHECK(q["spec"]["resources"]["cpu"]["quota"] == -1);
  CHECK(q["spec"]["resources"]["memory"]["limit"] == -1);
  CHECK(vkube::gpu::host_queue_collection(q) == "/apis/scheduling.run.ai/v2/queues");
  CHECK(vkube::gpu::kai_pool_queue(20500)["spec"]["resources"]["gpu"]["quota"] == 20.5);
}

TEST_CASE("KAI: no limit, fractions, weight 0, non-preemptible", "[host-queues]") {
  CHECK(kai_queue("deserved=8")["spec"]["resources"]["gpu"]["limit"] == -1);
  // KAI counts GPUs in fractions: no rounding.
  json frac = kai_queue("deserved=0.5,limit=1500m")["spec"]["resources"]["gpu"];
  CHECK(frac["quota"] == 0.5);
  CHECK(frac["limit"] == 1.5);
  CHECK(kai_queue("deserved=2,weight=0")["spec"]["resources"]["gpu"]["overQuotaWeight"] == 0);
  // Non-preemptible: capped at deserved, and its pods say so (KAI keeps
  // non-preemptible pods within quota).
  CHECK(kai_queue("deserved=4,limit=8,preemptible=false")["spec"]["resources"]["gpu"]["limit"] ==
        4);
  auto p = vkube::gpu::host_queue_pod_policy(HostQueueMode::kKai,
                                             share("deserved=4,preemptible=false"), "a");
  CHECK(p.scheduler_name == "kai-scheduler");
  CHECK(p.fractions == "kai");
  CHECK(p.labels ==
        std::map<std::string, std::string>{{"kai.scheduler/queue", "vkube-a"},
                                           {"kai.scheduler/preemptibility", "non-preemptible"}});
  CHECK(vkube::gpu::host_queue_pod_policy(HostQueueMode::kKai, share("deserved=4"), "a")
            .labels.size() == 1);
}

TEST_CASE("KAI: model guarantees cannot map and are named", "[host-queues]") {
  CHECK(kai_queue("deserved=8,model:H100=4")["spec"]["resources"]["gpu"]["quota"] == 8);
  auto notes = vkube::gpu::host_queue_notes(HostQueueMode::kKai, share("deserved=8,model:H100=4"));
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] ==
        "KAI queues have no per-model quota: model:H100=4 is not written; the queue guarantees 8 "
        "GPUs of any model");
  CHECK(vkube::gpu::host_queue_notes(HostQueueMode::kKai, share("deserved=8")).empty());
}

TEST_CASE("Kueue: flavors, a ClusterQueue in the pool's cohort and a LocalQueue", "[host-queues]") {
  auto objs = objects(HostQueueMode::kKueue, "deserved=8,limit=24,weight=2");
  REQUIRE(objs.size() == 4);
  CHECK(objs[0]["kind"] == "ResourceFlavor");
  CHECK(objs[0]["metadata"]["name"] == "vkube-default");
  CHECK(objs[1]["metadata"]["name"] == "vkube-gpu");
  const json& cq = objs[2];
  CHECK(cq["apiVersion"] == "kueue.x-k8s.io/v1beta1");
  CHECK(cq["kind"] == "ClusterQueue");
  CHECK(cq["metadata"]["name"] == "vkube-a");
  CHECK(cq["spec"]["cohort"] == "vkube-pool");
  CHECK(cq["spec"]["namespaceSelector"] ==
        json({{"matchLabels", {{"kubernetes.io/metadata.name", "vkube-a"}}}}));
  CHECK(cq["spec"]["preemption"] == json::parse(R"({"reclaimWithinCohort":"Any",
    "borrowWithinCohort":{"policy":"Never"},"withinClusterQueue":"LowerPriority"})"));
  CHECK(cq["spec"]["fairSharing"]["weight"] == "2");
  const json& rg = cq["spec"]["resourceGroups"];
  CHECK(rg[0]["coveredResources"] == json({"cpu", "memory"}));
  CHECK(rg[1]["coveredResources"] == json({"nvidia.com/gpu"}));
  CHECK(gpu_flavors(cq)["vkube-gpu"] ==
        json({{"name", "nvidia.com/gpu"}, {"nominalQuota", "8"}, {"borrowingLimit", "16"}}));
  CHECK_FALSE(gpu_flavors(cq)["vkube-gpu"].contains("lendingLimit"));
  const json& lq = objs[3];
  CHECK(lq["kind"] == "LocalQueue");
  CHECK(lq["metadata"]["namespace"] == "vkube-a");
  CHECK(lq["metadata"]["name"] == "vkube");
  CHECK(lq["spec"]["clusterQueue"] == "vkube-a");
  CHECK(vkube::gpu::host_queue_collection(lq) ==
        "/apis/kueue.x-k8s.io/v1beta1/namespaces/vkube-a/localqueues");
  auto p = vkube::gpu::host_queue_pod_policy(HostQueueMode::kKueue, share("deserved=8"), "a");
  CHECK(p.scheduler_name.empty());
  CHECK(p.fractions.empty());
  CHECK(p.labels == std::map<std::string, std::string>{{"kueue.x-k8s.io/queue-name", "vkube"}});
}

TEST_CASE("Kueue: no limit, non-preemptible, whole GPUs", "[host-queues]") {
  // Without a limit the tenant borrows up to what the cohort lends.
  CHECK_FALSE(gpu_flavors(kueue_cq("deserved=8"))["vkube-gpu"].contains("borrowingLimit"));
  CHECK(gpu_flavors(kueue_cq("deserved=8,preemptible=false"))["vkube-gpu"]["borrowingLimit"] ==
        "0");
  // nvidia.com/gpu is an integer resource: amounts round down.
  json g = gpu_flavors(kueue_cq("deserved=2.5,limit=3.9"))["vkube-gpu"];
  CHECK(g["nominalQuota"] == "2");
  CHECK(g["borrowingLimit"] == "1");
  auto notes = vkube::gpu::host_queue_notes(HostQueueMode::kKueue, share("deserved=2.5,limit=3.9"));
  REQUIRE(notes.size() == 2);
  CHECK(notes[0] ==
        "Kueue counts whole GPUs (nvidia.com/gpu is an integer resource): deserved 2.5 becomes 2");
  CHECK(kueue_cq("deserved=0,weight=0")["spec"]["fairSharing"]["weight"] == "0");
}

TEST_CASE("Kueue: one flavor per model, borrowing through the any-model flavor", "[host-queues]") {
  auto objs = objects(HostQueueMode::kKueue, "deserved=8,limit=12,model:NVIDIA-H100_80GB=3");
  REQUIRE(objs.size() == 5);
  CHECK(objs[2]["metadata"]["name"] == "vkube-gpu-nvidia-h100-80gb");
  CHECK(objs[2]["spec"]["nodeLabels"] == json({{"nvidia.com/gpu.product", "NVIDIA-H100_80GB"}}));
  json g = gpu_flavors(objs[3]);
  // The model's flavor first (Kueue tries flavors in order), no borrowing
  // there, so that the limit holds across flavors: 3 + 5 + 4 = 12.
  CHECK(objs[3]["spec"]["resourceGroups"][1]["flavors"][0]["name"] == "vkube-gpu-nvidia-h100-80gb");
  CHECK(g["vkube-gpu-nvidia-h100-80gb"] ==
        json({{"name", "nvidia.com/gpu"}, {"nominalQuota", "3"}, {"borrowingLimit", "0"}}));
  CHECK(g["vkube-gpu"] ==
        json({{"name", "nvidia.com/gpu"}, {"nominalQuota", "5"}, {"borrowingLimit", "4"}}));
  // Without a limit each flavor borrows freely.
  json free = gpu_flavors(kueue_cq("deserved=8,model:H100=3"));
  CHECK_FALSE(free["vkube-gpu-h100"].contains("borrowingLimit"));
  auto notes =
      vkube::gpu::host_queue_notes(HostQueueMode::kKueue, share("deserved=8,model:H100=3"));
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("nvidia.com/gpu.product=H100 exactly") != std::string::npos);
}

TEST_CASE("The CRDs each mode needs", "[host-queues]") {
  CHECK(vkube::gpu::host_queue_crds(HostQueueMode::kVkube).empty());
  auto kai = vkube::gpu::host_queue_crds(HostQueueMode::kKai);
  REQUIRE(kai.size() == 1);
  CHECK(kai[0].name == "queues.scheduling.run.ai");
  CHECK(kai[0].group_version == "scheduling.run.ai/v2");
  auto kueue = vkube::gpu::host_queue_crds(HostQueueMode::kKueue);
  REQUIRE(kueue.size() == 3);
  CHECK(kueue[1].name == "clusterqueues.kueue.x-k8s.io");
  CHECK(kueue[1].plural == "clusterqueues");
}
