// The scheduling loop: one pod at a time against an in-memory picture of the
// cluster (nodes and the pods bound or assumed on them), as kube-scheduler
// does; the binding is written by a pool of binders while the loop goes on
// (an "assumed" pod holds its node's resources until its binding lands or
// fails). Tenants' shares are scheduler_share.cpp's.
#include "scheduler_impl.h"

namespace vkube::scheduler {

void SchedulerImpl::stop() {
  if (stopped_.exchange(true)) return;
  queue_.shutdown();
  if (loop_.joinable()) loop_.join();
  // Bindings in flight finish before the pool goes (its destructor joins).
  while (in_flight_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  events_.stop();
}

bool SchedulerImpl::wait_idle(std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  int quiet = 0;
  while (std::chrono::steady_clock::now() < end) {
    bool idle = queue_.idle() && in_flight_.load() == 0 && !busy_.load();
    quiet = idle ? quiet + 1 : 0;
    if (quiet >= 3) {
      events_.flush();
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

ClusterGpuState SchedulerImpl::gpu_state() const {
  std::lock_guard lock(mu_);
  ClusterGpuState s;
  s.nodes = static_cast<int>(nodes_.size());
  const auto& classes = workload_.classes();
  for (const auto& [name, n] : nodes_) {
    s.capacity_milli += n->devices().capacity_milli();
    s.allocated_milli += n->devices().allocated_milli();
    s.whole_gpus_free += n->devices().whole_free();
    s.fragmented_milli += fragmentation_of(*n, classes);
  }
  s.pending = static_cast<int>(queue_.active() + queue_.waiting_unschedulable() +
                               queue_.waiting_backoff()) +
              in_flight_.load();
  s.scheduled = scheduled_.load();
  return s;
}

std::string SchedulerImpl::metrics() const {
  MetricsSnapshot snap;
  {
    std::lock_guard lock(mu_);
    const auto& classes = workload_.classes();
    snap.nodes.reserve(nodes_.size());
    for (const auto& [name, n] : nodes_) {
      const gpu::DeviceState& d = n->devices();
      NodeGpuRow row{name, "", d.gpus().whole_count(), d.capacity_milli(), d.allocated_milli(), {}};
      for (size_t i = 0; i < d.gpus().gpus.size(); ++i) {
        const gpu::Gpu& g = d.gpus().gpus[i];
        if (row.model.empty()) row.model = g.model;
        for (size_t s = 0; s < g.mig.size(); ++s) {
          auto& [total, held] = row.mig[g.mig[s]];
          ++total;
          held += d.slice_free(i, s) ? 0 : 1;
        }
      }
      snap.nodes.push_back(std::move(row));
      for (const auto& [uid, p] : n->pods()) {
        if (p.allocation.empty()) continue;
        auto& [whole, milli] = snap.namespaces[p.ns];
        for (const auto& share : p.allocation.shares) {
          milli += share.milli;
          whole += share.milli == 1000 ? 1 : 0;
        }
      }
      snap.fragmented_milli += fragmentation_of(*n, classes);
    }
  }
  snap.active = queue_.active();
  snap.unschedulable = queue_.waiting_unschedulable();
  snap.backoff = queue_.waiting_backoff();
  snap.scheduled = scheduled_.load();
  snap.unschedulable_attempts = unschedulable_attempts_.load();
  snap.errors = errors_.load();
  std::vector<gpu::TenantBooks> tenants;
  {
    std::lock_guard lock(mu_);
    if (ledger_.enabled()) tenants = ledger_.settle(capacity_milli_);
  }
  std::string out = render_metrics(snap, latency_);
  render_tenant_metrics(out, tenants, preemptions_.load());
  return out;
}

bool SchedulerImpl::ours(const json& pod) const {
  std::string name = str(pod, {"spec", "schedulerName"});
  if (name.empty()) name = "default-scheduler";
  return std::find(options_.scheduler_names.begin(), options_.scheduler_names.end(), name) !=
         options_.scheduler_names.end();
}

void SchedulerImpl::on_pod(const ObjectEvent& e) {
  const json& pod = *e.object;
  const std::string uid = str(pod, {"metadata", "uid"});
  const std::string node = str(pod, {"spec", "nodeName"});
  if (e.type == EventType::kDeleted || terminal(pod)) {
    bool freed = false;
    {
      std::lock_guard lock(mu_);
      freed = forget_pod_locked(uid, node);
      forget_waiting_locked(pod, uid, e.key);
      ledger_.unnominate(uid);
    }
    queue_.remove(e.key);
    if (freed) wake_all();
    return;
  }
  if (!node.empty()) {
    {
      std::lock_guard lock(mu_);
      assumed_.erase(uid);
      forget_waiting_locked(pod, uid, e.key);
      ledger_.unnominate(uid);
      account_bound_locked(pod, uid, node);
    }
    queue_.remove(e.key);
    return;
  }
  if (!ours(pod)) return;
  if (json_at(pod, {"metadata", "deletionTimestamp"}) != nullptr) {
    std::lock_guard lock(mu_);
    forget_waiting_locked(pod, uid, e.key);
    ledger_.unnominate(uid);
    return;
  }
  if (e.type == EventType::kModified && e.old && !spec_changed(*e.old, pod)) return;
  {
    std::lock_guard lock(mu_);
    if (e.type == EventType::kAdded) workload_.add(pod);
    note_waiting_locked(pod, uid, e.key);
  }
  const json* prio = json_at(pod, {"spec", "priority"});
  queue_.add(e.key, prio != nullptr && prio->is_number_integer() ? prio->get<int32_t>() : 0);
}

// An unbound pod of ours: what it asks of its tenant, its gang, and the
// node it waits on (status.nominatedNodeName: a reclaim begun before a
// restart goes on without preempting again).
void SchedulerImpl::note_waiting_locked(const json& pod, const std::string& uid,
                                        const std::string& key) {
  auto info = pod_info(pod);
  if (!info.is_ok()) return;
  ledger_.set_pending(uid, info->ns, info->gpu_milli);
  if (!info->group.empty()) {
    gang_waiting_[info->ns + "/" + info->group].insert(key);
    gang_failed_.erase(info->ns + "/" + info->group);  // a new member: worth a try
  }
  const std::string nominated = str(pod, {"status", "nominatedNodeName"});
  if (!nominated.empty() && ledger_.nomination(uid) == nullptr)
    ledger_.nominate(uid, {nominated, info->ns, key, *info});
}

void SchedulerImpl::forget_waiting_locked(const json& pod, const std::string& uid,
                                          const std::string& key) {
  ledger_.clear_pending(uid);
  const std::string group =
      str(pod, {"metadata", "annotations", std::string(gpu::kPodGroupAnnotation).c_str()});
  if (group.empty()) return;
  const std::string gang = str(pod, {"metadata", "namespace"}) + "/" + group;
  if (auto it = gang_waiting_.find(gang); it != gang_waiting_.end()) {
    it->second.erase(key);
    if (it->second.empty()) gang_waiting_.erase(it);
  }
}

// Every pod a node holds passes here, so the tenants' books and the
// gangs' counts move with the nodes'.
Status SchedulerImpl::hold_locked(NodeInfo& n, PodInfo p) {
  if (n.has_pod(p.uid)) return Status::ok();
  p.model = p.gpu.empty() || n.devices().gpus().gpus.empty() ? std::string()
                                                             : n.devices().gpus().gpus[0].model;
  const std::string uid = p.uid;
  VKUBE_RETURN_IF_ERROR(n.add_pod(std::move(p)));
  const PodInfo& held = *n.pod(uid);
  ledger_.add_bound(held);
  if (!held.group.empty()) ++gang_bound_[held.ns + "/" + held.group];
  return Status::ok();
}

bool SchedulerImpl::release_locked(NodeInfo& n, const std::string& uid) {
  PodInfo* p = n.pod(uid);
  if (p == nullptr) return false;
  ledger_.remove_bound(*p);
  if (!p->group.empty()) {
    auto it = gang_bound_.find(p->ns + "/" + p->group);
    if (it != gang_bound_.end() && --it->second <= 0) gang_bound_.erase(it);
  }
  return n.remove_pod(uid);
}

// A pod bound to `node` holds its resources (unless it already does: our
// own assumption, confirmed; then only its terminating flag may change).
void SchedulerImpl::account_bound_locked(const json& pod, const std::string& uid,
                                         const std::string& node) {
  auto it = nodes_.find(node);
  if (it != nodes_.end() && it->second->has_pod(uid)) {
    if (json_at(pod, {"metadata", "deletionTimestamp"}) != nullptr)
      if (PodInfo* held = it->second->pod(uid)) ledger_.set_terminating(*held);
    return;
  }
  auto info = pod_info(pod);
  if (!info.is_ok()) return;
  PodInfo p = std::move(info).value();
  if (it == nodes_.end()) {
    orphans_[node][uid] = std::move(p);
    return;
  }
  place_locked(*it->second, std::move(p));
}

// Adds a bound pod to its node. Pods bound without our allocation (created
// with spec.nodeName) get devices picked here, so the books stay whole.
void SchedulerImpl::place_locked(NodeInfo& n, PodInfo p) {
  if (p.allocation.empty() && !p.gpu.empty()) {
    auto a = gpu::choose(n.devices(), p.gpu, gpu::Policy::kBinpack);
    if (a) p.allocation = *a;
  }
  PodInfo copy = p;
  if (!hold_locked(n, std::move(p)).is_ok()) {
    // Overlapping devices (two pods claim one GPU): count its resources
    // without devices rather than lose the pod.
    copy.allocation = {};
    (void)hold_locked(n, std::move(copy));
  }
}

bool SchedulerImpl::forget_pod_locked(const std::string& uid, const std::string& node) {
  assumed_.erase(uid);
  if (auto o = orphans_.find(node); o != orphans_.end()) o->second.erase(uid);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    // Assumed on a node under another name? Look everywhere (rare).
    for (auto& [name, n] : nodes_)
      if (release_locked(*n, uid)) return true;
    return false;
  }
  return release_locked(*it->second, uid);
}

void SchedulerImpl::on_node(const ObjectEvent& e) {
  const std::string name = str(*e.object, {"metadata", "name"});
  {
    std::lock_guard lock(mu_);
    if (e.type == EventType::kDeleted) {
      auto it = nodes_.find(name);
      if (it != nodes_.end()) {
        for (auto& [uid, p] : it->second->pods()) {
          orphans_[name][uid] = p;
          ledger_.remove_bound(p);
          if (!p.group.empty() && --gang_bound_[p.ns + "/" + p.group] <= 0)
            gang_bound_.erase(p.ns + "/" + p.group);
        }
        nodes_.erase(it);
        recount_capacity_locked();
      }
      return;
    }
    auto it = nodes_.find(name);
    if (it == nodes_.end()) {
      auto n = std::make_unique<NodeInfo>(*e.object);
      if (auto o = orphans_.find(name); o != orphans_.end()) {
        for (auto& [uid, p] : o->second) place_locked(*n, std::move(p));
        orphans_.erase(o);
      }
      nodes_.emplace(name, std::move(n));
      recount_capacity_locked();
    } else {
      if (e.old && e.old->value("spec", json()) == e.object->value("spec", json()) &&
          json_at(*e.old, {"metadata", "labels"}) != nullptr &&
          json_at(*e.object, {"metadata", "labels"}) != nullptr &&
          *json_at(*e.old, {"metadata", "labels"}) == *json_at(*e.object, {"metadata", "labels"}) &&
          json_at(*e.old, {"status", "allocatable"}) != nullptr &&
          json_at(*e.object, {"status", "allocatable"}) != nullptr &&
          *json_at(*e.old, {"status", "allocatable"}) ==
              *json_at(*e.object, {"status", "allocatable"}) &&
          str(*e.old, {"metadata", "annotations", "gpu.vkube.io/devices"}) ==
              str(*e.object, {"metadata", "annotations", "gpu.vkube.io/devices"}))
        return;  // a status heartbeat: nothing the scheduler reads changed
      it->second->update(*e.object);
      recount_capacity_locked();
    }
  }
  wake_all();
}

void SchedulerImpl::recount_capacity_locked() {
  capacity_milli_ = 0;
  for (const auto& [name, n] : nodes_) capacity_milli_ += n->devices().capacity_milli();
}

double SchedulerImpl::fragmentation_of(const NodeInfo& n,
                                       const std::vector<gpu::TaskClass>& classes) const {
  double f = 0;
  if (n.fragmentation_cached(workload_.epoch(), &f)) return f;
  f = gpu::fragmentation(n.devices(), n.allocatable().cpu_milli - n.requested().cpu_milli, classes);
  n.cache_fragmentation(workload_.epoch(), f);
  return f;
}

void SchedulerImpl::run() {
  std::string key;
  while (queue_.pop(&key)) {
    busy_ = true;
    schedule_one(key);
    busy_ = false;
  }
}

double SchedulerImpl::pack_score(const NodeInfo& n, const PodInfo& p,
                                 const gpu::Allocation& a) const {
  const gpu::DeviceState& d = n.devices();
  double gpu_frac = d.capacity_milli() > 0
                        ? static_cast<double>(d.allocated_milli() + a.milli()) / d.capacity_milli()
                        : 0;
  const Resources& al = n.allocatable();
  const Resources& rq = n.requested();
  double cpu = al.cpu_milli > 0
                   ? static_cast<double>(rq.cpu_milli + p.requests.cpu_milli) / al.cpu_milli
                   : 0;
  double mem = al.memory > 0 ? static_cast<double>(rq.memory + p.requests.memory) / al.memory : 0;
  return 4 * gpu_frac + cpu + mem;
}

// The best node for `info` and its devices, or "" with why each node
// failed in `reasons`. Nodes whose GPUs are promised to pods waiting on a
// reclaim there keep them for those pods.
std::string SchedulerImpl::pick_node_locked(const PodInfo& info, const Constraints& c,
                                            gpu::Allocation* out,
                                            std::map<std::string, int>* reasons) {
  const bool fgd = options_.policy == gpu::Policy::kFragmentation;
  const auto& classes = workload_.classes();
  double best = -std::numeric_limits<double>::infinity(), best_tie = best;
  std::string chosen;
  std::vector<std::string> why;
  for (const auto& [name, n] : nodes_) {
    why.clear();
    if (!filter_node(*n, info, c, &why)) {
      for (auto& w : why) ++(*reasons)[w];
      continue;
    }
    int64_t free_cpu =
        n->allocatable().cpu_milli - n->requested().cpu_milli - info.requests.cpu_milli;
    std::string reason;
    double frag_after = 0;
    auto a = gpu::choose(n->devices(), info.gpu, options_.policy, &reason, free_cpu,
                         fgd ? &classes : nullptr, &frag_after);
    if (!a) {
      ++(*reasons)[reason];
      continue;
    }
    if (ledger_.any_nominated()) {
      // Room promised to pods waiting on this node (a reclaim under way, or
      // a node held for a pod that fits no node as things are) is not
      // given away; a node still being emptied for one takes no new pods.
      auto waiting = ledger_.nominated_on(name, info.uid);
      if (!waiting.empty()) {
        int unplaced = 0;
        NodeInfo f = future_of(*n, waiting, options_.policy, &unplaced);
        std::vector<std::string> ignored;
        if (unplaced > 0 || !filter_node(f, info, c, &ignored) ||
            !gpu::choose(f.devices(), info.gpu, options_.policy)) {
          ++(*reasons)["node(s) had room held for pods waiting for it"];
          continue;
        }
      }
    }
    double pack = pack_score(*n, info, *a);
    double score = 0, tie = 0;
    switch (options_.policy) {
      case gpu::Policy::kBinpack:
        score = pack;
        break;
      case gpu::Policy::kSpread:
        score = -pack;
        break;
      case gpu::Policy::kFragmentation:
        // The smallest growth of fragmentation; among equals, pack.
        score = -(frag_after - fragmentation_of(*n, classes));
        tie = pack;
        break;
    }
    if (score > best + 1e-9 || (score > best - 1e-9 && tie > best_tie + 1e-9)) {
      best = score;
      best_tie = tie;
      chosen = name;
      *out = std::move(*a);
    }
  }
  return chosen;
}

// Holds `info` on `node` as assumed (its binding about to be written).
bool SchedulerImpl::assume_locked(PodInfo& info, const std::string& node) {
  if (!hold_locked(*nodes_[node], info).is_ok()) return false;
  assumed_.insert(info.uid);
  ledger_.clear_pending(info.uid);
  ledger_.unnominate(info.uid);
  return true;
}

void SchedulerImpl::schedule_one(const std::string& key) {
  ObjectPtr obj = pods_->get(key);
  if (!obj || !str(*obj, {"spec", "nodeName"}).empty() ||
      json_at(*obj, {"metadata", "deletionTimestamp"}) != nullptr || !ours(*obj)) {
    queue_.forget(key);
    return;
  }
  const json& pod = *obj;
  auto parsed = pod_info(pod);
  if (!parsed.is_ok()) {
    unschedulable(obj, 0, "Pod's GPU request is invalid: " + parsed.status().message());
    return;
  }
  PodInfo info = std::move(parsed).value();
  if (!info.group.empty()) return schedule_gang(obj, std::move(info));
  Constraints c = constraints_of(pod);
  std::string chosen, why, nominated;
  std::map<std::string, int> reasons;
  std::optional<ReclaimPlan> plan;
  int node_count = 0;
  int64_t borrowed = 0;
  {
    std::lock_guard lock(mu_);
    if (assumed_.count(info.uid)) return;  // its binding is in flight
    node_count = static_cast<int>(nodes_.size());
    const bool shares = ledger_.enabled() && info.gpu_milli > 0;
    if (shares) why = refused_by_share_locked(info, info.gpu_milli, info.gpu.describe());
    const bool refused = !why.empty();
    if (why.empty()) {
      gpu::Allocation alloc;
      chosen = pick_node_locked(info, c, &alloc, &reasons);
      if (!chosen.empty()) {
        info.allocation = std::move(alloc);
        if (assume_locked(info, chosen))
          borrowed = borrowed_locked(info, chosen);
        else
          chosen.clear();
      } else if (shares) {
        why = reclaim_locked(info, c, &plan, &nominated);
      }
    }
    if (chosen.empty() && !refused && !plan && nominated.empty()) {
      std::string held = reserve_locked(info, c, &nominated);
      if (!held.empty()) why = why.empty() ? held : why + "; " + held;
    }
  }
  if (chosen.empty()) {
    if (plan) preempt(info, *plan);
    std::string message = unschedulable_message(node_count, reasons);
    if (!why.empty()) message = reasons.empty() ? why : why + ". " + message;
    unschedulable(obj, info.priority, message, nominated);
    return;
  }
  bind(obj, info, chosen, borrowed);
}

void SchedulerImpl::bind(ObjectPtr pod, PodInfo info, const std::string& node, int64_t borrowed) {
  in_flight_++;
  pool_.submit([this, pod, info = std::move(info), node, borrowed] {
    const std::string ns = info.ns;
    const std::string name = str(*pod, {"metadata", "name"});
    json binding = {{"apiVersion", "v1"},
                    {"kind", "Binding"},
                    {"metadata", {{"name", name}, {"namespace", ns}, {"uid", info.uid}}},
                    {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    if (!info.allocation.empty())
      binding["metadata"]["annotations"] = {
          {std::string(gpu::kAllocationAnnotation), info.allocation.format()}};
    if (borrowed > 0)
      binding["metadata"]["annotations"][std::string(gpu::kBorrowingAnnotation)] =
          std::to_string(borrowed);
    auto r =
        client_.call("POST", "/api/v1/namespaces/" + ns + "/pods/" + name + "/binding", binding);
    if (r.ok()) {
      auto waited = std::chrono::steady_clock::now() - queue_.first_seen(info.key);
      latency_.observe(std::chrono::duration<double>(waited).count());
      queue_.forget(info.key);
      scheduled_++;
      events_.record(*pod, scheduler_name(*pod), "Normal", "Scheduled",
                     "Successfully assigned " + info.key + " to " + node);
    } else {
      errors_++;
      bool freed;
      {
        std::lock_guard lock(mu_);
        freed = assumed_.erase(info.uid) > 0;
        if (freed) freed = forget_pod_locked(info.uid, node);
        if (r.code != 404 && r.code != 409) ledger_.set_pending(info.uid, info.ns, info.gpu_milli);
      }
      std::string why = r.body.is_object() ? r.body.value("message", "") : std::string();
      if (r.code == 404 || r.code == 409) {
        // Gone, or bound meanwhile: its events tell the rest.
        VKUBE_LOG(info, "binding refused", {"pod", info.key}, {"node", node}, {"code", r.code},
                  {"message", why});
        queue_.forget(info.key);
      } else {
        VKUBE_LOG(warn, "binding failed", {"pod", info.key}, {"node", node}, {"code", r.code},
                  {"message", why});
        queue_.backoff(info.key, info.priority);
      }
      if (freed) wake_all();
    }
    in_flight_--;
  });
}

std::string SchedulerImpl::scheduler_name(const json& pod) const {
  std::string s = str(pod, {"spec", "schedulerName"});
  return s.empty() ? "default-scheduler" : s;
}

// The pod fits nowhere: its PodScheduled condition and an event say why
// (once per distinct message), and it waits for the cluster to change.
void SchedulerImpl::unschedulable(ObjectPtr pod, int32_t priority, const std::string& message,
                                  const std::string& nominated) {
  unschedulable_attempts_++;
  const std::string key =
      str(*pod, {"metadata", "namespace"}) + "/" + str(*pod, {"metadata", "name"});
  queue_.unschedulable(key, priority);
  if (const json* conds = json_at(*pod, {"status", "conditions"});
      conds != nullptr && conds->is_array())
    for (const json& cond : *conds)
      if (cond.value("type", "") == "PodScheduled" && cond.value("status", "") == "False" &&
          cond.value("message", "") == message &&
          (nominated.empty() || str(*pod, {"status", "nominatedNodeName"}) == nominated))
        return;
  events_.record(*pod, scheduler_name(*pod), "Warning", "FailedScheduling", message);
  in_flight_++;
  pool_.submit([this, pod, message, key, nominated] {
    json patch = {
        {"status",
         {{"conditions", json::array({{{"type", "PodScheduled"},
                                       {"status", "False"},
                                       {"reason", "Unschedulable"},
                                       {"message", message},
                                       {"lastProbeTime", nullptr},
                                       {"lastTransitionTime", format_time(options_.now())}}})}}}};
    // Where a reclaim frees GPUs for it, as kube-scheduler nominates a
    // preempting pod (a restarted scheduler reads it back).
    if (!nominated.empty()) patch["status"]["nominatedNodeName"] = nominated;
    // Written after the decision, it must not land on a pod bound
    // meanwhile (a later attempt fit): the pod's resourceVersion is its
    // precondition, and on a conflict the pod is read again.
    const std::string path = "/api/v1/namespaces/" + str(*pod, {"metadata", "namespace"}) +
                             "/pods/" + str(*pod, {"metadata", "name"});
    std::string rv = str(*pod, {"metadata", "resourceVersion"});
    controllers::ApiResult r;
    for (int attempt = 0; attempt < 4; ++attempt) {
      patch["metadata"] = {{"resourceVersion", rv}};
      r = client_.call("PATCH", path + "/status", patch, "application/strategic-merge-patch+json");
      if (r.code != 409) break;
      auto now = client_.call("GET", path);
      if (!now.ok() || !str(now.body, {"spec", "nodeName"}).empty() ||
          json_at(now.body, {"metadata", "deletionTimestamp"}) != nullptr) {
        r = now;
        break;
      }
      rv = str(now.body, {"metadata", "resourceVersion"});
    }
    if (!r.ok() && r.code != 404)
      VKUBE_LOG(warn, "cannot record unschedulable pod", {"pod", key}, {"code", r.code});
    in_flight_--;
  });
}

std::unique_ptr<Scheduler> Scheduler::create(apiserver::ApiServer& api,
                                             controllers::Informers& informers, Options options) {
  return std::make_unique<SchedulerImpl>(api, informers, std::move(options));
}

}  // namespace vkube::scheduler
