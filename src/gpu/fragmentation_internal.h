// fragmentation() of a node as if `extra` (not yet taken) were held too, so
// a placement can be scored without copying the node's books.
#pragma once

#include <vector>

#include "vkube/gpu/resources.h"

namespace vkube::gpu {

double fragmentation_after(const DeviceState& state, int64_t free_cpu_milli,
                           const std::vector<TaskClass>& workload, const Allocation* extra);

}  // namespace vkube::gpu
