// The usage `vkube host` reports for a pod it simulates. A simulated pod runs
// nothing, so there is nothing to measure; like kwok's metrics-usage
// simulation it is given a usage that is deterministic (the same pod always
// shows the same numbers, so tests and screenshots are stable) and plausible
// (it follows what the pod asked for). The metrics carry the
// vkube.io/simulated annotation so nobody takes them for a measurement.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkube::nodesim {

// Pod annotations that set a simulated pod's total usage ("250m", "64Mi").
inline constexpr const char* kCpuUsageAnnotation = "sim.vkube.io/cpu-usage";
inline constexpr const char* kMemoryUsageAnnotation = "sim.vkube.io/memory-usage";

// What a simulated node uses besides its pods (kubelet, runtime, system
// daemons), so an empty node does not read as idle hardware.
inline constexpr int64_t kNodeBaseMillicores = 50;
inline constexpr int64_t kNodeBaseBytes = 256LL << 20;

struct SimUsage {
  int64_t millicores = 0;
  int64_t bytes = 0;
};

// The simulated usage of each of the pod's containers, in spec order:
// half of the container's request (else of its limit), at least 1m CPU and
// 4Mi memory, and 5m / 16Mi when it sets neither. The annotations, when
// they parse, replace the pod's total: it is reported on the first container
// and the others show 0. nullopt unless the pod is Running (a pending or
// finished pod uses nothing, and metrics-server lists only running ones).
std::optional<std::vector<SimUsage>> simulated_usage(const nlohmann::json& pod);

}  // namespace vkube::nodesim
