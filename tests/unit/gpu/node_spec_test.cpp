// Simulated node specs: the model catalog and MIG geometry, the Node object
// a spec becomes (GFD labels, capacity, the devices annotation), and the
// pools read from flags, YAML and the Alibaba trace's node list.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "support/source_dir.h"
#include "vkube/gpu/node_spec.h"
#include "vkube/gpu/resources.h"

namespace vkube::gpu {
namespace {

// The shared trace folder, found from this file: tests/unit/gpu/ -> ../shared.
std::string trace_node_list() {
  return (vkube::testing::source_dir_of(__FILE__) /
          "../../../../shared/traces/alibaba-gpu-v2023/openb_node_list_gpu_node.csv")
      .lexically_normal()
      .string();
}

NodeSpec h100_with_mig() {
  NodeSpec s;
  s.name = "h100-0";
  s.cpu_milli = 63500;
  s.memory_mib = 524288;
  s.gpus = 8;
  s.model = *find_model("H100");
  s.mig.resize(8);
  s.mig[6] = {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"};
  s.mig[7] = std::vector<std::string>(7, "1g.10gb");
  s.sharing = Sharing::kFraction;
  s.pod_cidr = "10.244.3.0/24";
  s.internal_ip = "172.16.0.4";
  s.labels = {{"zone", "a"}};
  s.taints = json::array({{{"key", "gpu"}, {"value", "h100"}, {"effect", "NoSchedule"}}});
  return s;
}

std::string label(const json& node, const std::string& key) {
  return node["metadata"]["labels"].value(key, "<absent>");
}

TEST_CASE("models: aliases, GFD product names and MIG profiles", "[gpu]") {
  CHECK(find_model("A100-80GB")->product == "NVIDIA-A100-SXM4-80GB");
  CHECK(find_model("a100-40gb")->memory_mib == 40960);
  CHECK(find_model("NVIDIA-H100-80GB-HBM3")->family == "hopper");
  CHECK(find_model("H200")->memory_mib == 144384);
  CHECK(find_model("V100M32")->product == "Tesla-V100-SXM2-32GB");
  CHECK(find_model("V100M16")->memory_mib == 16384);
  CHECK(find_model("G2")->product == "Alibaba-G2");
  CHECK(find_model("T4")->mig_capable == false);
  CHECK(find_model("B200").status().code() == Code::kNotFound);

  auto a100 = mig_profiles(*find_model("A100-40GB"));
  CHECK(a100 == std::map<std::string, int>{
                    {"1g.5gb", 7}, {"2g.10gb", 3}, {"3g.20gb", 2}, {"4g.20gb", 1}, {"7g.40gb", 1}});
  CHECK(mig_profiles(*find_model("H200")).count("7g.141gb") == 1);
  CHECK(mig_profiles(*find_model("A30")) ==
        std::map<std::string, int>{{"1g.6gb", 4}, {"2g.12gb", 2}, {"4g.24gb", 1}});
  CHECK(mig_profiles(*find_model("L4")).empty());
}

TEST_CASE("node_object: a node with MIG GPUs", "[gpu]") {
  json node = node_object(h100_with_mig(), "2026-01-01T00:00:00Z");
  CHECK(node["kind"] == "Node");
  CHECK(node["metadata"]["name"] == "h100-0");
  CHECK(label(node, "kubernetes.io/hostname") == "h100-0");
  CHECK(label(node, "vkube.io/simulated") == "true");
  CHECK(label(node, "node.kubernetes.io/instance-type") == "sim-8xH100-80GB-HBM3");
  CHECK(label(node, "nvidia.com/gpu.product") == "NVIDIA-H100-80GB-HBM3");
  CHECK(label(node, "nvidia.com/gpu.count") == "8");
  CHECK(label(node, "nvidia.com/gpu.memory") == "81920");
  CHECK(label(node, "nvidia.com/mig.capable") == "true");
  CHECK(label(node, "nvidia.com/mig.strategy") == "mixed");
  CHECK(label(node, "nvidia.com/gpu.sharing-strategy") == "none");
  CHECK(label(node, "nvidia.com/mig-1g.10gb.count") == "9");
  CHECK(label(node, "nvidia.com/mig-3g.40gb.count") == "1");
  CHECK(label(node, "zone") == "a");

  const json& cap = node["status"]["capacity"];
  CHECK(cap["cpu"] == "63500m");
  CHECK(cap["memory"] == "524288Mi");
  CHECK(cap["pods"] == "110");
  CHECK(cap["nvidia.com/gpu"] == "6");  // the two MIG GPUs are offered as slices
  CHECK(cap["vkube.io/gpu-milli"] == "6000");
  CHECK(cap["nvidia.com/mig-1g.10gb"] == "9");
  CHECK(cap["nvidia.com/mig-2g.20gb"] == "1");
  CHECK(node["status"]["allocatable"] == cap);

  json devices =
      json::parse(node["metadata"]["annotations"]["gpu.vkube.io/devices"].get<std::string>());
  REQUIRE(devices["gpus"].size() == 8);
  CHECK(devices["gpus"][0] ==
        json{{"index", 0}, {"model", "NVIDIA-H100-80GB-HBM3"}, {"memoryMiB", 81920}});
  CHECK(devices["gpus"][6]["mig"] == json{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"});
  CHECK(node["metadata"]["annotations"]["vkube.io/simulated"].get<std::string>().find(
            "simulated by vkube host") != std::string::npos);

  CHECK(node["spec"]["podCIDR"] == "10.244.3.0/24");
  CHECK(node["spec"]["podCIDRs"] == json{"10.244.3.0/24"});
  CHECK(node["spec"]["providerID"] == "vkube-sim://h100-0");
  CHECK(node["spec"]["taints"][0]["effect"] == "NoSchedule");

  const json& st = node["status"];
  CHECK(st["addresses"][0] == json{{"type", "InternalIP"}, {"address", "172.16.0.4"}});
  CHECK(st["nodeInfo"]["kubeletVersion"] == "v1.32.0-vkube-sim");
  CHECK(st["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 10250);
  CHECK(st["conditions"][3]["type"] == "Ready");
  CHECK(st["conditions"][3]["status"] == "True");
  CHECK(st["conditions"][3]["reason"] == "KubeletReady");
  // Stable across restarts, distinct between nodes.
  NodeSpec other = h100_with_mig();
  other.name = "h100-1";
  CHECK(st["nodeInfo"]["machineID"] ==
        node_object(h100_with_mig(), "2027-01-01T00:00:00Z")["status"]["nodeInfo"]["machineID"]);
  CHECK(st["nodeInfo"]["machineID"] != node_object(other, "")["status"]["nodeInfo"]["machineID"]);
}

TEST_CASE("node_object: the GPU model reads the node back as the scheduler will", "[gpu]") {
  NodeGpus gpus = NodeGpus::of_node(node_object(h100_with_mig(), "2026-01-01T00:00:00Z"));
  REQUIRE(gpus.gpus.size() == 8);
  CHECK(gpus.gpus[7].mig.size() == 7);
  CHECK(gpus.gpus[0].model == "NVIDIA-H100-80GB-HBM3");
}

TEST_CASE("node_object: a time-slicing node", "[gpu]") {
  NodeSpec s;
  s.name = "t4-0";
  s.gpus = 4;
  s.model = *find_model("T4");
  s.sharing = Sharing::kTimeSlicing;
  s.replicas = 4;
  json node = node_object(s, "2026-01-01T00:00:00Z");
  CHECK(label(node, "nvidia.com/gpu.product") == "Tesla-T4-SHARED");
  CHECK(label(node, "nvidia.com/gpu.replicas") == "4");
  CHECK(label(node, "nvidia.com/gpu.sharing-strategy") == "time-slicing");
  CHECK(label(node, "nvidia.com/gpu.count") == "4");
  CHECK(label(node, "nvidia.com/mig.strategy") == "none");
  CHECK(label(node, "nvidia.com/mig.capable") == "false");
  CHECK(node["status"]["capacity"]["nvidia.com/gpu"] == "16");
  CHECK_FALSE(node["status"]["capacity"].contains("vkube.io/gpu-milli"));
  CHECK(node["status"]["capacity"]["cpu"] == "32");
  CHECK_FALSE(node["spec"].contains("taints"));
}

TEST_CASE("default_pool and pool_from_flags", "[gpu]") {
  auto pool = default_pool();
  REQUIRE(pool.size() == 4);
  CHECK(pool[0].model.product == "NVIDIA-A100-SXM4-80GB");
  CHECK(pool[3].mig[7].size() == 7);

  PoolFlags f;
  f.count = 3;
  f.prefix = "a30";
  f.model = "A30";
  f.gpus = 4;
  f.mig_gpus = 1;
  f.mig_layout = "2g.12gb, 1g.6gb,1g.6gb";
  auto nodes = pool_from_flags(f);
  REQUIRE(nodes.is_ok());
  REQUIRE(nodes->size() == 3);
  CHECK((*nodes)[2].name == "a30-2");
  CHECK((*nodes)[0].mig[3] == std::vector<std::string>{"2g.12gb", "1g.6gb", "1g.6gb"});
  CHECK((*nodes)[0].mig[0].empty());

  f.mig_layout = "4g.24gb,1g.6gb";  // 5 of the A30's 4 compute slices
  auto too_big = pool_from_flags(f);
  REQUIRE(too_big.status().code() == Code::kInvalid);
  CHECK_THAT(too_big.status().message(), Catch::Contains("compute slices"));
  f.mig_layout = "3g.40gb";
  CHECK_THAT(pool_from_flags(f).status().message(),
             Catch::Contains("does not exist on NVIDIA-A30"));
  f.model = "T4";
  CHECK_THAT(pool_from_flags(f).status().message(), Catch::Contains("no MIG mode"));
  f.model = "X1";
  CHECK(pool_from_flags(f).status().code() == Code::kInvalid);
}

TEST_CASE("pool_from_yaml: the documented format", "[gpu]") {
  auto pool = pool_from_yaml(R"(
nodes:
- name: a100
  count: 2
  cpu: 64
  memory: 512Gi
  gpus: 8
  model: A100-80GB
  mig: {gpus: [6, 7], layout: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]}
  sharing: fraction
  labels: {zone: a}
  taints: [{key: k, value: v, effect: NoSchedule}]
- name: h200
  cpu: "95500m"
  memory: 1Ti
  gpus: 4
  model: H200
  gpuMemory: 143771
  sharing: time-slicing
  replicas: 4
  pods: 250
)");
  REQUIRE(pool.is_ok());
  REQUIRE(pool->size() == 3);
  const NodeSpec& a = (*pool)[1];
  CHECK(a.name == "a100-1");
  CHECK(a.cpu_milli == 64000);
  CHECK(a.memory_mib == 524288);
  CHECK(a.mig[7] == std::vector<std::string>{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"});
  CHECK(a.mig[5].empty());
  CHECK(a.labels.at("zone") == "a");
  CHECK(a.taints[0]["effect"] == "NoSchedule");
  const NodeSpec& h = (*pool)[2];
  CHECK(h.name == "h200");
  CHECK(h.cpu_milli == 95500);
  CHECK(h.memory_mib == 1048576);
  CHECK(h.model.memory_mib == 143771);
  CHECK(h.sharing == Sharing::kTimeSlicing);
  CHECK(h.replicas == 4);
  CHECK(h.max_pods == 250);
}

TEST_CASE("pool_from_yaml: bad input names the entry", "[gpu]") {
  auto error_of = [](const std::string& text) {
    auto r = pool_from_yaml(text);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kInvalid);
    return r.status().message();
  };
  CHECK_THAT(error_of("nodes:\n- name: ok\n- name: bad\n  memory: 12X\n"),
             Catch::Contains("nodes[1] (bad): memory: \"12X\""));
  CHECK_THAT(
      error_of(
          "nodes:\n- name: m\n  model: A100-40GB\n  mig: {gpus: [0], layout: [7g.40gb, 1g.5gb]}\n"),
      Catch::Contains("nodes[0] (m): mig:") && Catch::Contains("compute slices"));
  CHECK_THAT(error_of("nodes:\n- name: m\n  gpus: 2\n  mig: {gpus: [2], layout: [1g.10gb]}\n"),
             Catch::Contains("GPU 2 does not exist"));
  CHECK_THAT(error_of("nodes:\n- name: x\n  gpuz: 8\n"), Catch::Contains("unknown field \"gpuz\""));
  CHECK_THAT(error_of("nodes:\n- name: x\n  model: Z80\n"),
             Catch::Contains("nodes[0] (x): model:"));
  CHECK_THAT(error_of("nodes:\n- name: x\n  sharing: mps\n"),
             Catch::Contains("unknown mode \"mps\""));
  CHECK_THAT(error_of("nodes:\n- name: x\n  taints: [{key: k, effect: Sometimes}]\n"),
             Catch::Contains("Sometimes"));
  CHECK_THAT(error_of("nodes:\n- name: Bad_Name\n"), Catch::Contains("name \"Bad_Name\""));
  CHECK_THAT(error_of("nodes:\n- name: a\n- name: a\n"), Catch::Contains("\"a\" is used twice"));
  CHECK_THAT(error_of("nodes:\n- cpu: 4\n"), Catch::Contains("nodes[0]: name: required"));
  CHECK_THAT(error_of("nodes: [\n"), Catch::Contains("node pool"));
  CHECK_THAT(error_of("gpus: 8\n"), Catch::Contains("a list \"nodes\""));
}

TEST_CASE("pool_from_trace: the trace's CSV format", "[gpu]") {
  // Rows in the trace's format (sn,cpu_milli,memory_mib,gpu,model), written
  // here so the test does not need the shared trace folder.
  const std::string path =
      (std::filesystem::temp_directory_path() / ("vkube-trace-" + std::to_string(::getpid()) + ".csv"))
          .string();
  {
    std::ofstream out(path);
    out << "sn,cpu_milli,memory_mib,gpu,model\n"
           "node-a,96000,393216,8,G2\n"
           "node-b,32000,131072,1,T4\n"
           "node-c,64000,262144,4,V100M32\n";
  }
  auto pool = pool_from_trace(path);
  std::filesystem::remove(path);
  INFO(pool.status().to_string());
  REQUIRE(pool.is_ok());
  REQUIRE(pool->size() == 3);
  CHECK((*pool)[0].name == "node-a");
  CHECK((*pool)[0].cpu_milli == 96000);
  CHECK((*pool)[0].gpus == 8);
  CHECK((*pool)[0].model.product == "Alibaba-G2");
  CHECK((*pool)[1].model.product == "Tesla-T4");
  CHECK((*pool)[2].memory_mib == 262144);
}

TEST_CASE("pool_from_trace: the Alibaba v2023 node list", "[gpu]") {
  if (!std::filesystem::exists(trace_node_list())) {
    WARN("the shared trace folder is not here (" << trace_node_list() << "): skipped");
    return;
  }
  auto pool = pool_from_trace(trace_node_list());
  INFO(pool.status().to_string());
  REQUIRE(pool.is_ok());
  REQUIRE(pool->size() == 1213);
  const NodeSpec& first = (*pool)[0];
  CHECK(first.name == "openb-node-0000");
  CHECK(first.cpu_milli == 64000);
  CHECK(first.memory_mib == 262144);
  CHECK(first.gpus == 2);
  CHECK(first.model.product == "Tesla-P100-PCIE-16GB");
  CHECK(first.sharing == Sharing::kFraction);
  std::set<std::string> models;
  int gpus = 0;
  for (const NodeSpec& s : *pool) {
    models.insert(s.model.product);
    gpus += s.gpus;
  }
  CHECK(models.size() == 7);
  CHECK(models.count("Alibaba-G2") == 1);
  CHECK(gpus > 6000);  // "about 6,200 GPUs"

  auto some = pool_from_trace(trace_node_list(), 10);
  REQUIRE(some.is_ok());
  CHECK(some->size() == 10);
  CHECK(pool_from_trace("/nonexistent/nodes.csv").status().code() == Code::kUnavailable);
}

TEST_CASE("assign_addresses: distinct pod ranges and node addresses", "[gpu]") {
  std::vector<NodeSpec> specs(70000);
  for (size_t i = 0; i < specs.size(); ++i) specs[i].name = "n" + std::to_string(i);
  specs[1].pod_cidr = "10.244.0.0/24";  // taken by hand: not handed out again
  assign_addresses(specs);
  CHECK(specs[0].pod_cidr == "10.244.1.0/24");
  CHECK(specs[0].internal_ip == "172.16.0.1");
  CHECK(specs[254].internal_ip == "172.16.1.1");
  std::set<std::string> cidrs, ips;
  int in_service_range = 0;  // the default service range, 10.96.0.0/12
  for (const NodeSpec& s : specs) {
    cidrs.insert(s.pod_cidr);
    ips.insert(s.internal_ip);
    int second = std::stoi(s.pod_cidr.substr(s.pod_cidr.find('.') + 1));
    in_service_range += s.pod_cidr.starts_with("10.") && second >= 96 && second < 112;
  }
  CHECK(in_service_range == 0);
  CHECK_FALSE(cidrs.count(""));
  CHECK(cidrs.size() == specs.size());
  CHECK(ips.size() == specs.size());
}

}  // namespace
}  // namespace vkube::gpu
