// The scheduler's view of nodes and the pods on them (kube-scheduler's
// NodeInfo): what each node offers, what its pods (bound or assumed)
// request, and which GPU devices they hold. Parsed once per object change,
// so filtering a node is arithmetic, not JSON.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vkube/api/json_path.h"
#include "vkube/controllers/informers.h"
#include "vkube/gpu/resources.h"

namespace vkube::scheduler {

using json = nlohmann::json;

struct Resources {
  int64_t cpu_milli = 0;
  int64_t memory = 0;     // bytes
  int64_t ephemeral = 0;  // bytes
  int64_t pods = 0;
  // Other extended resources, in thousandths (GPU resources are counted by
  // device, in gpu::DeviceState, not here).
  std::map<std::string, int64_t> scalar;
};

using api::json_at;

// True for the resources the device model accounts.
bool is_gpu_resource(std::string_view name);

struct Taint {
  std::string key, value, effect;
};

// One pod as the scheduler needs it.
struct PodInfo {
  std::string key;  // "ns/name"
  std::string uid;
  std::string ns;
  Resources requests;
  gpu::GpuRequest gpu;
  gpu::Allocation allocation;  // on its node
  int32_t priority = 0;
  // What it counts against its tenant's GPU share, in thousandths of a GPU
  // (gpu::usage_of): 0 for a pod without GPUs.
  int64_t gpu_milli = 0;
  bool terminating = false;  // deletionTimestamp set: its GPUs are being freed
  std::string created;       // creationTimestamp (RFC 3339: orders as text)
  // Bound while its tenant held more than deserved (gpu::kBorrowingAnnotation):
  // it was told it may be reclaimed, so it goes before pods that were not.
  bool borrowing = false;
  // The GPU products it may run on (nodeSelector / required affinity on
  // nvidia.com/gpu.product; empty: any), and the product of the node that
  // holds it ("" while unplaced or on a node without GPUs).
  std::vector<std::string> models;
  std::string model;
  // Its gang (gpu::kPodGroupAnnotation, "" for none) and the gang's size.
  std::string group;
  int group_size = 0;
};

// kube's effective requests of a pod (sum of containers, or the largest init
// container, plus overhead), one pod slot, and its GPU request.
// kInvalid when the GPU request is malformed.
Result<PodInfo> pod_info(const json& pod);

class NodeInfo {
 public:
  explicit NodeInfo(const json& node);
  // Re-reads the node object (labels, taints, allocatable, devices), keeping
  // the pods; their devices are taken again on the new device list.
  void update(const json& node);

  const std::string& name() const { return name_; }
  const std::vector<std::pair<std::string, std::string>>& labels() const { return labels_; }
  const std::string* label(std::string_view key) const;
  const std::vector<Taint>& taints() const { return taints_; }
  bool unschedulable() const { return unschedulable_; }
  const Resources& allocatable() const { return allocatable_; }
  const Resources& requested() const { return requested_; }
  const gpu::DeviceState& devices() const { return devices_; }
  const std::unordered_map<std::string, PodInfo>& pods() const { return pods_; }
  bool has_pod(const std::string& uid) const { return pods_.count(uid) > 0; }

  // Adds a pod (its devices must be free: Conflict otherwise, and nothing changes).
  Status add_pod(PodInfo pod);
  // Removes a pod by uid; false when it is not here.
  bool remove_pod(const std::string& uid);
  // The pod of `uid` here, to update its terminating flag; null when absent.
  PodInfo* pod(const std::string& uid);

  // Memoised fragmentation for the workload epoch `epoch`.
  bool fragmentation_cached(uint64_t epoch, double* out) const;
  void cache_fragmentation(uint64_t epoch, double value) const;

 private:
  void parse(const json& node);

  std::string name_;
  std::vector<std::pair<std::string, std::string>> labels_;
  std::vector<Taint> taints_;
  bool unschedulable_ = false;
  Resources allocatable_;
  Resources requested_;
  gpu::DeviceState devices_;
  std::unordered_map<std::string, PodInfo> pods_;
  mutable uint64_t frag_epoch_ = 0;
  mutable bool frag_valid_ = false;
  mutable double frag_ = 0;
};

}  // namespace vkube::scheduler
