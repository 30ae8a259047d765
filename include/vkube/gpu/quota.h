// A tenant's GPU quota: limits on whole GPUs, on total GPU (in thousandths)
// and per GPU model, what a pod counts against them, kube ResourceQuota's
// refusal message, and the ResourceQuota that mirrors the quota on the host.
// Pure values: no I/O, no threads. The tenant's API server enforces the quota
// at pod create (`vkube serve --gpu-quota`, src/apiserver/gpu_quota.h).
//
// What a pod counts (from request_of; requests of non-terminal pods, as kube's
// ResourceQuota counts them):
//   requests.nvidia.com/gpu             whole GPUs (nvidia.com/gpu) only
//   requests.vkube.io/gpu-milli         all of its GPU in thousandths: 1000 per
//                                       whole GPU, a share's milli (gpu-memory:
//                                       MiB over the model's memory, 80 GiB when
//                                       not pinned to a known model), a MIG
//                                       slice its compute fraction g/7 (g/4 on
//                                       an A30), rounded up
//   requests.nvidia.com/gpu[model=M]    the same total, in GPUs, for pods pinned
//                                       to model M by nodeSelector or required
//                                       node affinity on nvidia.com/gpu.product
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/gpu/resources.h"
#include "vkube/gpu/translate.h"

namespace vkube::gpu {

// The name the quota goes by in refusals ("exceeded quota: vkube-gpu-quota")
// and, by default, of its mirror on the host.
inline constexpr std::string_view kGpuQuotaName = "vkube-gpu-quota";
inline constexpr std::string_view kQuotaGpus = "requests.nvidia.com/gpu";
inline constexpr std::string_view kQuotaMilli = "requests.vkube.io/gpu-milli";
// "requests.nvidia.com/gpu[model=NVIDIA-A100-SXM4-80GB]"
std::string quota_model_resource(std::string_view model);

struct GpuQuota {
  std::optional<int64_t> gpus;   // whole GPUs
  std::optional<int64_t> milli;  // all GPU, in thousandths
  // GFD product label value -> limit in thousandths of a GPU (model:M=4 is 4000).
  std::map<std::string, int64_t> models;

  bool empty() const { return !gpus && !milli && models.empty(); }
  // The flag's syntax, canonical: "gpus=8,milli=6000,model:NVIDIA-H100-80GB-HBM3=2".
  std::string to_string() const;
  bool operator==(const GpuQuota&) const = default;
};

// Parses --gpu-quota: comma-separated `gpus=N`, `milli=N` (whole numbers, 0
// or more) and `model:<product>=N` (GPUs: "2", "1.5" or "1500m"), each key at
// most once; "" is no quota. kInvalid saying which item is wrong and why.
Result<GpuQuota> parse_gpu_quota(std::string_view text);

// What pods count against a quota. Amounts are plain numbers, so usages add
// and subtract (the API server keeps a running sum).
struct GpuUsage {
  int64_t gpus = 0;                       // whole GPUs
  int64_t milli = 0;                      // all GPU, thousandths
  std::map<std::string, int64_t> models;  // pinned model -> thousandths

  bool empty() const { return gpus == 0 && milli == 0 && models.empty(); }
  GpuUsage& operator+=(const GpuUsage& o);
  GpuUsage& operator-=(const GpuUsage& o);  // models that reach 0 are dropped
  bool operator==(const GpuUsage&) const = default;
};

// The GPU models `pod` is restricted to by nodeSelector and required node
// affinity (In on nvidia.com/gpu.product, every term naming models): a pod
// that may run on either of two models counts against both limits. Empty
// when the pod may run on any model.
std::vector<std::string> pinned_models(const nlohmann::json& pod);

// What `pod`, asking for `request` (its request_of), counts against a quota.
GpuUsage usage_of(const nlohmann::json& pod, const GpuRequest& request);

// kube ResourceQuota's refusal for a pod asking for `requested` on top of
// `used`: "exceeded quota: vkube-gpu-quota, requested: R=N, used: R=N,
// limited: R=N", naming only the limits exceeded (resources in sorted order,
// amounts as kube quantities); nullopt when the pod fits. Only resources the
// pod asks for are checked, as kube does, so a pod that asks for none always
// fits.
std::optional<std::string> check_quota(const GpuQuota& quota, const GpuUsage& used,
                                       const GpuUsage& requested);

// The quota's resources with their amounts in `usage`, as kube prints a
// resource list: "requests.nvidia.com/gpu=3,requests.vkube.io/gpu-milli=3500".
std::string format_usage(const GpuQuota& quota, const GpuUsage& usage);

// The v1 ResourceQuota `name` in host namespace `ns` that backs the quota up
// on the host, in the resources the tenant's pods have there under `policy`
// (see translate.h). It never refuses what the tenant quota admits, so where
// the host cannot count the same thing it is looser:
//   requests.nvidia.com/gpu       all modes but kHami: min(gpus, milli / 1000)
//   requests.vkube.io/gpu-milli   kMilli: milli (shares only live here; whole
//                                 GPUs and shares together are not one resource
//                                 on the host)
//   requests.nvidia.com/gpu.shared kTimeSlicing: milli (one replica per share,
//                                 a share at least 1 milli; the share's size is
//                                 not visible on the host)
//   requests.nvidia.com/gpu       kHami: milli (shares become nvidia.com/gpu: 1
//                                 each, so only a bound on the number of shares
//                                 holds); left out without a milli limit
//   kKai                          shares are annotations the host's quota cannot
//                                 see: only whole GPUs; use KAI queue quotas
//   requests.nvidia.com/mig-<p>   for each of policy.host_mig_profiles: milli
//                                 / the profile's milli (kAsIs), milli / a 1g
//                                 slice's (kSmallestFit: a smaller request may
//                                 take this profile)
// Model limits are not mirrored: a ResourceQuota cannot select pods by node
// affinity. spec.hard is empty when nothing maps (no need to create it).
nlohmann::json host_resource_quota(const GpuQuota& quota, const HostGpuPolicy& policy,
                                   std::string_view name, std::string_view ns);

}  // namespace vkube::gpu
