// The GPU resource model shared by the host scheduler, the simulated nodes and
// the syncer: what a pod asks for (whole GPUs, a share of one GPU, MIG
// slices), what a node has (its physical GPUs and their MIG layout), and which
// device each pod holds. Pure values: no I/O, no threads.
//
// A pod asks for GPUs in any of these forms (requests and limits of its
// containers, summed; init containers by their maximum, as kube does):
//   nvidia.com/gpu: N            N whole GPUs, distinct devices
//   vkube.io/gpu-milli: M        M/1000 of one GPU (1..1000); the share must
//                                fit on a single device
//   annotation gpu-fraction: F   KAI's form: F of one GPU (0 < F <= 1), e.g. "0.5"
//   annotation gpu-memory: MiB   KAI's form: that much memory of one GPU; the
//                                share is memory / the device's memory
//   nvidia.com/mig-<profile>: N  N MIG slices of that profile (e.g. 1g.10gb)
// The device a pod holds is recorded on the pod, in the annotation
// gpu.vkube.io/allocation (see Allocation::format).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"

namespace vkube::gpu {

using json = nlohmann::json;

inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";
inline constexpr std::string_view kGpuMilliResource = "vkube.io/gpu-milli";
inline constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";
inline constexpr std::string_view kFractionAnnotation = "gpu-fraction";  // KAI
inline constexpr std::string_view kGpuMemoryAnnotation = "gpu-memory";   // KAI, MiB
// On pods: the devices the scheduler gave the pod.
inline constexpr std::string_view kAllocationAnnotation = "gpu.vkube.io/allocation";
// On nodes: the node's GPUs and their MIG layout (see NodeGpus::to_json).
// Nodes without it are read from their capacity (nvidia.com/gpu, MIG resources).
inline constexpr std::string_view kDevicesAnnotation = "gpu.vkube.io/devices";
// GPU Feature Discovery's labels.
inline constexpr std::string_view kProductLabel = "nvidia.com/gpu.product";
inline constexpr std::string_view kMemoryLabel = "nvidia.com/gpu.memory";
inline constexpr std::string_view kCountLabel = "nvidia.com/gpu.count";

// What one pod asks for.
struct GpuRequest {
  int whole = 0;                   // whole GPUs (distinct devices)
  int milli = 0;                   // a share of one GPU in thousandths (1..1000); 0: none
  int64_t memory_mib = 0;          // a share of one GPU by memory (gpu-memory); 0: none
  std::map<std::string, int> mig;  // MIG profile ("1g.10gb") -> slices
  bool empty() const { return whole == 0 && milli == 0 && memory_mib == 0 && mig.empty(); }
  bool shared() const { return milli > 0 || memory_mib > 0; }
  // "2 GPUs", "0.5 GPU", "4096 MiB of one GPU", "1 nvidia.com/mig-1g.10gb"
  std::string describe() const;
  bool operator==(const GpuRequest&) const = default;
};

// The GPU request of a pod object. kInvalid for a malformed gpu-fraction /
// gpu-memory annotation, a share above one GPU, or a share combined with
// whole GPUs.
Result<GpuRequest> request_of(const json& pod);

// One physical GPU of a node.
struct Gpu {
  int index = 0;
  std::string model;  // GFD product, e.g. "NVIDIA-A100-SXM4-80GB"
  int64_t memory_mib = 0;
  // MIG mode: the profiles of its slices ("3g.40gb", "1g.10gb", ...). A GPU
  // in MIG mode is not offered as nvidia.com/gpu and takes no shares.
  std::vector<std::string> mig;
  bool operator==(const Gpu&) const = default;
};

struct NodeGpus {
  std::vector<Gpu> gpus;
  // The node offers shares of its GPUs (vkube.io/gpu-milli).
  bool shareable = false;
  // {"gpus":[{"index":0,"model":"...","memoryMiB":81920,"mig":["1g.10gb",...]}]}
  json to_json() const;
  // From the node's kDevicesAnnotation when present, else from its allocatable
  // (nvidia.com/gpu devices with the GFD product and memory labels, and one
  // pseudo GPU per MIG resource holding that many slices). Under time-slicing
  // (label nvidia.com/gpu.replicas > 1) each replica is a device of its own.
  // shareable: allocatable vkube.io/gpu-milli > 0.
  static NodeGpus of_node(const json& node);
  int whole_count() const;  // GPUs not in MIG mode
};

// The devices one pod holds on its node.
struct Allocation {
  struct Share {
    int gpu = 0;
    int milli = 0;  // 1000 for a whole GPU
    bool operator==(const Share&) const = default;
  };
  struct Slice {
    int gpu = 0;
    int slice = 0;  // index into Gpu::mig
    std::string profile;
    bool operator==(const Slice&) const = default;
  };
  std::vector<Share> shares;
  std::vector<Slice> slices;

  bool empty() const { return shares.empty() && slices.empty(); }
  // "0=1000,1=1000" (whole GPUs 0 and 1), "3=500" (half of GPU 3),
  // "7/2=1g.10gb" (slice 2 of GPU 7, profile 1g.10gb); entries joined by ','.
  std::string format() const;
  // kInvalid on a malformed annotation value.
  static Result<Allocation> parse(std::string_view text);
  int64_t milli() const;  // sum of shares
  bool operator==(const Allocation&) const = default;
};

// Per-node bookkeeping: how much of each GPU, and which MIG slices, pods hold.
class DeviceState {
 public:
  DeviceState() = default;
  explicit DeviceState(NodeGpus gpus);

  const NodeGpus& gpus() const { return gpus_; }
  // Thousandths of GPU `i` (position in gpus().gpus) held by pods.
  int used_milli(size_t i) const { return used_[i]; }
  int free_milli(size_t i) const;  // 0 for a GPU in MIG mode
  bool slice_free(size_t i, size_t slice) const;

  // Records / forgets a pod's devices. kInvalid when it names a device the
  // node lacks; kConflict (and no change) when it overlaps what is held.
  Status take(const Allocation& a);
  void release(const Allocation& a);

  int64_t capacity_milli() const;   // 1000 per GPU not in MIG mode
  int64_t allocated_milli() const;  // held of those
  int whole_free() const;           // GPUs not in MIG mode with nothing held
  int slices_free(std::string_view profile) const;

 private:
  int position(int gpu_index) const;  // -1 when absent
  NodeGpus gpus_;
  std::vector<int> used_;                 // per GPU, milli
  std::vector<std::vector<bool>> taken_;  // per GPU, per MIG slice
};

enum class Policy {
  kBinpack,        // fill the fullest node and GPU first
  kSpread,         // the emptiest first
  kFragmentation,  // least growth of GPU fragmentation (FGD, ATC '23)
};
Result<Policy> parse_policy(std::string_view name);  // "binpack", "spread", "fragmentation"
std::string_view policy_name(Policy p);

// A kind of pod the cluster runs, and how common it is: the workload the
// fragmentation measure is taken against.
struct TaskClass {
  int64_t cpu_milli = 0;
  GpuRequest gpu;
  double weight = 0;  // popularity; need not sum to one
};

// The expected GPU capacity (milli) of a node that a task drawn from
// `workload` could not use (the FGD paper's F_n(M)): for each class, a node
// whose free CPU (`free_cpu_milli`) or GPUs cannot hold the task strands all
// its free GPU capacity; one that can strands the GPUs whose free share is
// too small for it.
double fragmentation(const DeviceState& state, int64_t free_cpu_milli,
                     const std::vector<TaskClass>& workload);

// Picks the devices for `request` on a node, or nullopt when they do not fit
// (then `*reason`, if given, says why, in kube-scheduler's words: "Insufficient
// nvidia.com/gpu"). kBinpack takes the fullest GPUs that fit, kSpread the
// emptiest, kFragmentation the one that least increases fragmentation()
// (`free_cpu_after` and `workload` are used by it alone; it stores the
// node's fragmentation after the placement in `*fragmentation_after`).
std::optional<Allocation> choose(const DeviceState& state, const GpuRequest& request, Policy policy,
                                 std::string* reason = nullptr, int64_t free_cpu_after = 0,
                                 const std::vector<TaskClass>* workload = nullptr,
                                 double* fragmentation_after = nullptr);

// The thousandths of GPU `gpu` (a position in state.gpus().gpus) a shared
// request needs there: its milli, or its memory over the GPU's memory
// (rounded up); 0 when the GPU cannot take the share at all.
int share_milli(const DeviceState& state, size_t gpu, const GpuRequest& request);

}  // namespace vkube::gpu
