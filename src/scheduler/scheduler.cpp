// The scheduling loop: one pod at a time against an in-memory picture of the
// cluster (nodes and the pods bound or assumed on them), as kube-scheduler
// does; the binding is written by a pool of binders while the loop goes on
// (an "assumed" pod holds its node's resources until its binding lands or
// fails).
#include <algorithm>
#include <atomic>
#include <map>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "filters.h"
#include "metrics.h"
#include "node_info.h"
#include "queue.h"
#include "vkube/common/log.h"
#include "vkube/controllers/event_recorder.h"
#include "vkube/controllers/local_client.h"
#include "vkube/controllers/write_pool.h"
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
    return render_metrics(snap, latency_);
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
      }
      queue_.remove(e.key);
      if (freed) queue_.move_all_to_active();
      return;
    }
    if (!node.empty()) {
      {
        std::lock_guard lock(mu_);
        assumed_.erase(uid);
        account_bound_locked(pod, uid, node);
      }
      queue_.remove(e.key);
      return;
    }
    if (!ours(pod) || find(pod, {"metadata", "deletionTimestamp"}) != nullptr) return;
    if (e.type == EventType::kModified && e.old && !spec_changed(*e.old, pod)) return;
    if (e.type == EventType::kAdded) {
      std::lock_guard lock(mu_);
      workload_.add(pod);
    }
    const json* prio = find(pod, {"spec", "priority"});
    queue_.add(e.key, prio != nullptr && prio->is_number_integer() ? prio->get<int32_t>() : 0);
  }

  // A pod bound to `node` holds its resources (unless it already does: our
  // own assumption, confirmed).
  void account_bound_locked(const json& pod, const std::string& uid, const std::string& node) {
    auto it = nodes_.find(node);
    if (it != nodes_.end() && it->second->has_pod(uid)) return;
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
    std::string uid = p.uid;
    if (!n.add_pod(p).is_ok()) {
      // Overlapping devices (two pods claim one GPU): count its resources
      // without devices rather than lose the pod.
      p.allocation = {};
      (void)n.add_pod(std::move(p));
    }
  }

  bool forget_pod_locked(const std::string& uid, const std::string& node) {
    assumed_.erase(uid);
    if (auto o = orphans_.find(node); o != orphans_.end()) o->second.erase(uid);
    auto it = nodes_.find(node);
    if (it == nodes_.end()) {
      // Assumed on a node under another name? Look everywhere (rare).
      for (auto& [name, n] : nodes_)
        if (n->remove_pod(uid)) return true;
      return false;
    }
    return it->second->remove_pod(uid);
  }

  void on_node(const ObjectEvent& e) {
    const std::string name = str(*e.object, {"metadata", "name"});
    {
      std::lock_guard lock(mu_);
      if (e.type == EventType::kDeleted) {
        auto it = nodes_.find(name);
        if (it != nodes_.end()) {
          for (auto& [uid, p] : it->second->pods()) orphans_[name][uid] = p;
          nodes_.erase(it);
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
      }
    }
    queue_.move_all_to_active();
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

  void schedule_one(const std::string& key) {
    ObjectPtr obj = pods_->get(key);
    if (!obj || !str(*obj, {"spec", "nodeName"}).empty() ||
        find(*obj, {"metadata", "deletionTimestamp"}) != nullptr || !ours(*obj)) {
      queue_.forget(key);
      return;
    }
    const json& pod = *obj;
    const std::string uid = str(pod, {"metadata", "uid"});
    auto parsed = pod_info(pod);
    if (!parsed.is_ok()) {
      unschedulable(obj, 0, "Pod's GPU request is invalid: " + parsed.status().message());
      return;
    }
    PodInfo info = std::move(parsed).value();
    Constraints c = constraints_of(pod);
    std::string chosen;
    gpu::Allocation chosen_alloc;
    std::map<std::string, int> reasons;
    int node_count = 0;
    {
      std::lock_guard lock(mu_);
      if (assumed_.count(uid)) return;  // its binding is in flight
      node_count = static_cast<int>(nodes_.size());
      const bool fgd = options_.policy == gpu::Policy::kFragmentation;
      const auto& classes = workload_.classes();
      double best = -std::numeric_limits<double>::infinity(), best_tie = best;
      std::vector<std::string> why;
      for (const auto& [name, n] : nodes_) {
        why.clear();
        if (!filter_node(*n, info, c, &why)) {
          for (auto& w : why) ++reasons[w];
          continue;
        }
        int64_t free_cpu =
            n->allocatable().cpu_milli - n->requested().cpu_milli - info.requests.cpu_milli;
        std::string reason;
        double frag_after = 0;
        auto a = gpu::choose(n->devices(), info.gpu, options_.policy, &reason, free_cpu,
                             fgd ? &classes : nullptr, &frag_after);
        if (!a) {
          ++reasons[reason];
          continue;
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
          chosen_alloc = std::move(*a);
        }
      }
      if (!chosen.empty()) {
        info.allocation = chosen_alloc;
        if (!nodes_[chosen]->add_pod(info).is_ok())
          chosen.clear();
        else
          assumed_.insert(uid);
      }
    }
    if (chosen.empty()) {
      unschedulable(obj, info.priority, unschedulable_message(node_count, reasons));
      return;
    }
    bind(obj, info, chosen);
  }

  void bind(ObjectPtr pod, PodInfo info, const std::string& node) {
    in_flight_++;
    pool_.submit([this, pod, info = std::move(info), node] {
      const std::string ns = info.ns;
      const std::string name = str(*pod, {"metadata", "name"});
      json binding = {{"apiVersion", "v1"},
                      {"kind", "Binding"},
                      {"metadata", {{"name", name}, {"namespace", ns}, {"uid", info.uid}}},
                      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
      if (!info.allocation.empty())
        binding["metadata"]["annotations"] = {
            {std::string(gpu::kAllocationAnnotation), info.allocation.format()}};
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
  void unschedulable(ObjectPtr pod, int32_t priority, const std::string& message) {
    unschedulable_attempts_++;
    const std::string key =
        str(*pod, {"metadata", "namespace"}) + "/" + str(*pod, {"metadata", "name"});
    queue_.unschedulable(key, priority);
    if (const json* conds = find(*pod, {"status", "conditions"});
        conds != nullptr && conds->is_array())
      for (const json& cond : *conds)
        if (cond.value("type", "") == "PodScheduled" && cond.value("status", "") == "False" &&
            cond.value("message", "") == message)
          return;
    events_.record(*pod, scheduler_name(*pod), "Warning", "FailedScheduling", message);
    in_flight_++;
    pool_.submit([this, pod, message, key] {
      json patch = {
          {"status",
           {{"conditions", json::array({{{"type", "PodScheduled"},
                                         {"status", "False"},
                                         {"reason", "Unschedulable"},
                                         {"message", message},
                                         {"lastProbeTime", nullptr},
                                         {"lastTransitionTime", format_time(options_.now())}}})}}}};
      auto r = client_.call("PATCH",
                            "/api/v1/namespaces/" + str(*pod, {"metadata", "namespace"}) +
                                "/pods/" + str(*pod, {"metadata", "name"}) + "/status",
                            patch, "application/strategic-merge-patch+json");
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

  LatencyHistogram latency_;
  std::atomic<int64_t> scheduled_{0}, unschedulable_attempts_{0}, errors_{0};
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
