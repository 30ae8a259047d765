// Tenants sharing the pool (issue 38; docs/gpu.md "Sharing the pool between
// tenants"): what a tenant's share refuses outright (its limit, borrowing by
// a non-preemptible tenant), reclaim for a pod or a whole gang within its
// tenant's fair share, gangs placed all or nothing, the victims' notice, and
// the why-pending messages, which never name another tenant.
#include "scheduler_impl.h"

namespace vkube::scheduler {

void SchedulerImpl::on_namespace(const ObjectEvent& e) {
  bool changed;
  {
    std::lock_guard lock(mu_);
    if (e.type == EventType::kDeleted) {
      ledger_.remove_namespace(str(*e.object, {"metadata", "name"}));
      changed = true;
    } else {
      changed = ledger_.set_namespace(*e.object);
    }
  }
  if (changed) wake_all();
}

void SchedulerImpl::on_statefulset(const ObjectEvent& e) {
  bool changed;
  {
    std::lock_guard lock(mu_);
    changed = ledger_.set_statefulset(*e.object, e.type == EventType::kDeleted);
  }
  if (changed) wake_all();
}

// Thousandths `info` borrows beyond its tenant's deserved share, once held.
int64_t SchedulerImpl::borrowed_locked(const PodInfo& info, const std::string& node) {
  if (!ledger_.enabled() || info.gpu_milli == 0) return 0;
  const TenantLedger::Tenant* t = ledger_.find(info.ns);
  if (t == nullptr) return 0;
  const int64_t borrowed =
      std::clamp<int64_t>(t->allocated - t->share.deserved_milli, 0, info.gpu_milli);
  // The node's copy is marked as the binding will mark the pod.
  if (PodInfo* held = nodes_[node]->pod(info.uid); held != nullptr && borrowed > 0)
    held->borrowing = true;
  return borrowed;
}

// What the tenant's share refuses outright, whatever the pool holds: its
// limit, or borrowing by a tenant whose pods may not be preempted.
std::string SchedulerImpl::refused_by_share_locked(const PodInfo& info, int64_t milli,
                                                   const std::string& what) const {
  const TenantLedger::Tenant* t = ledger_.find(info.ns);
  if (t == nullptr) return {};
  const gpu::GpuShare& sh = t->share;
  if (sh.limit_milli && t->allocated + milli > *sh.limit_milli)
    return "waiting for " + what + ": tenant " + t->name + " is at its limit: uses " +
           gpu::format_gpus(t->allocated) + " of its limit of " + gpus_text(*sh.limit_milli);
  if (!sh.preemptible && t->allocated + milli > sh.deserved_milli)
    return "waiting for " + what + ": tenant " + t->name + " uses " +
           gpu::format_gpus(t->allocated) + " of " + gpus_text(sh.deserved_milli, "deserved") +
           ", and its pods may not be preempted, so it does not borrow";
  return {};
}

// "the pool has 3 idle GPUs", or of the products a pod is pinned to
// ("the pool has 0 idle NVIDIA-H100-80GB-HBM3 GPUs").
std::string SchedulerImpl::idle_text_locked(const std::vector<std::string>& models) const {
  int64_t capacity = 0, used = 0;
  for (const auto& [name, n] : nodes_) {
    const auto& gpus = n->devices().gpus().gpus;
    if (!models.empty() &&
        (gpus.empty() || std::find(models.begin(), models.end(), gpus[0].model) == models.end()))
      continue;
    capacity += n->devices().capacity_milli();
    used += n->devices().allocated_milli();
  }
  std::string which;
  for (const std::string& m : models) which += (which.empty() ? "" : " or ") + m;
  return "the pool has " +
         gpus_text(std::max<int64_t>(capacity - used, 0), which.empty() ? "idle" : "idle " + which);
}

// The pod fits no node as things are, and its tenant has a share: wait for
// GPUs already being freed for it, or reclaim them (filling *plan), or
// wait for idle ones. Returns the pending message.
std::string SchedulerImpl::reclaim_locked(PodInfo& info, const Constraints& c,
                                          std::optional<ReclaimPlan>* plan,
                                          std::string* nominated) {
  const std::string what = info.gpu.describe();
  const auto rows = ledger_.settle(capacity_milli_);
  const gpu::TenantBooks* me = nullptr;
  int64_t others_reclaiming = 0;
  for (const auto& r : rows) {
    if (r.ns == info.ns)
      me = &r;
    else
      others_reclaiming += r.reclaiming;
  }
  const TenantLedger::Tenant* t = ledger_.find(info.ns);
  std::string msg = "waiting for " + what + ": tenant " + (t ? t->name : info.ns) + " uses " +
                    gpu::format_gpus(me ? me->allocated : 0) + " of " +
                    gpus_text(me ? me->share.deserved_milli : 0, "deserved");
  if (me != nullptr && me->borrowed > 0)
    msg += " (" + gpu::format_gpus(me->borrowed) + " borrowed)";
  msg += ", " + idle_text_locked(info.models);
  // GPUs on their way: a node where it fits once its terminating pods are
  // gone, after the pods already waiting there.
  for (const auto& [name, n] : nodes_) {
    bool leaving = false;
    for (const auto& [uid, p] : n->pods()) leaving = leaving || p.terminating;
    if (!leaving) continue;
    NodeInfo f = future_of(*n, ledger_.nominated_on(name, info.uid), options_.policy);
    std::vector<std::string> why;
    if (filter_node(f, info, c, &why) && gpu::choose(f.devices(), info.gpu, options_.policy)) {
      ledger_.nominate(info.uid, {name, info.ns, info.key, info});
      *nominated = name;
      return msg + ", " + gpu::format_gpus(std::max(others_reclaiming, info.gpu_milli)) +
             " borrowed by other tenants are being reclaimed";
    }
  }
  const int64_t fair = me ? me->fair_share : 0;
  const int64_t held = me ? me->allocated - me->reclaiming : 0;
  // Within its fair share, or within a model guarantee (GPUs of that
  // product held by others beyond their own guarantee on it come back).
  const auto model_key =
      t ? TenantLedger::within_model_guarantee(*t, info.models, info.gpu_milli) : std::nullopt;
  std::map<std::string, int64_t> reclaimable;
  if (held + info.gpu_milli <= fair || model_key)
    for (const auto& r : rows) {
      if (r.ns == info.ns || !r.share.preemptible) continue;
      int64_t over = r.allocated - r.reclaiming - r.fair_share;
      if (model_key) {
        auto d = r.share.model_deserved_milli.find(*model_key);
        const TenantLedger::Tenant* u = ledger_.find(r.ns);
        over = std::max(over, (u ? TenantLedger::held_on(*u, *model_key) : 0) -
                                  (d == r.share.model_deserved_milli.end() ? 0 : d->second));
      }
      if (over > 0) reclaimable[r.ns] = over;
    }
  *plan = plan_reclaim(nodes_, info, c, options_.policy, reclaimable, ledger_);
  if (*plan) {
    int64_t freed = 0;
    for (const PodInfo& v : (*plan)->victims) {
      if (PodInfo* held_pod = nodes_[(*plan)->node]->pod(v.uid)) ledger_.set_terminating(*held_pod);
      freed += v.gpu_milli;
    }
    ledger_.nominate(info.uid, {(*plan)->node, info.ns, info.key, info});
    *nominated = (*plan)->node;
    return msg + ", reclaiming " + gpu::format_gpus(freed) + " borrowed by other tenants";
  }
  if (held + info.gpu_milli > fair && !model_key)
    return msg + "; beyond its fair share of " + gpus_text(fair) + " it waits for idle ones";
  return msg + ", and no GPUs can be reclaimed: other tenants hold no more than their shares";
}

// Without a node held for it, a pod wider than every node's free room
// waits for ever while smaller pods take each GPU that frees up (the trace's
// 8-GPU, 88-core pods did, in every configuration of bench_sharing). As
// YARN reserves a node for a container that does not fit, the node that
// needs least to leave is held: no new pod goes there until it fits. Made
// when the pool has enough idle GPUs for the pod (else it simply waits
// for capacity), on at most one node in eight, and for one pod of a tenant
// (namespace) at a time: a tenant cannot keep several nodes emptying.
std::string SchedulerImpl::reserve_locked(const PodInfo& info, const Constraints& c,
                                          std::string* nominated) {
  if (info.gpu_milli == 0 || !info.group.empty()) return "";
  if (const auto* n = ledger_.nomination(info.uid)) {
    *nominated = n->node;
    return "node " + n->node + " is held for it: no new pods go there until it fits";
  }
  if (ledger_.nominated_nodes() >= std::max<size_t>(1, nodes_.size() / 8) ||
      ledger_.any_nominated_in(info.ns))
    return "";
  int64_t idle = 0;
  for (const auto& [name, n] : nodes_)
    idle += n->devices().capacity_milli() - n->devices().allocated_milli();
  if (idle < info.gpu_milli) return "";
  // Least to free: the fewest GPU thousandths held, then the least CPU.
  const NodeInfo* best = nullptr;
  std::pair<int64_t, int64_t> best_cost{};
  for (const auto& [name, n] : nodes_) {
    if (!ledger_.nominated_on(name, info.uid).empty()) continue;
    std::pair<int64_t, int64_t> cost{n->devices().allocated_milli(), n->requested().cpu_milli};
    if (best != nullptr && cost >= best_cost) continue;
    if (!fits_empty(*n, info, c, options_.policy)) continue;
    best = n.get();
    best_cost = cost;
  }
  if (best == nullptr) return "";
  ledger_.nominate(info.uid, {best->name(), info.ns, info.key, info});
  *nominated = best->name();
  return "no node has room for it now though the pool has " + gpus_text(idle, "idle") + "; node " +
         best->name() + " is held for it: no new pods go there until it fits";
}

// A gang that does not fit, of a tenant within its fair share: every
// member gets a node where it fits now or once victims go (nominated there,
// the victims in *plans), or none does and nothing is preempted. The gang
// is bound together once all of it fits. Returns the message's tail.
std::string SchedulerImpl::reclaim_gang_locked(
    const std::vector<std::pair<ObjectPtr, PodInfo>>& members, int64_t total,
    std::vector<std::pair<PodInfo, ReclaimPlan>>* plans) {
  // Already under way (victims terminating, members nominated where they fit then).
  bool waiting = true;
  for (const auto& [o, p] : members) {
    const auto* n = ledger_.nomination(p.uid);
    auto node = n ? nodes_.find(n->node) : nodes_.end();
    std::vector<std::string> why;
    if (node == nodes_.end()) {
      waiting = false;
      break;
    }
    NodeInfo f = future_of(*node->second, ledger_.nominated_on(n->node, p.uid), options_.policy);
    if (!filter_node(f, p, constraints_of(*o), &why) ||
        !gpu::choose(f.devices(), p.gpu, options_.policy)) {
      waiting = false;
      break;
    }
  }
  if (waiting) return "; GPUs borrowed by other tenants are being reclaimed for it";
  for (const auto& [o, p] : members) ledger_.unnominate(p.uid);
  const auto rows = ledger_.settle(capacity_milli_);
  int64_t fair = 0, held = 0;
  std::map<std::string, int64_t> reclaimable;
  for (const auto& r : rows)
    if (r.ns == members.front().second.ns) {
      fair = r.fair_share;
      held = r.allocated - r.reclaiming;
    }
  if (held + total > fair) return "";
  for (const auto& r : rows)
    if (r.ns != members.front().second.ns && r.share.preemptible &&
        r.allocated - r.reclaiming > r.fair_share)
      reclaimable[r.ns] = r.allocated - r.reclaiming - r.fair_share;
  std::vector<PodInfo*> marked;
  bool ok = true;
  for (const auto& [o, p] : members) {
    Constraints c = constraints_of(*o);
    std::map<std::string, int> reasons;
    gpu::Allocation alloc;
    std::string node = pick_node_locked(p, c, &alloc, &reasons);
    if (!node.empty()) {
      ledger_.nominate(p.uid, {node, p.ns, p.key, p});
      continue;
    }
    auto plan = plan_reclaim(nodes_, p, c, options_.policy, reclaimable, ledger_);
    if (!plan) {
      ok = false;
      break;
    }
    for (const PodInfo& v : plan->victims)
      if (PodInfo* victim = nodes_[plan->node]->pod(v.uid)) {
        ledger_.set_terminating(*victim);
        marked.push_back(victim);
        if (v.ns != p.ns) reclaimable[v.ns] -= v.gpu_milli;
      }
    ledger_.nominate(p.uid, {plan->node, p.ns, p.key, p});
    plans->emplace_back(p, std::move(*plan));
  }
  if (!ok) {
    for (PodInfo* v : marked) ledger_.set_terminating(*v, false);
    for (const auto& [o, p] : members) ledger_.unnominate(p.uid);
    plans->clear();
    return "; not enough GPUs can be reclaimed for all of it";
  }
  int64_t freed = 0;
  for (const auto& [p, plan] : *plans)
    for (const PodInfo& v : plan.victims) freed += v.gpu_milli;
  return "; reclaiming " + gpu::format_gpus(freed) + " borrowed by other tenants for it";
}

// A gang (gpu::kPodGroupAnnotation): `size` of its pods are placed at once
// or none is, so two half-placed groups never hold the pool between them.
void SchedulerImpl::schedule_gang(ObjectPtr obj, PodInfo info) {
  const std::string gang = info.ns + "/" + info.group;
  std::vector<std::pair<ObjectPtr, PodInfo>> members;
  std::vector<std::pair<PodInfo, ReclaimPlan>> plans;
  std::vector<std::string> placed_on;
  std::vector<int64_t> borrowed;
  std::string why;
  uint64_t epoch = 0;  // wake_all()'s count when the attempt began
  {
    std::unique_lock lock(mu_);
    if (assumed_.count(info.uid)) return;
    epoch = wake_epoch_.load();
    if (auto f = gang_failed_.find(gang);
        f != gang_failed_.end() && f->second.first == epoch &&
        std::chrono::steady_clock::now() - f->second.second < std::chrono::seconds(2)) {
      // Its gang just failed and nothing changed since: its message stands.
      lock.unlock();
      unschedulable_attempts_++;
      queue_.unschedulable(info.key, info.priority);
      return;
    }
    auto b = gang_bound_.find(gang);
    const int bound = b == gang_bound_.end() ? 0 : b->second;
    const int need = std::max(info.group_size - bound, 1);
    members.emplace_back(obj, info);
    if (auto w = gang_waiting_.find(gang); w != gang_waiting_.end())
      for (const std::string& k : w->second) {
        if (static_cast<int>(members.size()) >= need) break;
        if (k == info.key) continue;
        ObjectPtr o = pods_->get(k);
        if (!o || !str(*o, {"spec", "nodeName"}).empty() ||
            json_at(*o, {"metadata", "deletionTimestamp"}) != nullptr)
          continue;
        auto p = pod_info(*o);
        if (!p.is_ok() || assumed_.count(p->uid)) continue;
        members.emplace_back(o, std::move(p).value());
      }
    const std::string group = "pod group " + info.group;
    if (static_cast<int>(members.size()) < need) {
      why = group + ": " + std::to_string(bound + static_cast<int>(members.size())) + " of " +
            std::to_string(info.group_size) + " pods exist; they are placed together";
    } else {
      int64_t total = 0;
      for (const auto& [o, p] : members) total += p.gpu_milli;
      const std::string what = std::to_string(members.size()) + " pods with " + gpus_text(total);
      if (ledger_.enabled() && total > 0) {
        why = refused_by_share_locked(info, total, what);
        if (!why.empty()) why = group + ": " + why;
      }
      if (why.empty()) {
        std::map<std::string, int> reasons;
        for (auto& [o, p] : members) {
          gpu::Allocation alloc;
          std::string node = pick_node_locked(p, constraints_of(*o), &alloc, &reasons);
          p.allocation = std::move(alloc);
          if (node.empty() || !assume_locked(p, node)) break;
          placed_on.push_back(node);
          borrowed.push_back(borrowed_locked(p, node));
        }
        if (placed_on.size() < members.size()) {
          const size_t fitted = placed_on.size();
          for (size_t i = 0; i < fitted; ++i) {
            release_locked(*nodes_[placed_on[i]], members[i].second.uid);
            assumed_.erase(members[i].second.uid);
            ledger_.set_pending(members[i].second.uid, info.ns, members[i].second.gpu_milli);
          }
          placed_on.clear();
          why = group + ": " + what + " are placed together, and only " + std::to_string(fitted) +
                " fit now; " + idle_text_locked(info.models);
          if (ledger_.enabled() && total > 0) why += reclaim_gang_locked(members, total, &plans);
        }
      }
    }
  }
  {
    std::lock_guard lock(mu_);
    if (why.empty() || !plans.empty())
      gang_failed_.erase(gang);
    else
      gang_failed_[gang] = {epoch, std::chrono::steady_clock::now()};  // as tried
  }
  if (!why.empty()) {
    for (auto& [p, plan] : plans) preempt(p, plan);
    for (auto& [o, p] : members) {
      std::string nominated;
      {
        std::lock_guard lock(mu_);
        if (const auto* n = ledger_.nomination(p.uid)) nominated = n->node;
      }
      unschedulable(o, p.priority, why, nominated);
    }
    return;
  }
  for (size_t i = 0; i < members.size(); ++i)
    bind(members[i].first, members[i].second, placed_on[i], borrowed[i]);
}

// Reclaim: each victim is told why (DisruptionTarget, an event) and
// deleted with its grace period; the waiting pod keeps its nomination.
// Messages never name the tenant the GPUs go to.
void SchedulerImpl::preempt(const PodInfo& info, const ReclaimPlan& plan) {
  for (const PodInfo& v : plan.victims) {
    ObjectPtr victim = pods_->get(v.key);
    if (!victim) continue;
    preemptions_++;
    std::string message;
    if (v.ns == info.ns) {
      message =
          "vkube-scheduler: preempted by " + info.key + " of higher priority on node " + plan.node;
    } else {
      const TenantLedger::Tenant* t = nullptr;
      {
        std::lock_guard lock(mu_);
        t = ledger_.find(v.ns);
        message = "vkube-scheduler: reclaimed for another tenant's guaranteed GPU share; tenant " +
                  (t ? t->name : v.ns) + " was borrowing beyond its deserved " +
                  gpus_text(t ? t->share.deserved_milli : 0);
      }
    }
    events_.record(*victim, scheduler_name(*victim), "Warning", "Preempted", message);
    in_flight_++;
    pool_.submit([this, v, message] {
      const std::string ns = v.ns, name = v.key.substr(v.key.find('/') + 1);
      const std::string path = "/api/v1/namespaces/" + ns + "/pods/" + name;
      json patch = {
          {"status",
           {{"conditions", json::array({{{"type", "DisruptionTarget"},
                                         {"status", "True"},
                                         {"reason", "PreemptionByScheduler"},
                                         {"message", message},
                                         {"lastProbeTime", nullptr},
                                         {"lastTransitionTime", format_time(options_.now())}}})}}}};
      auto r =
          client_.call("PATCH", path + "/status", patch, "application/strategic-merge-patch+json");
      if (!r.ok() && r.code != 404)
        VKUBE_LOG(warn, "cannot mark a preempted pod", {"pod", v.key}, {"code", r.code});
      json options = {
          {"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", {{"uid", v.uid}}}};
      auto d = client_.call("DELETE", path, options);
      if (!d.ok() && d.code != 404 && d.code != 409)
        VKUBE_LOG(warn, "cannot delete a preempted pod", {"pod", v.key}, {"code", d.code});
      in_flight_--;
    });
  }
}

}  // namespace vkube::scheduler
