// The scheduling loop: one pod at a time against an in-memory picture of the
// cluster (nodes and the pods bound or assumed on them), as kube-scheduler
// does; the binding is written by a pool of binders while the loop goes on
// (an "assumed" pod holds its node's resources until its binding lands or
// fails).
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

namespace {

using controllers::EventType;
using controllers::ObjectEvent;
using controllers::ObjectPtr;

const json* find(const json& j, std::initializer_list<const char*> path) {
  const json* cur = &j;
  for (const char* p : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(p);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string str(const json& j, std::initializer_list<const char*> path) {
  const json* v = find(j, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// "1 GPU", "0.5 GPU", "8 GPUs", with `what` before the noun ("2 idle GPUs").
std::string gpus_text(int64_t milli, const std::string& what = "") {
  return gpu::format_gpus(milli) + " " + (what.empty() ? "" : what + " ") +
         (milli > 1000 || milli == 0 ? "GPUs" : "GPU");
}

bool terminal(const json& pod) {
  std::string phase = str(pod, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed";
}

std::string format_time(std::chrono::system_clock::time_point t) {
  std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// What the scheduler's decisions depend on changed (not only the status).
bool spec_changed(const json& a, const json& b) {
  const json* aa = find(a, {"metadata", "annotations"});
  const json* ba = find(b, {"metadata", "annotations"});
  if ((aa == nullptr) != (ba == nullptr) || (aa != nullptr && *aa != *ba)) return true;
  const json* as = find(a, {"spec"});
  const json* bs = find(b, {"spec"});
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

  void stop() override {
    if (stopped_.exchange(true)) return;
    queue_.shutdown();
    if (loop_.joinable()) loop_.join();
    // Bindings in flight finish before the pool goes (its destructor joins).
    while (in_flight_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    events_.stop();
  }

  bool wait_idle(std::chrono::milliseconds timeout) override {
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

  ClusterGpuState gpu_state() const override {
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

  std::string metrics() const override {
    MetricsSnapshot snap;
    {
      std::lock_guard lock(mu_);
      const auto& classes = workload_.classes();
      snap.nodes.reserve(nodes_.size());
      for (const auto& [name, n] : nodes_) {
        const gpu::DeviceState& d = n->devices();
        NodeGpuRow row{name, "", d.gpus().whole_count(), d.capacity_milli(), d.allocated_milli(),
                       {}};
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

 private:
  bool ours(const json& pod) const {
    std::string name = str(pod, {"spec", "schedulerName"});
    if (name.empty()) name = "default-scheduler";
    return std::find(options_.scheduler_names.begin(), options_.scheduler_names.end(), name) !=
           options_.scheduler_names.end();
  }

  // --- the cluster picture (informer dispatch thread) ---

  void on_pod(const ObjectEvent& e) {
    const json& pod = *e.object;
    const std::string uid = str(pod, {"metadata", "uid"});
    const std::string node = str(pod, {"spec", "nodeName"});
    if (e.type == EventType::kDeleted || terminal(pod)) {
      bool freed = false;
      {
        std::lock_guard lock(mu_);
        freed = forget_pod_locked(uid, node);
        forget_waiting_locked(uid, e.key);
        ledger_.unnominate(uid);
      }
      queue_.remove(e.key);
      if (freed) queue_.move_all_to_active();
      return;
    }
    if (!node.empty()) {
      {
        std::lock_guard lock(mu_);
        assumed_.erase(uid);
        forget_waiting_locked(uid, e.key);
        ledger_.unnominate(uid);
        account_bound_locked(pod, uid, node);
      }
      queue_.remove(e.key);
      return;
    }
    if (!ours(pod)) return;
    if (find(pod, {"metadata", "deletionTimestamp"}) != nullptr) {
      std::lock_guard lock(mu_);
      forget_waiting_locked(uid, e.key);
      ledger_.unnominate(uid);
      return;
    }
    if (e.type == EventType::kModified && e.old && !spec_changed(*e.old, pod)) return;
    {
      std::lock_guard lock(mu_);
      if (e.type == EventType::kAdded) workload_.add(pod);
      note_waiting_locked(pod, uid, e.key);
    }
    const json* prio = find(pod, {"spec", "priority"});
    queue_.add(e.key, prio != nullptr && prio->is_number_integer() ? prio->get<int32_t>() : 0);
  }

  // An unbound pod of ours: what it asks of its tenant, its gang, and the
  // node it waits on (status.nominatedNodeName: a reclaim begun before a
  // restart goes on without preempting again).
  void note_waiting_locked(const json& pod, const std::string& uid, const std::string& key) {
    auto info = pod_info(pod);
    if (!info.is_ok()) return;
    ledger_.set_pending(uid, info->ns, info->gpu_milli);
    if (!info->group.empty()) gang_waiting_[info->ns + "/" + info->group].insert(key);
    const std::string nominated = str(pod, {"status", "nominatedNodeName"});
    if (!nominated.empty() && ledger_.nomination(uid) == nullptr)
      ledger_.nominate(uid, {nominated, info->ns, key, *info});
  }

  void forget_waiting_locked(const std::string& uid, const std::string& key) {
    ledger_.clear_pending(uid);
    if (gang_waiting_.empty()) return;
    const auto slash = key.find('/');
    for (auto it = gang_waiting_.begin(); it != gang_waiting_.end();) {
      if (slash != std::string::npos && it->first.compare(0, slash + 1, key, 0, slash + 1) == 0)
        it->second.erase(key);
      it = it->second.empty() ? gang_waiting_.erase(it) : std::next(it);
    }
  }

  // Every pod a node holds passes here, so the tenants' books and the
  // gangs' counts move with the nodes'.
  Status hold_locked(NodeInfo& n, PodInfo p) {
    p.model = p.gpu.empty() || n.devices().gpus().gpus.empty() ? std::string()
                                                               : n.devices().gpus().gpus[0].model;
    ledger_.add_bound(p);
    if (!p.group.empty()) ++gang_bound_[p.ns + "/" + p.group];
    PodInfo copy = p;
    Status s = n.add_pod(std::move(p));
    if (!s.is_ok()) {
      ledger_.remove_bound(copy);
      if (!copy.group.empty()) --gang_bound_[copy.ns + "/" + copy.group];
    }
    return s;
  }

  bool release_locked(NodeInfo& n, const std::string& uid) {
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
  void account_bound_locked(const json& pod, const std::string& uid, const std::string& node) {
    auto it = nodes_.find(node);
    if (it != nodes_.end() && it->second->has_pod(uid)) {
      if (find(pod, {"metadata", "deletionTimestamp"}) != nullptr)
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
  void place_locked(NodeInfo& n, PodInfo p) {
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

  bool forget_pod_locked(const std::string& uid, const std::string& node) {
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

  void on_namespace(const ObjectEvent& e) {
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
    if (changed) queue_.move_all_to_active();
  }

  void on_statefulset(const ObjectEvent& e) {
    bool changed;
    {
      std::lock_guard lock(mu_);
      changed = ledger_.set_statefulset(*e.object, e.type == EventType::kDeleted);
    }
    if (changed) queue_.move_all_to_active();
  }

  void on_node(const ObjectEvent& e) {
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
            find(*e.old, {"metadata", "labels"}) != nullptr &&
            find(*e.object, {"metadata", "labels"}) != nullptr &&
            *find(*e.old, {"metadata", "labels"}) == *find(*e.object, {"metadata", "labels"}) &&
            find(*e.old, {"status", "allocatable"}) != nullptr &&
            find(*e.object, {"status", "allocatable"}) != nullptr &&
            *find(*e.old, {"status", "allocatable"}) ==
                *find(*e.object, {"status", "allocatable"}) &&
            str(*e.old, {"metadata", "annotations", "gpu.vkube.io/devices"}) ==
                str(*e.object, {"metadata", "annotations", "gpu.vkube.io/devices"}))
          return;  // a status heartbeat: nothing the scheduler reads changed
        it->second->update(*e.object);
        recount_capacity_locked();
      }
    }
    queue_.move_all_to_active();
  }

  void recount_capacity_locked() {
    capacity_milli_ = 0;
    for (const auto& [name, n] : nodes_) capacity_milli_ += n->devices().capacity_milli();
  }

  double fragmentation_of(const NodeInfo& n, const std::vector<gpu::TaskClass>& classes) const {
    double f = 0;
    if (n.fragmentation_cached(workload_.epoch(), &f)) return f;
    f = gpu::fragmentation(n.devices(), n.allocatable().cpu_milli - n.requested().cpu_milli,
                           classes);
    n.cache_fragmentation(workload_.epoch(), f);
    return f;
  }

  // --- scheduling ---

  void run() {
    std::string key;
    while (queue_.pop(&key)) {
      busy_ = true;
      schedule_one(key);
      busy_ = false;
    }
  }

  double pack_score(const NodeInfo& n, const PodInfo& p, const gpu::Allocation& a) const {
    const gpu::DeviceState& d = n.devices();
    double gpu_frac =
        d.capacity_milli() > 0
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
  std::string pick_node_locked(const PodInfo& info, const Constraints& c, gpu::Allocation* out,
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
      if (!info.gpu.empty() && ledger_.any_nominated()) {
        auto waiting = ledger_.nominated_on(name, info.uid);
        if (!waiting.empty() && !gpu::choose(future_of(*n, waiting, options_.policy).devices(),
                                             info.gpu, options_.policy)) {
          ++(*reasons)["node(s) had GPUs held for pods reclaiming them"];
          continue;
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
  bool assume_locked(PodInfo& info, const std::string& node) {
    if (!hold_locked(*nodes_[node], info).is_ok()) return false;
    assumed_.insert(info.uid);
    ledger_.clear_pending(info.uid);
    ledger_.unnominate(info.uid);
    return true;
  }

  // Thousandths `info` borrows beyond its tenant's deserved share, once held.
  int64_t borrowed_locked(const PodInfo& info, const std::string& node) {
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
  std::string refused_by_share_locked(const PodInfo& info, int64_t milli,
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
  std::string idle_text_locked(const std::vector<std::string>& models = {}) const {
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
    return "the pool has " + gpus_text(std::max<int64_t>(capacity - used, 0),
                                       which.empty() ? "idle" : "idle " + which);
  }

  // The pod fits no node as things are, and its tenant has a share: wait for
  // GPUs already being freed for it, or reclaim them (filling *plan), or
  // wait for idle ones. Returns the pending message.
  std::string reclaim_locked(PodInfo& info, const Constraints& c, std::optional<ReclaimPlan>* plan,
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
        if (PodInfo* held_pod = nodes_[(*plan)->node]->pod(v.uid))
          ledger_.set_terminating(*held_pod);
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

  void schedule_one(const std::string& key) {
    ObjectPtr obj = pods_->get(key);
    if (!obj || !str(*obj, {"spec", "nodeName"}).empty() ||
        find(*obj, {"metadata", "deletionTimestamp"}) != nullptr || !ours(*obj)) {
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

  // A gang that does not fit, of a tenant within its fair share: every
  // member gets a node where it fits now or once victims go (nominated there,
  // the victims in *plans), or none does and nothing is preempted. The gang
  // is bound together once all of it fits. Returns the message's tail.
  std::string reclaim_gang_locked(const std::vector<std::pair<ObjectPtr, PodInfo>>& members,
                                  int64_t total,
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
  void schedule_gang(ObjectPtr obj, PodInfo info) {
    const std::string gang = info.ns + "/" + info.group;
    std::vector<std::pair<ObjectPtr, PodInfo>> members;
    std::vector<std::pair<PodInfo, ReclaimPlan>> plans;
    std::vector<std::string> placed_on;
    std::vector<int64_t> borrowed;
    std::string why;
    {
      std::lock_guard lock(mu_);
      if (assumed_.count(info.uid)) return;
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
              find(*o, {"metadata", "deletionTimestamp"}) != nullptr)
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
  void preempt(const PodInfo& info, const ReclaimPlan& plan) {
    for (const PodInfo& v : plan.victims) {
      ObjectPtr victim = pods_->get(v.key);
      if (!victim) continue;
      preemptions_++;
      std::string message;
      if (v.ns == info.ns) {
        message = "vkube-scheduler: preempted by " + info.key + " of higher priority on node " +
                  plan.node;
      } else {
        const TenantLedger::Tenant* t = nullptr;
        {
          std::lock_guard lock(mu_);
          t = ledger_.find(v.ns);
          message =
              "vkube-scheduler: reclaimed for another tenant's guaranteed GPU share; tenant " +
              (t ? t->name : v.ns) + " was borrowing beyond its deserved " +
              gpus_text(t ? t->share.deserved_milli : 0);
        }
      }
      events_.record(*victim, scheduler_name(*victim), "Warning", "Preempted", message);
      in_flight_++;
      pool_.submit([this, v, message] {
        const std::string ns = v.ns, name = v.key.substr(v.key.find('/') + 1);
        const std::string path = "/api/v1/namespaces/" + ns + "/pods/" + name;
        json patch = {{"status",
                       {{"conditions",
                         json::array({{{"type", "DisruptionTarget"},
                                       {"status", "True"},
                                       {"reason", "PreemptionByScheduler"},
                                       {"message", message},
                                       {"lastProbeTime", nullptr},
                                       {"lastTransitionTime", format_time(options_.now())}}})}}}};
        auto r = client_.call("PATCH", path + "/status", patch,
                              "application/strategic-merge-patch+json");
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

  void bind(ObjectPtr pod, PodInfo info, const std::string& node, int64_t borrowed) {
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
          if (r.code != 404 && r.code != 409)
            ledger_.set_pending(info.uid, info.ns, info.gpu_milli);
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
        if (freed) queue_.move_all_to_active();
      }
      in_flight_--;
    });
  }

  std::string scheduler_name(const json& pod) const {
    std::string s = str(pod, {"spec", "schedulerName"});
    return s.empty() ? "default-scheduler" : s;
  }

  // The pod fits nowhere: its PodScheduled condition and an event say why
  // (once per distinct message), and it waits for the cluster to change.
  void unschedulable(ObjectPtr pod, int32_t priority, const std::string& message,
                     const std::string& nominated = "") {
    unschedulable_attempts_++;
    const std::string key =
        str(*pod, {"metadata", "namespace"}) + "/" + str(*pod, {"metadata", "name"});
    queue_.unschedulable(key, priority);
    if (const json* conds = find(*pod, {"status", "conditions"});
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
        r = client_.call("PATCH", path + "/status", patch,
                         "application/strategic-merge-patch+json");
        if (r.code != 409) break;
        auto now = client_.call("GET", path);
        if (!now.ok() || !str(now.body, {"spec", "nodeName"}).empty() ||
            find(now.body, {"metadata", "deletionTimestamp"}) != nullptr) {
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

  LatencyHistogram latency_;
  std::atomic<int64_t> scheduled_{0}, unschedulable_attempts_{0}, errors_{0}, preemptions_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<bool> busy_{false};
  std::atomic<bool> stopped_{false};
  std::thread loop_;
};

}  // namespace

std::unique_ptr<Scheduler> Scheduler::create(apiserver::ApiServer& api,
                                             controllers::Informers& informers, Options options) {
  return std::make_unique<SchedulerImpl>(api, informers, std::move(options));
}

}  // namespace vkube::scheduler
