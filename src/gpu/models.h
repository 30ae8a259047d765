// The MIG geometry behind mig_profiles(): how many compute and memory slices
// each profile takes, so a layout can be checked against the GPU it splits.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"
#include "vkube/gpu/node_spec.h"

namespace vkube::gpu {

struct MigProfile {
  std::string_view name;  // "3g.40gb"
  int max_per_gpu = 0;    // as mig_profiles() reports
  int compute = 0;        // compute slices (the "3g")
  int memory = 0;         // memory slices (one eighth of an A100's memory, ...)
};

struct MigGeometry {
  int compute = 0;  // compute slices of the whole GPU (7; 4 on an A30)
  int memory = 0;   // memory slices of the whole GPU (8; 4 on an A30)
  std::vector<MigProfile> profiles;
};

// The geometry of a MIG-capable model; nullptr for the others.
const MigGeometry* mig_geometry(const GpuModel& model);

// OK when `layout` (one GPU's profiles) fits a GPU of `model`: every profile
// is one the model offers, none is used more often than the GPU allows, and
// the profiles' compute and memory slices add up to at most the GPU's.
// kInvalid saying what does not fit.
Status check_mig_layout(const GpuModel& model, const std::vector<std::string>& layout);

}  // namespace vkube::gpu
