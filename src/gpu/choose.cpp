// Which devices of a node a pod gets, under each placement policy.
#include <algorithm>
#include <limits>

#include "fragmentation_internal.h"
#include "vkube/gpu/resources.h"

namespace vkube::gpu {

Result<Policy> parse_policy(std::string_view name) {
  if (name == "binpack") return Policy::kBinpack;
  if (name == "spread") return Policy::kSpread;
  if (name == "fragmentation" || name == "fgd") return Policy::kFragmentation;
  return Status::invalid("unknown placement policy \"" + std::string(name) +
                         "\": want binpack, spread or fragmentation");
}

std::string_view policy_name(Policy p) {
  switch (p) {
    case Policy::kBinpack:
      return "binpack";
    case Policy::kSpread:
      return "spread";
    case Policy::kFragmentation:
      return "fragmentation";
  }
  return "binpack";
}

int share_milli(const DeviceState& state, size_t gpu, const GpuRequest& request) {
  const Gpu& g = state.gpus().gpus[gpu];
  if (!g.mig.empty() || !state.gpus().shareable) return 0;
  if (request.milli > 0) return request.milli;
  if (request.memory_mib <= 0 || g.memory_mib <= 0 || request.memory_mib > g.memory_mib) return 0;
  return static_cast<int>((request.memory_mib * 1000 + g.memory_mib - 1) / g.memory_mib);
}

namespace {

void set_reason(std::string* reason, std::string text) {
  if (reason != nullptr) *reason = std::move(text);
}

// MIG slices of each asked profile; GPUs with more slices held come first
// under binpack (fewer under spread), so partitioned GPUs fill one by one.
bool take_slices(const DeviceState& st, const GpuRequest& req, Policy policy, Allocation& a,
                 std::string* reason) {
  const auto& gpus = st.gpus().gpus;
  std::vector<size_t> order(gpus.size());
  std::vector<int> held(gpus.size(), 0);
  for (size_t i = 0; i < gpus.size(); ++i) {
    order[i] = i;
    for (size_t s = 0; s < gpus[i].mig.size(); ++s) held[i] += st.slice_free(i, s) ? 0 : 1;
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return policy == Policy::kSpread ? held[x] < held[y] : held[x] > held[y];
  });
  for (const auto& [profile, n] : req.mig) {
    int want = n;
    for (size_t i : order) {
      for (size_t s = 0; s < gpus[i].mig.size() && want > 0; ++s) {
        if (gpus[i].mig[s] != profile || !st.slice_free(i, s)) continue;
        a.slices.push_back({gpus[i].index, static_cast<int>(s), profile});
        --want;
      }
    }
    if (want > 0) {
      set_reason(reason, "Insufficient " + std::string(kMigResourcePrefix) + profile);
      return false;
    }
  }
  return true;
}

bool take_whole(const DeviceState& st, const GpuRequest& req, Allocation& a, std::string* reason) {
  const auto& gpus = st.gpus().gpus;
  int want = req.whole;
  for (size_t i = 0; i < gpus.size() && want > 0; ++i) {
    if (!gpus[i].mig.empty() || st.used_milli(i) != 0) continue;
    a.shares.push_back({gpus[i].index, 1000});
    --want;
  }
  if (want > 0) {
    set_reason(reason, "Insufficient " + std::string(kGpuResource));
    return false;
  }
  return true;
}

}  // namespace

std::optional<Allocation> choose(const DeviceState& st, const GpuRequest& req, Policy policy,
                                 std::string* reason, int64_t free_cpu_after,
                                 const std::vector<TaskClass>* workload,
                                 double* fragmentation_after) {
  Allocation a;
  if (!req.mig.empty() && !take_slices(st, req, policy, a, reason)) return std::nullopt;
  if (req.whole > 0 && !take_whole(st, req, a, reason)) return std::nullopt;
  const bool fgd = policy == Policy::kFragmentation && workload != nullptr;
  if (!req.shared()) {
    if (fgd && fragmentation_after != nullptr)
      *fragmentation_after = gpu::fragmentation_after(st, free_cpu_after, *workload, &a);
    return a;
  }
  if (!st.gpus().shareable) {
    set_reason(reason, "Insufficient " + std::string(kGpuMilliResource));
    return std::nullopt;
  }
  // The share goes on one GPU: the fullest that fits (binpack), the emptiest
  // (spread), or the one leaving the node least fragmented. GPUs with the
  // same free share are interchangeable, so each free value is tried once.
  const auto& gpus = st.gpus().gpus;
  int best = -1, best_need = 0;
  double best_frag = std::numeric_limits<double>::infinity();
  std::vector<int> tried_free;
  for (size_t i = 0; i < gpus.size(); ++i) {
    int need = share_milli(st, i, req);
    int free = st.free_milli(i);
    if (need <= 0 || need > free) continue;
    if (fgd) {
      if (std::find(tried_free.begin(), tried_free.end(), free) != tried_free.end()) continue;
      tried_free.push_back(free);
      Allocation trial = a;
      trial.shares.push_back({gpus[i].index, need});
      double f = gpu::fragmentation_after(st, free_cpu_after, *workload, &trial);
      // Ties go to the fuller GPU, as binpack would.
      if (f < best_frag - 1e-9 ||
          (f < best_frag + 1e-9 && best >= 0 && free < st.free_milli(best))) {
        best_frag = f;
        best = static_cast<int>(i);
        best_need = need;
      }
      continue;
    }
    bool better = best < 0 || (policy == Policy::kSpread ? free > st.free_milli(best)
                                                         : free < st.free_milli(best));
    if (better) {
      best = static_cast<int>(i);
      best_need = need;
    }
  }
  if (best < 0) {
    set_reason(reason, "Insufficient " + std::string(kGpuMilliResource));
    return std::nullopt;
  }
  a.shares.push_back({gpus[best].index, best_need});
  if (fgd && fragmentation_after != nullptr) *fragmentation_after = best_frag;
  return a;
}

}  // namespace vkube::gpu
