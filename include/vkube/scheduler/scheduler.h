// The host's GPU-aware scheduler (`vkube host`): places pods that name one of
// its scheduler names and have no node, as kube-scheduler does (filters,
// then scores), with per-device GPU bookkeeping from vkube/gpu: whole GPUs as
// distinct devices, a share on one device, MIG slices. It binds through the
// pods/binding subresource, recording the devices in the pod annotation
// gpu.vkube.io/allocation. A pod that fits nowhere gets PodScheduled=False
// with kube-scheduler's message ("0/12 nodes are available: 8 Insufficient
// nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector.") and
// a FailedScheduling event, and is tried again when capacity frees up.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vkube/apiserver/apiserver.h"
#include "vkube/common/status.h"
#include "vkube/controllers/informers.h"
#include "vkube/gpu/resources.h"

namespace vkube::scheduler {

struct Options {
  // Pods whose spec.schedulerName is one of these are ours.
  std::vector<std::string> scheduler_names = {"default-scheduler", "vkube-scheduler"};
  gpu::Policy policy = gpu::Policy::kBinpack;
  // Concurrent bindings (they share WAL syncs through group commit).
  int bind_workers = 16;
  // How long an unschedulable pod waits at most before it is tried again
  // without a cluster change (kube: 5 minutes).
  std::chrono::milliseconds unschedulable_flush = std::chrono::seconds(60);
  std::function<std::chrono::system_clock::time_point()> now;
};

// The cluster's GPU state as the scheduler sees it (bound and assumed pods).
struct ClusterGpuState {
  int nodes = 0;
  int64_t capacity_milli = 0;  // GPUs not in MIG mode, 1000 each
  int64_t allocated_milli = 0;
  int whole_gpus_free = 0;  // GPUs nothing holds
  // Free GPU capacity that a pod drawn from the recent workload could not
  // use, in expectation (the FGD paper's fragmentation, summed over nodes).
  double fragmented_milli = 0;
  int pending = 0;        // ours, not bound
  int64_t scheduled = 0;  // bindings made since start
};

class Scheduler {
 public:
  // Registers caches and handlers on `informers` (before they start). `api`
  // outlives the scheduler.
  static std::unique_ptr<Scheduler> create(apiserver::ApiServer& api,
                                           controllers::Informers& informers, Options options);
  virtual ~Scheduler() = default;
  // After the informers started: runs the scheduling loop and the binders.
  virtual Status start() = 0;
  virtual void stop() = 0;
  // Blocks until no pod of ours is waiting to be tried and no binding is in
  // flight (unschedulable pods do not count); false on timeout.
  virtual bool wait_idle(std::chrono::milliseconds timeout) = 0;
  virtual ClusterGpuState gpu_state() const = 0;
  // Prometheus text: GPU capacity and allocation per node and namespace,
  // pending pods, scheduling latency.
  virtual std::string metrics() const = 0;
};

}  // namespace vkube::scheduler
