// `vkube host` through kubectl: simulated GPU nodes that say so, the GPU
// scheduler placing whole, shared, MIG and model-constrained pods on
// devices, an unfittable pod waiting with kube-scheduler's message until a
// pod goes, and a pod that completes after its simulated duration.
#include "fixture.h"

#include <map>

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

constexpr const char* kNodes = R"(nodes:
- name: a100
  count: 2
  cpu: 64
  memory: 512Gi
  gpus: 8
  model: A100-80GB
- name: h100-mig
  gpus: 4
  model: H100-80GB
  mig: {gpus: [3], layout: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]}
- name: t4
  gpus: 2
  model: T4
  sharing: exclusive
)";

std::string pod_yaml(const std::string& name, const std::string& resources,
                     const std::string& extra_spec = "", const std::string& annotations = "") {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n" +
         (annotations.empty() ? "" : "  annotations:\n" + annotations) + "spec:\n" + extra_spec +
         "  containers:\n  - name: main\n    image: nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04\n" +
         (resources.empty() ? "" : "    resources:\n      limits:\n" + resources);
}

std::string jsonpath(Cluster& c, const std::string& object, const std::string& path) {
  Result r = c.kubectl({"get", object, "-o", "jsonpath=" + path});
  INFO(r);
  REQUIRE_THAT(r, Succeeded());
  return r.out;
}

void wait_ready(Cluster& c, const std::string& pod) {
  Result r =
      c.kubectl({"wait", "--for=condition=Ready", "pod/" + pod, "--timeout=20s"}, seconds(30));
  INFO(r << c.server_log());
  REQUIRE_THAT(r, Succeeded());
}

TEST_CASE("vkube host: GPU nodes, GPU pods on devices, waiting and completing pods",
          "[e2e][host]") {
  Cluster c(Cluster::Host{{"--node-config", "{dir}/nodes.yaml"}, {{"nodes.yaml", kNodes}}});

  // The nodes, simulated and saying so.
  REQUIRE(eventually([&] { return c.get_json({"nodes"})["items"].size() == 4; }));
  Result wide = c.kubectl({"get", "nodes", "-o", "wide"});
  INFO(wide);
  REQUIRE_THAT(wide, Succeeded());
  std::vector<std::string> rows = lines(wide.out);
  REQUIRE(rows.size() == 5);
  CHECK(columns(rows[0])[0] == "NAME");
  CHECK(rows[0].find("OS-IMAGE") != std::string::npos);
  for (size_t i = 1; i < rows.size(); ++i) {
    CHECK(columns(rows[i])[1] == "Ready");
    CHECK(rows[i].find("v1.32.0-vkube-sim") != std::string::npos);
    CHECK(rows[i].find("vkube simulated node") != std::string::npos);
  }
  Result labels = c.kubectl({"get", "nodes", "-L", "nvidia.com/gpu.product,nvidia.com/gpu.count",
                             "-l", "vkube.io/simulated=true"});
  INFO(labels);
  REQUIRE_THAT(labels, Succeeded());
  CHECK(labels.out.find("NVIDIA-A100-SXM4-80GB") != std::string::npos);
  CHECK(jsonpath(c, "node/h100-mig", "{.status.allocatable.nvidia\\.com/mig-1g\\.10gb}") == "2");
  CHECK(jsonpath(c, "node/h100-mig", "{.status.allocatable.nvidia\\.com/gpu}") == "3");
  CHECK(jsonpath(c, "node/t4", "{.metadata.labels.nvidia\\.com/mig\\.capable}") == "false");
  const std::string t4_product =
      jsonpath(c, "node/t4", "{.metadata.labels.nvidia\\.com/gpu\\.product}");
  REQUIRE_FALSE(t4_product.empty());

  // Binpack fills the node a pod leaves fullest: the model-constrained pod
  // first, then whole, shared (resource and KAI annotation) and MIG pods.
  c.setup(pod_yaml("on-t4", "        nvidia.com/gpu: 1\n",
                   "  nodeSelector:\n    nvidia.com/gpu.product: " + t4_product + "\n"));
  wait_ready(c, "on-t4");
  CHECK(jsonpath(c, "pod/on-t4", "{.spec.nodeName}") == "t4");
  c.setup(pod_yaml("whole", "        nvidia.com/gpu: 2\n"));
  c.setup(pod_yaml("half", "        vkube.io/gpu-milli: 500\n"));
  c.setup(pod_yaml("kai", "", "", "    gpu-fraction: \"0.25\"\n"));
  c.setup(pod_yaml("slice", "        nvidia.com/mig-1g.10gb: 1\n"));
  for (const char* pod : {"whole", "half", "kai", "slice"}) wait_ready(c, pod);
  const std::string alloc = "{.metadata.annotations.gpu\\.vkube\\.io/allocation}";
  // t4 has one GPU left; the H100 node (3 whole GPUs) ends fuller than an A100 node.
  CHECK(jsonpath(c, "pod/whole", "{.spec.nodeName}") == "h100-mig");
  CHECK(jsonpath(c, "pod/whole", alloc) == "0=1000,1=1000");
  // The two shares pack onto one device, next to the whole GPUs.
  CHECK(jsonpath(c, "pod/half", alloc) == "2=500");
  CHECK(jsonpath(c, "pod/kai", alloc) == "2=250");
  CHECK(jsonpath(c, "pod/slice", "{.spec.nodeName}") == "h100-mig");
  CHECK(jsonpath(c, "pod/slice", alloc) == "3/2=1g.10gb");
  CHECK_FALSE(jsonpath(c, "pod/whole", "{.status.podIP}").empty());
  CHECK(jsonpath(c, "pod/whole", "{.status.phase}") == "Running");

  // describe node: capacity, allocatable and what the pods hold.
  Result described = c.kubectl({"describe", "node", "h100-mig"});
  INFO(described);
  REQUIRE_THAT(described, Succeeded());
  CHECK(described.out.find("Capacity:") != std::string::npos);
  CHECK(described.out.find("Allocatable:") != std::string::npos);
  CHECK(described.out.find("Allocated resources:") != std::string::npos);
  std::map<std::string, std::string> allocated;
  for (const std::string& line : lines(described.out)) {
    std::vector<std::string> cols = columns(line);
    if (cols.size() == 3 && cols[1] == cols[2]) allocated[cols[0]] = cols[1];
  }
  CHECK(allocated["nvidia.com/gpu"] == "2");
  CHECK(allocated["vkube.io/gpu-milli"] == "500");
  CHECK(allocated["nvidia.com/mig-1g.10gb"] == "1");

  // Eight GPUs fit on each empty A100 node; a third eight fits nowhere.
  c.setup(pod_yaml("eight", "        nvidia.com/gpu: 8\n"));
  wait_ready(c, "eight");
  c.setup(pod_yaml("eight-b", "        nvidia.com/gpu: 8\n"));
  wait_ready(c, "eight-b");
  CHECK(jsonpath(c, "pod/eight", "{.spec.nodeName}") == "a100-0");
  CHECK(jsonpath(c, "pod/eight-b", "{.spec.nodeName}") == "a100-1");
  c.setup(pod_yaml("waiting", "        nvidia.com/gpu: 8\n"));
  const std::string cond = "{.status.conditions[?(@.type==\"PodScheduled\")].message}";
  REQUIRE(eventually([&] { return !jsonpath(c, "pod/waiting", cond).empty(); }));
  CHECK(jsonpath(c, "pod/waiting", cond) ==
        "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.");
  CHECK(jsonpath(c, "pod/waiting", "{.status.phase}") == "Pending");
  Result events = c.kubectl({"describe", "pod", "waiting"});
  CHECK(events.out.find("FailedScheduling") != std::string::npos);
  REQUIRE_THAT(c.kubectl({"delete", "pod", "eight", "--wait=true"}), Succeeded());
  wait_ready(c, "waiting");
  CHECK(jsonpath(c, "pod/waiting", "{.spec.nodeName}") == "a100-0");

  // A pod with a simulated duration completes.
  c.setup(pod_yaml("batch", "        vkube.io/gpu-milli: 100\n", "  restartPolicy: Never\n",
                   "    sim.vkube.io/duration: 1s\n"));
  REQUIRE(eventually([&] { return jsonpath(c, "pod/batch", "{.status.phase}") == "Succeeded"; },
                     seconds(20)));
  Result table = c.kubectl({"get", "pod", "batch"});
  CHECK(table.out.find("Completed") != std::string::npos);

  // GPU use per namespace (per tenant on a shared host) in /metrics.
  Result metrics = c.kubectl({"get", "--raw", "/metrics"});
  REQUIRE_THAT(metrics, Succeeded());
  CHECK(metrics.out.find("vkube_namespace_gpu_allocated{namespace=\"default\"} 19") !=
        std::string::npos);
  CHECK(metrics.out.find("scheduler_pod_scheduling_duration_seconds_bucket") != std::string::npos);
}

}  // namespace
}  // namespace vkube::e2e
