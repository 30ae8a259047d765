#include "preemption.h"

#include <algorithm>
#include <tuple>

namespace vkube::scheduler {

NodeInfo future_of(const NodeInfo& n, const std::vector<const TenantLedger::Nomination*>& waiting,
                   gpu::Policy policy, int* unplaced) {
  NodeInfo f = n;
  std::vector<std::string> leaving;
  for (const auto& [uid, p] : n.pods())
    if (p.terminating) leaving.push_back(uid);
  for (const std::string& uid : leaving) f.remove_pod(uid);
  for (const TenantLedger::Nomination* w : waiting) {
    const Resources& r = w->pod.requests;
    auto a = gpu::choose(f.devices(), w->pod.gpu, policy);
    if (!a || f.allocatable().cpu_milli - f.requested().cpu_milli < r.cpu_milli ||
        f.allocatable().memory - f.requested().memory < r.memory) {
      if (unplaced != nullptr) ++*unplaced;
      continue;
    }
    PodInfo held = w->pod;
    held.allocation = *a;
    (void)f.add_pod(std::move(held));
  }
  return f;
}

namespace {

// Reasons other than room: the node is not the pod's whatever leaves it.
bool only_room(const std::vector<std::string>& why) {
  return std::all_of(why.begin(), why.end(), [](const std::string& w) {
    return w.starts_with("Insufficient ") || w == "Too many pods";
  });
}

}  // namespace

bool fits_empty(const NodeInfo& n, const PodInfo& pod, const Constraints& c, gpu::Policy policy) {
  std::vector<std::string> why;
  if (!filter_node(n, pod, c, &why) && !only_room(why)) return false;
  if (n.allocatable().cpu_milli < pod.requests.cpu_milli ||
      n.allocatable().memory < pod.requests.memory || n.devices().capacity_milli() < pod.gpu_milli)
    return false;
  NodeInfo empty = n;
  std::vector<std::string> uids;
  for (const auto& [uid, p] : n.pods()) uids.push_back(uid);
  for (const std::string& uid : uids) empty.remove_pod(uid);
  return gpu::choose(empty.devices(), pod.gpu, policy).has_value();
}

namespace {

bool fits(const NodeInfo& n, const PodInfo& pod, const Constraints& c, gpu::Policy policy) {
  std::vector<std::string> why;
  return filter_node(n, pod, c, &why) && gpu::choose(n.devices(), pod.gpu, policy).has_value();
}

}  // namespace

std::optional<ReclaimPlan> plan_reclaim(
    const std::map<std::string, std::unique_ptr<NodeInfo>>& nodes, const PodInfo& pod,
    const Constraints& c, gpu::Policy policy, const std::map<std::string, int64_t>& reclaimable,
    const TenantLedger& ledger) {
  std::optional<ReclaimPlan> best;
  // (most important victim, victims not marked borrowing, victims)
  std::tuple<int32_t, size_t, size_t> best_cost{};
  for (const auto& [name, n] : nodes) {
    std::vector<const PodInfo*> candidates;
    for (const auto& [uid, p] : n->pods()) {
      if (p.terminating || p.gpu_milli == 0) continue;
      if (p.ns == pod.ns) {
        if (p.priority < pod.priority) candidates.push_back(&p);
        continue;
      }
      if (reclaimable.count(p.ns) == 0) continue;
      // What a model guarantee of its own tenant covers stays.
      const TenantLedger::Tenant* t = ledger.find(p.ns);
      if (t != nullptr && !p.model.empty() && TenantLedger::guaranteed(*t, p.model)) continue;
      candidates.push_back(&p);
    }
    if (candidates.empty()) continue;
    // A node the pod cannot use whatever leaves it (taints, selectors,
    // unschedulable) is not worth a copy: only a lack of room counts.
    std::vector<std::string> why;
    if (!filter_node(*n, pod, c, &why) && !only_room(why)) continue;
    // Lowest priority first; among equals those marked borrowing (they were
    // told they may be reclaimed), then the newest (kube's victim order).
    std::sort(candidates.begin(), candidates.end(), [](const PodInfo* a, const PodInfo* b) {
      if (a->priority != b->priority) return a->priority < b->priority;
      if (a->borrowing != b->borrowing) return a->borrowing;
      if (a->created != b->created) return a->created > b->created;
      return a->uid < b->uid;
    });
    NodeInfo future = future_of(*n, ledger.nominated_on(name, pod.uid), policy);
    std::map<std::string, int64_t> budget = reclaimable;
    ReclaimPlan plan{name, {}};
    bool ok = false;
    for (const PodInfo* v : candidates) {
      if (v->ns != pod.ns) {
        int64_t& left = budget[v->ns];
        if (left < v->gpu_milli) continue;  // it would go below its fair share
        left -= v->gpu_milli;
      }
      if (!future.remove_pod(v->uid)) continue;
      plan.victims.push_back(*v);
      if (fits(future, pod, c, policy)) {
        ok = true;
        break;
      }
    }
    if (!ok) continue;
    // Reprieve, most important first, every victim the pod fits without
    // (kube's second pass): greedy removal may have taken more than needed.
    std::vector<PodInfo> kept;
    for (auto it = plan.victims.rbegin(); it != plan.victims.rend(); ++it) {
      if (future.add_pod(*it).is_ok() && fits(future, pod, c, policy)) continue;
      future.remove_pod(it->uid);
      kept.push_back(*it);
    }
    plan.victims.assign(kept.rbegin(), kept.rend());
    int32_t top = 0;
    size_t unmarked = 0;
    for (const PodInfo& v : plan.victims) {
      top = std::max(top, v.priority);
      unmarked += v.borrowing ? 0 : 1;
    }
    std::tuple<int32_t, size_t, size_t> cost{top, unmarked, plan.victims.size()};
    if (!best || cost < best_cost) {
      best = std::move(plan);
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace vkube::scheduler
