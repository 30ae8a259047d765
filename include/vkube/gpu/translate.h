// How a tenant's GPU request becomes one the host's GPU stack understands
// (the syncer applies it to every pod it puts on the host). A per-tenant
// policy says which stack the host runs; see ../shared/reference/GPU-SHARING.md.
//
//   whole GPUs (nvidia.com/gpu)  kept as they are, on every host
//   a share of one GPU           kMilli:       vkube.io/gpu-milli (the embedded host)
//   (vkube.io/gpu-milli, or KAI's kTimeSlicing: nvidia.com/gpu.shared: 1 (a time-sliced
//    gpu-fraction / gpu-memory               replica; the share itself is not enforced)
//    annotations)                kHami:        nvidia.com/gpu: 1 + nvidia.com/gpumem (MiB)
//                                              + nvidia.com/gpucores (percent)
//                                kKai:         annotation gpu-fraction (or gpu-memory) on
//                                              the pod, KAI's scheduler
//   MIG slices                   kAsIs: kept; kSmallestFit: the smallest profile the host
//                                offers with at least the compute and memory asked for
//
// Annotations the host's GPU stack owns (gpu.vkube.io/allocation,
// hami.io/vgpu-*, volcano.sh/devices-to-allocate, runai-gpu-group) are removed
// from what the tenant sent. The scheduler name and queue labels are the
// operator's host policy's (vkube/syncer/host_policy.h), not this step's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"

namespace vkube::gpu {

enum class FractionMode { kMilli, kTimeSlicing, kHami, kKai };
enum class MigMode { kAsIs, kSmallestFit };

struct HostGpuPolicy {
  FractionMode fractions = FractionMode::kMilli;
  MigMode mig = MigMode::kAsIs;
  // kSmallestFit: the MIG profiles the host's nodes offer ("1g.10gb", ...).
  std::vector<std::string> host_mig_profiles;
  // The host GPUs' memory, to turn a share into MiB (kHami) or MiB into a
  // share (kMilli, kTimeSlicing).
  int64_t gpu_memory_mib = 81920;
};

// Rewrites `pod` (a copy bound for the host) in place. kInvalid for a
// malformed request (as request_of) or a MIG profile the host cannot serve
// under kSmallestFit.
Status translate_for_host(nlohmann::json& pod, const HostGpuPolicy& policy);

}  // namespace vkube::gpu
