// The fragmentation measure of "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent" (Weng et al.,
// USENIX ATC '23): the GPU capacity of a node that a task drawn from the
// cluster's workload could not use, in expectation over the workload.
#include <array>
#include <vector>

#include "fragmentation_internal.h"
#include "vkube/gpu/resources.h"

namespace vkube::gpu {

namespace {

// The thousandths of a GPU of `memory_mib` a shared request needs there.
int need_on(const Gpu& g, const GpuRequest& r) {
  if (r.milli > 0) return r.milli;
  if (r.memory_mib <= 0 || g.memory_mib <= 0 || r.memory_mib > g.memory_mib) return 0;
  return static_cast<int>((r.memory_mib * 1000 + g.memory_mib - 1) / g.memory_mib);
}

}  // namespace

double fragmentation_after(const DeviceState& st, int64_t free_cpu_milli,
                           const std::vector<TaskClass>& workload, const Allocation* extra) {
  const auto& gpus = st.gpus().gpus;
  // Free thousandths per GPU after `extra` (MIG GPUs count 0). Nodes have a
  // handful of GPUs: a fixed array avoids a heap allocation per evaluation.
  constexpr size_t kInline = 64;
  std::array<int, kInline> inline_free{};
  std::vector<int> heap_free;
  int* free = inline_free.data();
  if (gpus.size() > kInline) {
    heap_free.resize(gpus.size());
    free = heap_free.data();
  }
  int64_t total_free = 0, partial_free = 0;
  int fully_free = 0;
  for (size_t i = 0; i < gpus.size(); ++i) {
    int f = st.free_milli(i);
    if (extra != nullptr)
      for (const auto& s : extra->shares)
        if (s.gpu == gpus[i].index) f -= s.milli;
    free[i] = gpus[i].mig.empty() && f > 0 ? f : 0;
    total_free += free[i];
    if (free[i] == 1000)
      ++fully_free;
    else
      partial_free += free[i];
  }
  if (total_free == 0) return 0;
  const bool shareable = st.gpus().shareable;
  double out = 0;
  for (const TaskClass& c : workload) {
    // Tasks without GPUs (and MIG-only tasks, whose capacity is not counted
    // in thousandths) add the same amount wherever a pod goes: skipped.
    if (c.weight <= 0 || (c.gpu.whole == 0 && !c.gpu.shared())) continue;
    if (c.cpu_milli > free_cpu_milli) {
      out += c.weight * static_cast<double>(total_free);  // the node cannot run it at all
      continue;
    }
    if (c.gpu.whole > 0) {
      // Whole GPUs: partly held GPUs are useless to it; too few free ones
      // make the whole node useless.
      out += c.weight * static_cast<double>(fully_free < c.gpu.whole ? total_free : partial_free);
      continue;
    }
    int64_t stranded = 0;
    bool fits_somewhere = false;
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (free[i] <= 0) continue;
      int need = shareable ? need_on(gpus[i], c.gpu) : 0;
      if (need > 0 && need <= free[i])
        fits_somewhere = true;
      else
        stranded += free[i];
    }
    out += c.weight * static_cast<double>(fits_somewhere ? stranded : total_free);
  }
  return out;
}

double fragmentation(const DeviceState& state, int64_t free_cpu_milli,
                     const std::vector<TaskClass>& workload) {
  return fragmentation_after(state, free_cpu_milli, workload, nullptr);
}

}  // namespace vkube::gpu
