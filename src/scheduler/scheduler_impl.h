// The host scheduler's state and steps (Scheduler's implementation), shared
// by scheduler.cpp (the cluster picture, the scheduling loop, bindings and
// unschedulable pods) and scheduler_share.cpp (tenants' GPU shares:
// borrowing, reclaim, gangs and why a pod waits). Internal to src/scheduler.
#pragma once

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "filters.h"
#include "metrics.h"
#include "node_info.h"
#include "preemption.h"
#include "queue.h"
#include "tenants.h"
#include "vkube/common/log.h"
#include "vkube/controllers/event_recorder.h"
#include "vkube/controllers/local_client.h"
#include "vkube/controllers/write_pool.h"
#include "vkube/gpu/share.h"
#include "vkube/scheduler/scheduler.h"
#include "workload.h"

namespace vkube::scheduler {

// Helpers over pod and node JSON, shared by both halves.
using controllers::EventType;
using controllers::ObjectEvent;
using controllers::ObjectPtr;

inline std::string str(const json& j, std::initializer_list<const char*> path) {
  const json* v = json_at(j, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// "1 GPU", "0.5 GPU", "8 GPUs", with `what` before the noun ("2 idle GPUs").
inline std::string gpus_text(int64_t milli, const std::string& what = "") {
  return gpu::format_gpus(milli) + " " + (what.empty() ? "" : what + " ") +
         (milli > 1000 || milli == 0 ? "GPUs" : "GPU");
}

inline bool terminal(const json& pod) {
  std::string phase = str(pod, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed";
}

inline std::string format_time(std::chrono::system_clock::time_point t) {
  std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// What the scheduler's decisions depend on changed (not only the status).
inline bool spec_changed(const json& a, const json& b) {
  const json* aa = json_at(a, {"metadata", "annotations"});
  const json* ba = json_at(b, {"metadata", "annotations"});
  if ((aa == nullptr) != (ba == nullptr) || (aa != nullptr && *aa != *ba)) return true;
  const json* as = json_at(a, {"spec"});
  const json* bs = json_at(b, {"spec"});
  return (as == nullptr) != (bs == nullptr) || (as != nullptr && *as != *bs);
}

class SchedulerImpl final : public Scheduler {
 public:
  SchedulerImpl(apiserver::ApiServer& api, controllers::Informers& informers, Options o)
      : options_(std::move(o)),
        client_(api, "system:kube-scheduler"),
        events_(client_, options_.now),
        pool_(static_cast<size_t>(std::max(1, options_.bind_workers))),
        queue_(options_.unschedulable_flush) {
    if (!options_.now) options_.now = [] { return std::chrono::system_clock::now(); };
    pods_ = &informers.cache({"core", "pods"});
    informers.cache({"core", "nodes"});
    informers.on_event({"core", "pods"}, [this](const ObjectEvent& e) { on_pod(e); });
    informers.on_event({"core", "nodes"}, [this](const ObjectEvent& e) { on_node(e); });
    // Tenants' GPU shares: the namespace's annotation, else its control
    // plane's --gpu-share (the chart's value).
    informers.cache({"core", "namespaces"});
    informers.on_event({"core", "namespaces"}, [this](const ObjectEvent& e) { on_namespace(e); });
    informers.cache({"apps", "statefulsets"});
    informers.on_event({"apps", "statefulsets"},
                       [this](const ObjectEvent& e) { on_statefulset(e); });
  }
  ~SchedulerImpl() override { stop(); }

  Status start() override {
    loop_ = std::thread([this] { run(); });
    return Status::ok();
  }

  void stop() override;

  bool wait_idle(std::chrono::milliseconds timeout) override;

  ClusterGpuState gpu_state() const override;

  std::string metrics() const override;

 private:
  bool ours(const json& pod) const;

  // --- the cluster picture (informer dispatch thread) ---

  void on_pod(const ObjectEvent& e);

  // Something freed capacity or changed a share: every waiting pod is tried again.
  void wake_all() {
    wake_epoch_++;
    queue_.move_all_to_active();
  }

  // An unbound pod of ours: what it asks of its tenant, its gang, and the
  // node it waits on (status.nominatedNodeName: a reclaim begun before a
  // restart goes on without preempting again).
  void note_waiting_locked(const json& pod, const std::string& uid, const std::string& key);

  // It is bound, deleted or terminating: no longer pending, nor a waiting gang member.
  void forget_waiting_locked(const json& pod, const std::string& uid, const std::string& key);

  // Every pod a node holds passes here, so the tenants' books and the
  // gangs' counts move with the nodes'.
  Status hold_locked(NodeInfo& n, PodInfo p);

  bool release_locked(NodeInfo& n, const std::string& uid);

  // A pod bound to `node` holds its resources (unless it already does: our
  // own assumption, confirmed; then only its terminating flag may change).
  void account_bound_locked(const json& pod, const std::string& uid, const std::string& node);

  // Adds a bound pod to its node. Pods bound without our allocation (created
  // with spec.nodeName) get devices picked here, so the books stay whole.
  void place_locked(NodeInfo& n, PodInfo p);

  bool forget_pod_locked(const std::string& uid, const std::string& node);

  void on_namespace(const ObjectEvent& e);

  void on_statefulset(const ObjectEvent& e);

  void on_node(const ObjectEvent& e);

  void recount_capacity_locked();

  double fragmentation_of(const NodeInfo& n, const std::vector<gpu::TaskClass>& classes) const;

  // --- scheduling ---

  void run();

  double pack_score(const NodeInfo& n, const PodInfo& p, const gpu::Allocation& a) const;

  // The best node for `info` and its devices, or "" with why each node
  // failed in `reasons`. Nodes whose GPUs are promised to pods waiting on a
  // reclaim there keep them for those pods.
  std::string pick_node_locked(const PodInfo& info, const Constraints& c, gpu::Allocation* out,
                               std::map<std::string, int>* reasons);

  // Holds `info` on `node` as assumed (its binding about to be written).
  bool assume_locked(PodInfo& info, const std::string& node);

  // Thousandths `info` borrows beyond its tenant's deserved share, once held.
  int64_t borrowed_locked(const PodInfo& info, const std::string& node);

  // What the tenant's share refuses outright, whatever the pool holds: its
  // limit, or borrowing by a tenant whose pods may not be preempted.
  std::string refused_by_share_locked(const PodInfo& info, int64_t milli,
                                      const std::string& what) const;

  // "the pool has 3 idle GPUs", or of the products a pod is pinned to
  // ("the pool has 0 idle NVIDIA-H100-80GB-HBM3 GPUs").
  std::string idle_text_locked(const std::vector<std::string>& models = {}) const;
  // A GPU pod that fits no node while the pool holds enough idle GPUs for
  // it, scattered: the node with least to free is held for it (nominated),
  // so that smaller pods stop taking what frees up there. Returns the
  // message's tail, empty when no node is held.
  std::string reserve_locked(const PodInfo& info, const Constraints& c, std::string* nominated);

  // The pod fits no node as things are, and its tenant has a share: wait for
  // GPUs already being freed for it, or reclaim them (filling *plan), or
  // wait for idle ones. Returns the pending message.
  std::string reclaim_locked(PodInfo& info, const Constraints& c, std::optional<ReclaimPlan>* plan,
                             std::string* nominated);

  void schedule_one(const std::string& key);

  // A gang that does not fit, of a tenant within its fair share: every
  // member gets a node where it fits now or once victims go (nominated there,
  // the victims in *plans), or none does and nothing is preempted. The gang
  // is bound together once all of it fits. Returns the message's tail.
  std::string reclaim_gang_locked(const std::vector<std::pair<ObjectPtr, PodInfo>>& members,
                                  int64_t total,
                                  std::vector<std::pair<PodInfo, ReclaimPlan>>* plans);

  // A gang (gpu::kPodGroupAnnotation): `size` of its pods are placed at once
  // or none is, so two half-placed groups never hold the pool between them.
  void schedule_gang(ObjectPtr obj, PodInfo info);

  // Reclaim: each victim is told why (DisruptionTarget, an event) and
  // deleted with its grace period; the waiting pod keeps its nomination.
  // Messages never name the tenant the GPUs go to.
  void preempt(const PodInfo& info, const ReclaimPlan& plan);

  void bind(ObjectPtr pod, PodInfo info, const std::string& node, int64_t borrowed);

  std::string scheduler_name(const json& pod) const;

  // The pod fits nowhere: its PodScheduled condition and an event say why
  // (once per distinct message), and it waits for the cluster to change.
  void unschedulable(ObjectPtr pod, int32_t priority, const std::string& message,
                     const std::string& nominated = "");

  Options options_;
  controllers::LocalClient client_;
  controllers::EventRecorder events_;
  controllers::WritePool pool_;
  mutable SchedulingQueue queue_;
  const controllers::Lister* pods_ = nullptr;

  mutable std::mutex mu_;  // the cluster picture below
  std::map<std::string, std::unique_ptr<NodeInfo>> nodes_;
  // Pods bound to nodes we have not seen (yet), by node.
  std::unordered_map<std::string, std::unordered_map<std::string, PodInfo>> orphans_;
  std::unordered_set<std::string> assumed_;  // uids whose binding is in flight
  Workload workload_;
  TenantLedger ledger_;
  int64_t capacity_milli_ = 0;  // GPUs of all nodes not in MIG mode
  // Gangs ("ns/group"): keys of members waiting, and members held by nodes.
  std::unordered_map<std::string, std::set<std::string>> gang_waiting_;
  std::unordered_map<std::string, int> gang_bound_;
  // A gang that did not fit, at which wake_all() epoch and when: its other
  // members, popped right after, wait without trying again (n members of a
  // failed gang would otherwise cost n placements of n pods each).
  std::unordered_map<std::string, std::pair<uint64_t, std::chrono::steady_clock::time_point>>
      gang_failed_;
  std::atomic<uint64_t> wake_epoch_{0};

  LatencyHistogram latency_;
  std::atomic<int64_t> scheduled_{0}, unschedulable_attempts_{0}, errors_{0}, preemptions_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<bool> busy_{false};
  std::atomic<bool> stopped_{false};
  std::thread loop_;
};

}  // namespace vkube::scheduler
