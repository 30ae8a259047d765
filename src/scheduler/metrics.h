// The scheduler's Prometheus metrics: GPU capacity and allocation per node
// and per namespace (on the host a namespace is a tenant), pending pods, and
// a scheduling latency histogram.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "vkube/gpu/share.h"

namespace vkube::scheduler {

class LatencyHistogram {
 public:
  void observe(double seconds);
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  static constexpr std::array<double, 14> kBuckets = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
                                                      0.2,   0.5,   1,     2,    5,    10,   30};
  mutable std::mutex mu_;
  std::array<uint64_t, kBuckets.size()> counts_{};
  uint64_t count_ = 0;
  double sum_ = 0;
};

struct NodeGpuRow {
  std::string node, model;
  int gpus = 0;  // not in MIG mode
  int64_t capacity_milli = 0, allocated_milli = 0;
  std::map<std::string, std::pair<int, int>> mig;  // profile -> (slices, held)
};

struct MetricsSnapshot {
  std::vector<NodeGpuRow> nodes;
  // namespace -> (whole GPUs held, thousandths held including shares)
  std::map<std::string, std::pair<int64_t, int64_t>> namespaces;
  size_t active = 0, unschedulable = 0, backoff = 0;
  int64_t scheduled = 0, unschedulable_attempts = 0, errors = 0;
  double fragmented_milli = 0;
};

std::string render_metrics(const MetricsSnapshot& s, const LatencyHistogram& latency);

// Per tenant (settled books): vkube_tenant_gpu_{deserved,limit,allocated,
// borrowed,lent,pending,reclaiming,fair_share}_milli{tenant,namespace}, and
// vkube_scheduler_preemptions_total.
void render_tenant_metrics(std::string& out, const std::vector<gpu::TenantBooks>& tenants,
                           int64_t preemptions);

}  // namespace vkube::scheduler
