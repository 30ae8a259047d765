// The fragmentation measure of "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent" (Weng et al.,
// USENIX ATC '23): the GPU capacity of a node that a task drawn from the
// cluster's workload could not use, in expectation over the workload.
#include <vector>

#include "vkube/gpu/resources.h"

namespace vkube::gpu {

double fragmentation(const DeviceState& st, int64_t free_cpu_milli,
                     const std::vector<TaskClass>& workload) {
  const auto& gpus = st.gpus().gpus;
  int64_t total_free = 0;
  int fully_free = 0;
  int64_t partial_free = 0;  // free share of GPUs that pods partly hold
  for (size_t i = 0; i < gpus.size(); ++i) {
    int f = st.free_milli(i);
    if (!gpus[i].mig.empty() || f <= 0) continue;
    total_free += f;
    if (f == 1000) ++fully_free;
    else partial_free += f;
  }
  if (total_free == 0) return 0;
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
      out += c.weight *
             static_cast<double>(fully_free < c.gpu.whole ? total_free : partial_free);
      continue;
    }
    int64_t stranded = 0;
    bool fits_somewhere = false;
    for (size_t i = 0; i < gpus.size(); ++i) {
      int f = st.free_milli(i);
      if (!gpus[i].mig.empty() || f <= 0) continue;
      int need = share_milli(st, i, c.gpu);
      if (need > 0 && need <= f) fits_somewhere = true;
      else stranded += f;
    }
    out += c.weight * static_cast<double>(fits_somewhere ? stranded : total_free);
  }
  return out;
}

}  // namespace vkube::gpu
