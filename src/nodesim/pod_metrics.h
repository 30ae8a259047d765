// metrics.k8s.io on `vkube host` (the API server's MetricsProvider): the
// usage of the pods the node agent runs as local processes, measured from
// /proc as the kubelet's cAdvisor measures a container's cgroup, and each
// node's usage as the sum of its pods' (plus a base on a simulated node).
// Simulated pods run nothing to measure: a running one gets a simulated usage
// (sim_usage.h), annotated vkube.io/simulated so it never passes for a measurement.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "vkube/apiserver/apiserver.h"
#include "vkube/controllers/informers.h"

namespace vkube::nodesim {

struct ProcessUsage {
  uint64_t cpu_ticks = 0;     // user + system, in clock ticks, of the whole group
  uint64_t rss_bytes = 0;     // resident memory of the whole group
  double started_s = 0;       // the leader's start, seconds since boot
};

// The usage of the process group led by `pgid` (the container and what it
// started), from /proc; nullopt when no process of it is left.
std::optional<ProcessUsage> process_group_usage(pid_t pgid);

// `pid_of` gives the running process of the pod "namespace/name" (nullopt
// when it runs nothing here).
std::shared_ptr<apiserver::MetricsProvider> make_metrics_provider(
    const controllers::Lister& pods, const controllers::Lister& nodes,
    std::function<std::optional<pid_t>(const std::string& key)> pid_of);

}  // namespace vkube::nodesim
