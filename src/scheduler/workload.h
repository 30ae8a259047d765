// The workload the fragmentation policy measures against: the kinds of pods
// (CPU, GPU request) this scheduler has been asked to place, and how often.
// The FGD paper takes the target workload as known; a live scheduler learns
// it from what arrives. Not thread-safe (the scheduler's lock guards it).
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "vkube/gpu/resources.h"

namespace vkube::scheduler {

class Workload {
 public:
  // Counts a pod's kind (pods without GPU requests are not counted: they
  // add the same fragmentation wherever they go).
  void add(const nlohmann::json& pod);
  // The most common kinds (at most kMaxClasses), weights summing to one.
  const std::vector<gpu::TaskClass>& classes() const { return classes_; }
  // Changes whenever classes() does (memoised fragmentation is per epoch).
  uint64_t epoch() const { return epoch_; }

  static constexpr size_t kMaxClasses = 24;

 private:
  void rebuild();
  // (CPU in whole cores, whole GPUs, milli, memory MiB, MIG profiles)
  using Key = std::tuple<int64_t, int, int, int64_t, std::map<std::string, int>>;
  std::map<Key, int64_t> counts_;
  int64_t total_ = 0;
  int64_t changes_ = 0;
  std::vector<gpu::TaskClass> classes_;
  uint64_t epoch_ = 1;
};

}  // namespace vkube::scheduler
