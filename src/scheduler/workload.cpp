#include "workload.h"

#include <algorithm>

#include "node_info.h"

namespace vkube::scheduler {

void Workload::add(const nlohmann::json& pod) {
  auto info = pod_info(pod);
  if (!info.is_ok() || info->gpu.empty()) return;
  const auto& g = info->gpu;
  // CPU rounded up to whole cores: nearby requests are one kind.
  Key k{(info->requests.cpu_milli + 999) / 1000 * 1000, g.whole, g.milli, g.memory_mib, g.mig};
  ++counts_[k];
  ++total_;
  // Rebuild when the mix may have moved: every change while small, then
  // every ~3% of what was seen.
  if (++changes_ >= std::max<int64_t>(1, total_ / 32)) rebuild();
}

void Workload::rebuild() {
  changes_ = 0;
  std::vector<std::pair<int64_t, const Key*>> order;
  order.reserve(counts_.size());
  for (const auto& [k, n] : counts_) order.emplace_back(n, &k);
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  if (order.size() > kMaxClasses) order.resize(kMaxClasses);
  int64_t kept = 0;
  for (const auto& [n, k] : order) kept += n;
  classes_.clear();
  for (const auto& [n, k] : order) {
    gpu::TaskClass c;
    c.cpu_milli = std::get<0>(*k);
    c.gpu.whole = std::get<1>(*k);
    c.gpu.milli = std::get<2>(*k);
    c.gpu.memory_mib = std::get<3>(*k);
    c.gpu.mig = std::get<4>(*k);
    c.weight = static_cast<double>(n) / static_cast<double>(kept);
    classes_.push_back(std::move(c));
  }
  ++epoch_;
}

}  // namespace vkube::scheduler
