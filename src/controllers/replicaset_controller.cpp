// The ReplicaSet and ReplicationController controllers (kube's
// pkg/controller/replicaset, which also runs ReplicationControllers): keep
// spec.replicas active pods controlled by the set, adopting matching orphans
// and releasing controlled pods that no longer match, and report the pods'
// state in the set's status.
//
// There are no "expectations" as in kube: after its writes a sync waits for
// the informers to hold them, so the next sync of the set sees them.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "claim.h"
#include "controller.h"
#include "util.h"

namespace vkube::controllers {

namespace {

using namespace std::chrono_literals;

// Creates (or deletes) at most this many pods per sync (kube's burstReplicas).
constexpr int64_t kBurstReplicas = 500;

struct SetKind {
  const char* api_version;
  const char* kind;
  ResourceKey resource;
  const char* component;
  // ReplicationControllers select with a plain label map.
  bool map_selector;
};

const SetKind kReplicaSetKind{
    "apps/v1", "ReplicaSet", {"apps", "replicasets"}, "replicaset-controller", false};
const SetKind kReplicationControllerKind{"v1",
                                         "ReplicationController",
                                         {"core", "replicationcontrollers"},
                                         "replication-controller",
                                         true};

// obj[key] when it is an object, else an empty object.
const json& section(const json& obj, const char* key) {
  static const json empty = json::object();
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty;
}

int64_t int_at(const json& obj, const char* section, const char* field, int64_t fallback) {
  auto s = obj.find(section);
  if (s == obj.end() || !s->is_object()) return fallback;
  auto f = s->find(field);
  return f != s->end() && f->is_number_integer() ? f->get<int64_t>() : fallback;
}

bool namespace_terminating(const ApiResult& r) {
  if (r.code != 403 || !r.body.is_object()) return false;
  const json details = r.body.value("details", json::object());
  for (const json& c : details.value("causes", json::array()))
    if (c.is_object() && c.value("reason", "") == "NamespaceTerminating") return true;
  return false;
}

// The order in which surplus pods go (kube's ActivePodsWithRanks): the first
// pods of a sorted list are deleted first.
struct Victim {
  ObjectPtr pod;
  bool assigned = false;
  int phase = 0;  // Pending 0, Unknown 1, Running 2
  bool ready = false;
  int64_t cost = 0;  // controller.kubernetes.io/pod-deletion-cost
  int colocated = 0;
  int64_t ready_bucket = -1;  // log2 of how long it has been ready
  int64_t restarts = 0;
  int64_t age_bucket = -1;  // log2 of its age
  std::string created;
};

int64_t log_bucket(std::optional<TimePoint> t, TimePoint now) {
  if (!t) return -1;
  auto d = std::chrono::duration_cast<std::chrono::nanoseconds>(now - *t).count();
  return d > 0 ? static_cast<int64_t>(std::log2(static_cast<double>(d))) : -1;
}

Victim rank_of(ObjectPtr pod, const std::unordered_map<std::string, int>& per_node, TimePoint now) {
  Victim v;
  v.pod = pod;
  const json& p = *pod;
  std::string node = section(p, "spec").value("nodeName", "");
  v.assigned = !node.empty();
  std::string phase = pod_phase(p);
  v.phase = phase == "Running" ? 2 : phase == "Unknown" ? 1 : 0;
  v.ready = pod_ready(p);
  const json& m = section(p, "metadata");
  if (auto a = m.find("annotations"); a != m.end() && a->is_object()) {
    std::string c = a->value("controller.kubernetes.io/pod-deletion-cost", "");
    if (!c.empty()) v.cost = std::strtoll(c.c_str(), nullptr, 10);
  }
  if (auto it = per_node.find(node); it != per_node.end()) v.colocated = it->second;
  const json& status = section(p, "status");
  if (v.ready) {
    for (const json& c : status.value("conditions", json::array()))
      if (c.value("type", "") == "Ready")
        v.ready_bucket = log_bucket(parse_rfc3339(c.value("lastTransitionTime", "")), now);
  }
  for (const json& cs : status.value("containerStatuses", json::array()))
    v.restarts = std::max(v.restarts, cs.value("restartCount", int64_t{0}));
  v.created = meta(p, "creationTimestamp");
  v.age_bucket = log_bucket(parse_rfc3339(v.created), now);
  return v;
}

bool delete_first(const Victim& a, const Victim& b) {
  if (a.assigned != b.assigned) return !a.assigned;
  if (a.phase != b.phase) return a.phase < b.phase;
  if (a.ready != b.ready) return !a.ready;
  if (a.cost != b.cost) return a.cost < b.cost;
  if (a.colocated != b.colocated) return a.colocated > b.colocated;
  if (a.ready && a.ready_bucket != b.ready_bucket) return a.ready_bucket < b.ready_bucket;
  if (a.restarts != b.restarts) return a.restarts > b.restarts;
  if (a.age_bucket != b.age_bucket) return a.age_bucket < b.age_bucket;
  return a.created > b.created;
}

class ReplicaSetController final : public Controller {
 public:
  ReplicaSetController(Context& ctx, const SetKind& kind)
      : Controller(ctx, kind.component),
        kind_(kind),
        sets_(ctx.informers.cache(kind.resource)),
        pods_(ctx.informers.cache({"core", "pods"})) {
    ctx.informers.on_event(kind.resource, [this](const ObjectEvent& e) { queue().add(e.key); });
    ctx.informers.on_event({"core", "pods"}, [this](const ObjectEvent& e) { on_pod(e); });
  }

 protected:
  Status reconcile(const std::string& key) override;

 private:
  std::optional<api::LabelSelector> selector(const json& set) const;
  void on_pod(const ObjectEvent& e);
  // Queues the set controlling `pod`; false when no set of this kind does.
  bool queue_owner(const json& pod);
  void queue_matching(const json& pod);
  Status claim_pods(const json& set, const api::LabelSelector& sel, std::vector<ObjectPtr>* out,
                    bool* wrote);
  Status manage_replicas(const json& set, const std::vector<ObjectPtr>& pods, bool* wrote);
  Status create_pods(const json& set, int64_t n);
  Status delete_pods(const json& set, const std::vector<ObjectPtr>& pods, int64_t n);
  Status update_status(const json& set, const Status& manage_error, int64_t pod_diff);
  json event_object(const json& set) const;
  std::string set_path(const json& set, std::string_view sub = {}) const {
    return api_path(kind_.api_version, kind_.resource.plural, meta(set, "namespace"),
                    meta(set, "name"), sub);
  }

  const SetKind& kind_;
  const Lister& sets_;
  const Lister& pods_;
};

std::optional<api::LabelSelector> ReplicaSetController::selector(const json& set) const {
  const json sel = section(set, "spec").value("selector", json());
  if (!kind_.map_selector) return selector_of(sel);
  if (!sel.is_object() || sel.empty()) return std::nullopt;
  return selector_of(json{{"matchLabels", sel}});
}

bool ReplicaSetController::queue_owner(const json& pod) {
  const json* ref = controller_ref(pod);
  if (ref == nullptr || ref->value("kind", "") != kind_.kind) return false;
  std::string ns = meta(pod, "namespace");
  std::string name = ref->value("name", "");
  ObjectPtr set = sets_.get(ns, name);
  if (set && meta(*set, "uid") == ref->value("uid", "")) queue().add(ns + "/" + name);
  return true;
}

void ReplicaSetController::queue_matching(const json& pod) {
  const json& labels = labels_of(pod);
  for (const ObjectPtr& set : sets_.list(meta(pod, "namespace"))) {
    auto sel = selector(*set);
    if (sel && sel->matches(labels)) queue().add(object_key(*set));
  }
}

void ReplicaSetController::on_pod(const ObjectEvent& e) {
  const json& pod = *e.object;
  switch (e.type) {
    case EventType::kAdded:
      if (controller_ref(pod) != nullptr)
        queue_owner(pod);
      else if (!is_terminating(pod))
        queue_matching(pod);
      break;
    case EventType::kModified: {
      const json& old = *e.old;
      const json* cur_ref = controller_ref(pod);
      const json* old_ref = controller_ref(old);
      std::string cur_uid = cur_ref ? cur_ref->value("uid", "") : "";
      std::string old_uid = old_ref ? old_ref->value("uid", "") : "";
      if (old_ref != nullptr && cur_uid != old_uid) queue_owner(old);
      if (cur_ref != nullptr)
        queue_owner(pod);
      else if (cur_uid != old_uid || labels_of(pod) != labels_of(old))
        queue_matching(pod);
      break;
    }
    case EventType::kDeleted:
      queue_owner(pod);
      break;
  }
}

json ReplicaSetController::event_object(const json& set) const {
  return {{"apiVersion", kind_.api_version},
          {"kind", kind_.kind},
          {"metadata",
           {{"name", meta(set, "name")},
            {"namespace", meta(set, "namespace")},
            {"uid", meta(set, "uid")},
            {"resourceVersion", meta(set, "resourceVersion")}}}};
}

Status ReplicaSetController::claim_pods(const json& set, const api::LabelSelector& sel,
                                        std::vector<ObjectPtr>* out, bool* wrote) {
  const std::string uid = meta(set, "uid");
  const bool deleting = is_terminating(set);
  Status first;
  for (ObjectPtr& p : pods_.controlled_by(uid)) {
    if (!pod_active(*p)) continue;
    if (sel.matches(labels_of(*p))) {
      out->push_back(std::move(p));
    } else if (!deleting) {
      *wrote = true;
      ApiResult r = release(
          ctx_.client, api_path("v1", "pods", meta(*p, "namespace"), meta(*p, "name")), *p, uid);
      if (!r.ok() && r.code != 422 && first.is_ok()) first = api_status(r, "release pod");
    }
  }
  if (deleting) return first;
  const json owner = event_object(set);
  for (const ObjectPtr& p : pods_.list(meta(set, "namespace"))) {
    if (controller_ref(*p) != nullptr || !pod_active(*p) || !sel.matches(labels_of(*p))) continue;
    *wrote = true;
    ApiResult r = adopt(ctx_.client,
                        api_path("v1", "pods", meta(*p, "namespace"), meta(*p, "name")), *p, owner);
    if (r.ok())
      out->push_back(std::make_shared<const json>(std::move(r.body)));
    else if (r.code != 404 && first.is_ok())
      first = api_status(r, "adopt pod");
  }
  return first;
}

Status ReplicaSetController::create_pods(const json& set, int64_t n) {
  const json owner = event_object(set);
  const json& tmpl = section(section(set, "spec"), "template");
  const json pod = pod_from_template(tmpl, owner, meta(set, "name") + "-");
  const std::string path = api_path("v1", "pods", meta(set, "namespace"));
  std::mutex mu;
  Status first;
  // Slow start (kube's slowStartBatch): 1, 2, 4, ... at once, so that a set
  // whose pods are all rejected fails after one request, not hundreds.
  for (int64_t done = 0, batch = 1; done < n; done += batch, batch *= 2) {
    batch = std::min(batch, n - done);
    std::atomic<bool> failed{false};
    ctx_.parallel(static_cast<size_t>(batch), [&](size_t) {
      ApiResult r = ctx_.client.call("POST", path, pod);
      if (r.ok()) {
        ctx_.events.record(owner, kind_.component, "Normal", "SuccessfulCreate",
                           "Created pod: " + meta(r.body, "name"));
        return;
      }
      // Nothing can be created in a terminating namespace: not a failure.
      if (namespace_terminating(r)) return;
      Status s = api_status(r, "create pod");
      ctx_.events.record(owner, kind_.component, "Warning", "FailedCreate",
                         "Error creating: " + s.message());
      failed = true;
      std::lock_guard lock(mu);
      if (first.is_ok()) first = s;
    });
    if (failed) break;
  }
  return first;
}

Status ReplicaSetController::delete_pods(const json& set, const std::vector<ObjectPtr>& pods,
                                         int64_t n) {
  const TimePoint now = ctx_.now();
  std::unordered_map<std::string, int> per_node;
  for (const ObjectPtr& p : pods) ++per_node[section(*p, "spec").value("nodeName", "")];
  std::vector<Victim> ranked;
  ranked.reserve(pods.size());
  for (const ObjectPtr& p : pods) ranked.push_back(rank_of(p, per_node, now));
  std::partial_sort(ranked.begin(), ranked.begin() + n, ranked.end(), delete_first);
  const json owner = event_object(set);
  std::mutex mu;
  Status first;
  ctx_.parallel(static_cast<size_t>(n), [&](size_t i) {
    const json& p = *ranked[i].pod;
    std::string name = meta(p, "name");
    ApiResult r = ctx_.client.call("DELETE", api_path("v1", "pods", meta(p, "namespace"), name));
    if (r.ok()) {
      ctx_.events.record(owner, kind_.component, "Normal", "SuccessfulDelete",
                         "Deleted pod: " + name);
      return;
    }
    if (r.code == 404) return;
    Status s = api_status(r, "delete pod");
    ctx_.events.record(owner, kind_.component, "Warning", "FailedDelete",
                       "Error deleting: " + s.message());
    std::lock_guard lock(mu);
    if (first.is_ok()) first = s;
  });
  return first;
}

Status ReplicaSetController::manage_replicas(const json& set, const std::vector<ObjectPtr>& pods,
                                             bool* wrote) {
  const int64_t want = int_at(set, "spec", "replicas", 1);
  const int64_t diff = static_cast<int64_t>(pods.size()) - want;
  if (diff < 0) {
    *wrote = true;
    return create_pods(set, std::min(-diff, kBurstReplicas));
  }
  if (diff > 0) {
    *wrote = true;
    return delete_pods(set, pods, std::min(diff, kBurstReplicas));
  }
  return Status::ok();
}

Status ReplicaSetController::update_status(const json& set, const Status& manage_error,
                                           int64_t pod_diff) {
  auto sel = selector(set);
  const TimePoint now = ctx_.now();
  const int64_t min_ready = int_at(set, "spec", "minReadySeconds", 0);
  const json& tmpl_labels = labels_of(section(section(set, "spec"), "template"));
  auto fully_labeled = [&](const json& labels) {
    for (auto it = tmpl_labels.begin(); it != tmpl_labels.end(); ++it) {
      auto l = labels.find(it.key());
      if (l == labels.end() || *l != it.value()) return false;
    }
    return true;
  };
  int64_t replicas = 0, fully = 0, ready = 0, available = 0;
  std::optional<TimePoint> next_available;
  for (const ObjectPtr& p : pods_.controlled_by(meta(set, "uid"))) {
    const json& labels = labels_of(*p);
    if (!pod_active(*p) || !sel || !sel->matches(labels)) continue;
    ++replicas;
    if (fully_labeled(labels)) ++fully;
    if (!pod_ready(*p)) continue;
    ++ready;
    if (pod_available(*p, min_ready, now)) {
      ++available;
      continue;
    }
    // Ready but not yet for minReadySeconds: look again when it will be.
    for (const json& c : section(*p, "status").value("conditions", json::array())) {
      if (c.value("type", "") != "Ready") continue;
      if (auto since = parse_rfc3339(c.value("lastTransitionTime", ""))) {
        TimePoint at = *since + std::chrono::seconds(min_ready);
        if (!next_available || at < *next_available) next_available = at;
      }
    }
  }
  if (next_available && manage_error.is_ok()) {
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(*next_available - now);
    queue().add_after(object_key(set), std::max(wait, std::chrono::milliseconds(0)) + 20ms);
  }

  json status = set.value("status", json::object());
  status["replicas"] = replicas;
  auto set_count = [&](const char* field, int64_t v) {
    if (v != 0)
      status[field] = v;
    else
      status.erase(field);
  };
  set_count("fullyLabeledReplicas", fully);
  set_count("readyReplicas", ready);
  set_count("availableReplicas", available);
  set_count("observedGeneration", int_at(set, "metadata", "generation", 0));
  json conditions = status.value("conditions", json::array());
  auto failure = std::find_if(conditions.begin(), conditions.end(), [](const json& c) {
    return c.value("type", "") == "ReplicaFailure";
  });
  if (!manage_error.is_ok() && failure == conditions.end()) {
    json c = {{"type", "ReplicaFailure"},
              {"status", "True"},
              {"lastTransitionTime", rfc3339(now)},
              {"message", manage_error.message()}};
    if (pod_diff < 0)
      c["reason"] = "FailedCreate";
    else if (pod_diff > 0)
      c["reason"] = "FailedDelete";
    conditions.push_back(std::move(c));
  } else if (manage_error.is_ok() && failure != conditions.end()) {
    conditions.erase(failure);
  }
  if (conditions.empty())
    status.erase("conditions");
  else
    status["conditions"] = std::move(conditions);

  ApiResult r = controllers::update_status(ctx_.client, set_path(set), set, status);
  return r.ok() || r.code == 404 ? Status::ok() : api_status(r, "update status");
}

Status ReplicaSetController::reconcile(const std::string& key) {
  ObjectPtr cur = sets_.get(key);
  if (!cur) return Status::ok();
  const json& set = *cur;
  auto sel = selector(set);
  // An invalid selector selects nothing (validation keeps them out).
  if (!sel) return Status::ok();
  std::vector<ObjectPtr> pods;
  bool wrote = false;
  Status claimed = claim_pods(set, *sel, &pods, &wrote);
  Status managed;
  int64_t diff = static_cast<int64_t>(pods.size()) - int_at(set, "spec", "replicas", 1);
  if (claimed.is_ok() && !is_terminating(set)) managed = manage_replicas(set, pods, &wrote);
  // The status counts what the caches hold once they include these writes.
  if (wrote) ctx_.informers.sync();
  Status st = claimed;
  if (st.is_ok()) st = update_status(set, managed, diff);
  if (st.is_ok()) st = managed;
  // A conflict means the set (or a pod) changed since the caches showed it:
  // that change's event queues the set again, with no backoff needed.
  if (st.code() == Code::kConflict) {
    queue().add_after(key, 50ms);
    return Status::ok();
  }
  return st;
}

}  // namespace

std::unique_ptr<Controller> make_replicaset_controller(Context& ctx) {
  return std::make_unique<ReplicaSetController>(ctx, kReplicaSetKind);
}

std::unique_ptr<Controller> make_replication_controller(Context& ctx) {
  return std::make_unique<ReplicaSetController>(ctx, kReplicationControllerKind);
}

}  // namespace vkube::controllers
