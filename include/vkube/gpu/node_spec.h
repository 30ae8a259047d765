// Simulated GPU nodes: what a node offers (CPUs, memory, GPUs of a model,
// MIG layout, sharing mode) and the Node object that describes it, with the
// labels GPU Feature Discovery sets and a label saying it is simulated.
// Specs come from flags, a YAML file, the Alibaba v2023 trace's node list, or
// the default pool.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"

namespace vkube::gpu {

using json = nlohmann::json;

// Nodes vkube simulates carry this label ("true") and an annotation saying so.
inline constexpr std::string_view kSimulatedLabel = "vkube.io/simulated";

// A GPU model as GFD names it.
struct GpuModel {
  std::string product;  // "NVIDIA-A100-SXM4-80GB"
  int64_t memory_mib = 0;
  std::string family;  // "ampere"
  bool mig_capable = false;
};
// A model by its product name or a short alias ("A100-80GB", "H100", "T4",
// and the trace's "P100", "V100M16", "V100M32", "G2", "G3", "A10").
// kNotFound for an unknown name.
Result<GpuModel> find_model(std::string_view name);

enum class Sharing {
  kExclusive,    // nvidia.com/gpu only
  kFraction,     // also vkube.io/gpu-milli (1000 per GPU not in MIG mode)
  kTimeSlicing,  // nvidia.com/gpu = GPUs x replicas (device plugin time-slicing)
};

struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 32000;
  int64_t memory_mib = 262144;
  int max_pods = 110;
  int gpus = 8;
  GpuModel model;
  // Per GPU index: the MIG profiles it is split into; missing or empty: the
  // GPU is not in MIG mode. E.g. {{}, ..., {"3g.40gb","2g.20gb","1g.10gb","1g.10gb"}}.
  std::vector<std::vector<std::string>> mig;
  Sharing sharing = Sharing::kFraction;
  int replicas = 1;      // kTimeSlicing
  std::string pod_cidr;  // "10.244.3.0/24"; pods get addresses from it
  std::string internal_ip;
  std::map<std::string, std::string> labels;  // extra labels
  json taints = json::array();                // core/v1 taints
};

// The Node object for `spec`: capacity = allocatable (cpu, memory, pods,
// ephemeral-storage, nvidia.com/gpu, vkube.io/gpu-milli, nvidia.com/mig-*),
// GFD labels (nvidia.com/gpu.product, .memory, .count, .family,
// .replicas, .sharing-strategy, mig.capable, mig.strategy, mps.capable),
// kubernetes.io/hostname, kubernetes.io/os|arch, kSimulatedLabel, the
// kDevicesAnnotation, nodeInfo saying it is simulated, and Ready.
json node_object(const NodeSpec& spec, std::string_view now_rfc3339);

// The default pool of `vkube host`: three nodes with 8 A100-80GB each
// (shareable), one with 8 H100-80GB whose last two GPUs are MIG-partitioned.
std::vector<NodeSpec> default_pool();

// Flags: `count` nodes named <prefix>-0..N-1 of one shape. `mig_layout` is
// a list of profiles ("3g.40gb,2g.20gb,1g.10gb,1g.10gb") applied to the
// last `mig_gpus` GPUs. kInvalid on bad values (unknown model or profile, a
// layout larger than the GPU: more compute or memory slices than it has, or
// a profile more often than it allows; see mig_profiles).
struct PoolFlags {
  int count = 4;
  std::string prefix = "gpu-node";
  int64_t cpu_milli = 64000;
  int64_t memory_mib = 524288;
  int gpus = 8;
  std::string model = "A100-80GB";
  int mig_gpus = 0;
  std::string mig_layout;
  std::string sharing = "fraction";  // exclusive | fraction | time-slicing
  int replicas = 1;
};
Result<std::vector<NodeSpec>> pool_from_flags(const PoolFlags& flags);

// A YAML file (fields left out default as PoolFlags' do; pods: 110):
//   nodes:
//   - name: a100            # a prefix when count > 1
//     count: 2
//     cpu: 64               # cores (or "64000m")
//     memory: 512Gi
//     gpus: 8
//     model: A100-80GB
//     gpuMemory: 81920      # MiB, overrides the model's
//     mig: {gpus: [6, 7], layout: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]}
//     sharing: fraction     # exclusive | fraction | time-slicing
//     replicas: 4           # time-slicing
//     pods: 110             # max pods
//     labels: {zone: a}
//     taints: [{key: k, value: v, effect: NoSchedule}]
// kInvalid naming the node entry ("nodes[1] (h100): memory: ...") for a bad
// or unknown field, a MIG layout the GPU cannot hold, or a repeated name.
Result<std::vector<NodeSpec>> pool_from_yaml(std::string_view yaml_text);

// The trace's node list (openb_node_list_gpu_node.csv:
// sn,cpu_milli,memory_mib,gpu,model), shareable (Sharing::kFraction).
// `limit` > 0 keeps the first nodes. kUnavailable when the file cannot be
// read; kInvalid naming the line for a malformed one or an unknown model.
Result<std::vector<NodeSpec>> pool_from_trace(const std::string& csv_path, size_t limit = 0);

// Gives each spec its pod CIDR and internal IP where they are empty, skipping
// those other specs hold. Pod CIDRs are /24s: 10.244.0.0/24 to
// 10.255.255.0/24 first, then the rest of 10.0.0.0/8 outside the default
// service range 10.96.0.0/12, then 100.64.0.0/10 (77,824 nodes in all).
// Internal IPs count up from 172.16.0.1, skipping .0 and .255.
void assign_addresses(std::vector<NodeSpec>& specs);

// The MIG profiles a model offers, e.g. {"1g.10gb": 7, "2g.20gb": 3, ...}
// (profile -> most slices per GPU); empty for models without MIG.
std::map<std::string, int> mig_profiles(const GpuModel& model);

}  // namespace vkube::gpu
