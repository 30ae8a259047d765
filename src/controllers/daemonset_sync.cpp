#include "daemonset_sync.h"

#include <algorithm>
#include <set>

#include "daemonset_nodes.h"
#include "workload_common.h"

namespace vkube::controllers::daemonset {

using workload::api_status;
using workload::int_at;
using workload::str_at;
using namespace std::chrono_literals;

bool FailedPodBackoff::in_backoff(const std::string& key, TimePoint now,
                                  std::chrono::milliseconds* wait) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second.updated);
  if (elapsed >= it->second.delay) return false;
  *wait = it->second.delay - elapsed;
  return true;
}

void FailedPodBackoff::next(const std::string& key, TimePoint now) {
  constexpr std::chrono::milliseconds kInitial = 1s, kMax = 15min;
  std::lock_guard lock(mu_);
  auto [it, added] = entries_.try_emplace(key);
  Entry& e = it->second;
  // An entry untouched for twice the maximum starts over, as in client-go.
  if (added || now - e.updated > 2 * kMax)
    e.delay = kInitial;
  else
    e.delay = std::min(e.delay * 2, kMax);
  e.updated = now;
}

DaemonSync::DaemonSync(Context& ctx, const Lister& pods, const Lister& nodes,
                       FailedPodBackoff& backoff, json ds, std::vector<ObjectPtr> pods_claimed,
                       std::vector<ObjectPtr> revisions)
    : ctx_(ctx),
      pod_cache_(pods),
      nodes_(nodes),
      backoff_(backoff),
      ds_(std::move(ds)),
      pods_(std::move(pods_claimed)),
      revisions_(std::move(revisions)),
      node_list_(nodes.list()),
      now_(ctx.now()),
      min_ready_(int_at(ds_, {"spec", "minReadySeconds"})) {}

Status DaemonSync::run() {
  VKUBE_RETURN_IF_ERROR(construct_history());
  Status s = manage();
  if (wrote_) refresh_pods();
  if (s.is_ok() && str_at(ds_, {"spec", "updateStrategy", "type"}) == "RollingUpdate") {
    s = rolling_update();
    if (wrote_) refresh_pods();
  }
  Status h = cleanup_history();
  Status st = write_status();
  if (!s.is_ok()) return s;
  return h.is_ok() ? st : h;
}

void DaemonSync::requeue(std::chrono::milliseconds delay) {
  if (requeue_after_ == 0ms || delay < requeue_after_) requeue_after_ = delay;
}

void DaemonSync::refresh_pods() {
  ctx_.informers.sync();
  const std::string uid = meta(ds_, "uid");
  std::vector<ObjectPtr> fresh;
  for (const ObjectPtr& p : pod_cache_.list(meta(ds_, "namespace")))
    if (is_controlled_by(*p, uid)) fresh.push_back(p);
  pods_ = std::move(fresh);
}

DaemonSync::NodePods DaemonSync::pods_by_node(bool with_deleted_terminal) const {
  NodePods out;
  for (const ObjectPtr& p : pods_) {
    const std::string phase = pod_phase(*p);
    bool terminal = phase == "Succeeded" || phase == "Failed";
    if (!with_deleted_terminal && terminal && is_terminating(*p)) continue;
    std::string node = target_node(*p);
    if (!node.empty()) out[node].push_back(p.get());
  }
  return out;
}

bool DaemonSync::pod_updated(const json& pod) const {
  const json& labels = labels_of(pod);
  if (!hash_.empty() && labels.value(std::string(kHashLabel), "") == hash_) return true;
  const json* annotations =
      ds_["metadata"].contains("annotations") ? &ds_["metadata"]["annotations"] : nullptr;
  if (annotations == nullptr || !annotations->contains(std::string(kGenerationAnnotation)))
    return false;
  return labels.value(std::string(kGenerationLabel), "") ==
         annotations->value(std::string(kGenerationAnnotation), "");
}

bool DaemonSync::available(const json& pod) const {
  return pod_available(pod, min_ready_, now_);
}

// --- history ------------------------------------------------------------------

Status DaemonSync::construct_history() {
  const json data = workload::revision_data(ds_["spec"].value("template", json::object()));
  std::vector<const json*> current;
  int64_t max_old = 0;
  for (const ObjectPtr& r : revisions_) {
    if (r->value("data", json()) == data) {
      current.push_back(r.get());
    } else {
      old_revisions_.push_back(r.get());
      max_old = std::max(max_old, workload::revision_number(*r));
    }
  }
  const int64_t next = max_old + 1;
  auto cur = current.empty() ? snapshot(next) : dedup(current);
  if (!cur.is_ok()) return cur.status();
  json revision = std::move(cur).value();
  if (workload::revision_number(revision) < next) {
    auto r = workload::renumber_revision(ctx_.client, revision, next);
    if (!r.is_ok()) return r.status();
    wrote_ = true;
    revision = std::move(r).value();
  }
  hash_ = labels_of(revision).value(std::string(kHashLabel), "");
  if (hash_.empty()) hash_ = meta(revision, "name");
  return Status::ok();
}

Result<json> DaemonSync::snapshot(int64_t number) {
  const json tmpl = ds_["spec"].value("template", json::object());
  std::optional<int64_t> collisions;
  if (ds_.contains("status") && ds_["status"].contains("collisionCount"))
    collisions = int_at(ds_, {"status", "collisionCount"});
  const std::string hash = template_hash(tmpl, collisions);
  json labels = labels_of(tmpl);
  labels[std::string(kHashLabel)] = hash;
  json m = {{"name", meta(ds_, "name") + "-" + hash},
            {"namespace", meta(ds_, "namespace")},
            {"labels", labels},
            {"ownerReferences", json::array({controller_owner_ref(ds_)})}};
  if (ds_["metadata"].contains("annotations")) m["annotations"] = ds_["metadata"]["annotations"];
  json revision = {{"apiVersion", "apps/v1"},
                   {"kind", "ControllerRevision"},
                   {"metadata", m},
                   {"data", workload::revision_data(tmpl)},
                   {"revision", number}};
  auto created = workload::create_revision(ctx_.client, revision);
  if (created.is_ok()) {
    wrote_ = true;
    return created;
  }
  if (created.status().code() != Code::kAlreadyExists) return created.status();
  // Another template holds the name: the next hash takes the collision count.
  json status = ds_.value("status", json::object());
  status["collisionCount"] = collisions.value_or(0) + 1;
  ApiResult r = update_status(
      ctx_.client, api_path("apps/v1", "daemonsets", meta(ds_, "namespace"), meta(ds_, "name")),
      ds_, status);
  VKUBE_RETURN_IF_ERROR(api_status(r));
  wrote_ = true;
  return Status::conflict("found a hash collision for DaemonSet " + meta(ds_, "name") +
                          ": bumped collisionCount");
}

Result<json> DaemonSync::dedup(const std::vector<const json*>& current) {
  const json* keep = current.front();
  for (const json* r : current)
    if (workload::revision_number(*r) >= workload::revision_number(*keep)) keep = r;
  const std::string keep_hash = labels_of(*keep).value(std::string(kHashLabel), "");
  for (const json* dup : current) {
    if (dup == keep) continue;
    // Pods of the duplicate move to the kept revision before it goes.
    const std::string dup_hash = labels_of(*dup).value(std::string(kHashLabel), "");
    for (const ObjectPtr& p : pods_) {
      if (labels_of(*p).value(std::string(kHashLabel), "") != dup_hash) continue;
      json patch = {{"metadata", {{"labels", {{std::string(kHashLabel), keep_hash}}}}}};
      ApiResult r =
          ctx_.client.call("PATCH", api_path("v1", "pods", meta(*p, "namespace"), meta(*p, "name")),
                           patch, "application/merge-patch+json");
      if (r.code != 404) VKUBE_RETURN_IF_ERROR(api_status(r));
    }
    VKUBE_RETURN_IF_ERROR(workload::delete_revision(ctx_.client, *dup));
    wrote_ = true;
  }
  return *keep;
}

Status DaemonSync::cleanup_history() {
  const int64_t keep = int_at(ds_, {"spec", "revisionHistoryLimit"}, 10);
  int64_t kill = static_cast<int64_t>(old_revisions_.size()) - keep;
  if (kill <= 0) return Status::ok();
  std::set<std::string> live;
  for (const auto& [node, pods] : pods_by_node(true))
    for (const json* p : pods) live.insert(labels_of(*p).value(std::string(kHashLabel), ""));
  for (const json* r : old_revisions_) {  // oldest first
    if (kill <= 0) break;
    if (live.count(labels_of(*r).value(std::string(kHashLabel), ""))) continue;
    VKUBE_RETURN_IF_ERROR(workload::delete_revision(ctx_.client, *r));
    wrote_ = true;
    --kill;
  }
  return Status::ok();
}

// --- status -------------------------------------------------------------------

bool older_first(const json* a, const json* b) {
  bool bound_a = !str_at(*a, {"spec", "nodeName"}).empty();
  bool bound_b = !str_at(*b, {"spec", "nodeName"}).empty();
  if (bound_a != bound_b) return bound_a;
  std::string ca = meta(*a, "creationTimestamp"), cb = meta(*b, "creationTimestamp");
  if (ca != cb) return ca < cb;
  return meta(*a, "name") < meta(*b, "name");
}

Status DaemonSync::write_status() {
  NodePods by_node = pods_by_node(false);
  int64_t desired = 0, current = 0, misscheduled = 0, ready = 0, updated = 0, avail = 0;
  for (const ObjectPtr& node : node_list_) {
    const bool should_run = placement(*node, ds_).should_run;
    auto it = by_node.find(meta(*node, "name"));
    const bool scheduled = it != by_node.end() && !it->second.empty();
    if (!should_run) {
      misscheduled += scheduled ? 1 : 0;
      continue;
    }
    ++desired;
    if (!scheduled) continue;
    ++current;
    std::vector<const json*> pods = it->second;
    std::sort(pods.begin(), pods.end(), older_first);
    const json& pod = *pods.front();
    if (pod_ready(pod)) {
      ++ready;
      if (available(pod)) ++avail;
    }
    if (pod_updated(pod)) ++updated;
  }
  if (min_ready_ > 0 && ready != avail) requeue(std::chrono::seconds(min_ready_));

  const json old = ds_.value("status", json::object());
  json status = old;
  struct Field {
    const char* name;
    int64_t value;
    bool omitempty;  // left out of kube's JSON when zero
  };
  const Field fields[] = {
      {"desiredNumberScheduled", desired, false},  {"currentNumberScheduled", current, false},
      {"numberMisscheduled", misscheduled, false}, {"numberReady", ready, false},
      {"updatedNumberScheduled", updated, true},   {"numberAvailable", avail, true},
      {"numberUnavailable", desired - avail, true}};
  bool changed = int_at(old, {"observedGeneration"}) < int_at(ds_, {"metadata", "generation"});
  for (const Field& f : fields) {
    changed |= int_at(old, {f.name}) != f.value || (!f.omitempty && !old.contains(f.name));
    status[f.name] = f.value;
  }
  if (!changed) return Status::ok();
  status["observedGeneration"] = int_at(ds_, {"metadata", "generation"});
  // omitempty fields, as kube writes them.
  for (const char* f :
       {"updatedNumberScheduled", "numberAvailable", "numberUnavailable", "observedGeneration"})
    if (int_at(status, {f}) == 0) status.erase(f);
  ApiResult r = update_status(
      ctx_.client, api_path("apps/v1", "daemonsets", meta(ds_, "namespace"), meta(ds_, "name")),
      ds_, status);
  if (r.ok()) wrote_ = true;
  return api_status(r);
}

}  // namespace vkube::controllers::daemonset
