#include "statefulset_sync.h"

#include <algorithm>
#include <cctype>

#include "workload_common.h"

namespace vkube::controllers::statefulset {

using workload::api_status;
using workload::int_at;
using workload::str_at;

SetSync::SetSync(Context& ctx, const Lister& claims, json set, std::vector<ObjectPtr> pods,
                 std::vector<ObjectPtr> revisions)
    : ctx_(ctx),
      claims_(claims),
      set_(std::move(set)),
      pods_(std::move(pods)),
      revisions_(std::move(revisions)),
      now_(ctx.now()),
      min_ready_(int_at(set_, {"spec", "minReadySeconds"})),
      collision_count_(int_at(set_, {"status", "collisionCount"})) {}

Status SetSync::run() {
  Status s = find_revisions();
  if (s.is_ok()) {
    s = update_pods();
    Status st = write_status();
    if (s.is_ok()) s = st;
  }
  Status h = truncate_history();
  return s.is_ok() ? h : s;
}

// --- revisions ---------------------------------------------------------------

json SetSync::new_revision(int64_t number, int64_t collision_count) const {
  json data = workload::revision_data(set_["spec"].value("template", json::object()));
  std::string hash = workload::revision_hash(data, collision_count);
  std::string prefix = meta(set_, "name").substr(0, 223);
  json labels = labels_of(set_["spec"].value("template", json::object()));
  labels[std::string(workload::kRevisionHashLabel)] = hash;
  json m = {{"name", prefix + "-" + hash},
            {"namespace", meta(set_, "namespace")},
            {"labels", labels},
            {"ownerReferences", json::array({controller_owner_ref(set_)})}};
  if (set_["metadata"].contains("annotations")) m["annotations"] = set_["metadata"]["annotations"];
  return {{"apiVersion", "apps/v1"},
          {"kind", "ControllerRevision"},
          {"metadata", std::move(m)},
          {"data", std::move(data)},
          {"revision", number}};
}

Status SetSync::find_revisions() {
  const int64_t next = revisions_.empty() ? 1 : workload::revision_number(*revisions_.back()) + 1;
  json candidate = new_revision(next, collision_count_);
  const json* equal = nullptr;
  for (const ObjectPtr& r : revisions_)
    if (workload::equal_revisions(*r, candidate)) equal = r.get();
  if (equal != nullptr && equal == revisions_.back().get()) {
    update_revision_ = *equal;  // the template did not change
  } else if (equal != nullptr) {
    // Back to an earlier template: that revision becomes the newest.
    auto r = workload::renumber_revision(ctx_.client, *equal, next);
    if (!r.is_ok()) return r.status();
    wrote_ = true;
    update_revision_ = std::move(r).value();
  } else {
    while (true) {
      auto r = workload::create_revision(ctx_.client, candidate);
      if (r.is_ok()) {
        update_revision_ = std::move(r).value();
        wrote_ = true;
        break;
      }
      if (r.status().code() != Code::kAlreadyExists) return r.status();
      candidate = new_revision(next, ++collision_count_);
    }
  }
  const std::string current_name = str_at(set_, {"status", "currentRevision"});
  current_revision_ = update_revision_;
  for (const ObjectPtr& r : revisions_)
    if (meta(*r, "name") == current_name) current_revision_ = *r;
  current_template_ = workload::revision_template(current_revision_);
  update_template_ = workload::revision_template(update_revision_);
  return Status::ok();
}

Status SetSync::truncate_history() {
  std::vector<std::string> live;
  if (current_revision_.is_object()) live.push_back(meta(current_revision_, "name"));
  if (update_revision_.is_object()) live.push_back(meta(update_revision_, "name"));
  for (const ObjectPtr& p : pods_) live.push_back(pod_revision(*p));
  std::vector<const json*> history;
  for (const ObjectPtr& r : revisions_)
    if (std::find(live.begin(), live.end(), meta(*r, "name")) == live.end())
      history.push_back(r.get());
  const int64_t limit = int_at(set_, {"spec", "revisionHistoryLimit"}, 10);
  if (limit < 0 || static_cast<int64_t>(history.size()) <= limit) return Status::ok();
  const size_t excess = history.size() - static_cast<size_t>(limit);
  for (size_t i = 0; i < excess; ++i) {
    VKUBE_RETURN_IF_ERROR(workload::delete_revision(ctx_.client, *history[i]));
    wrote_ = true;
  }
  return Status::ok();
}

// --- status ------------------------------------------------------------------

void SetSync::count_status() {
  std::vector<const json*> all;
  for (const json& p : replicas_) all.push_back(&p);
  for (const json& p : condemned_) all.push_back(&p);
  Counts c = count_pods(all, min_ready_, now_, meta(current_revision_, "name"),
                        meta(update_revision_, "name"));
  status_["replicas"] = c.replicas;
  status_["readyReplicas"] = c.ready;
  status_["availableReplicas"] = c.available;
  status_["currentReplicas"] = c.current + current_replicas_delta_;
  status_["updatedReplicas"] = c.updated;
}

Status SetSync::write_status() {
  json& s = status_;
  // kube's completeRollingUpdate.
  if (str_at(set_, {"spec", "updateStrategy", "type"}) == "RollingUpdate" &&
      s["updatedReplicas"] == s["replicas"] && s["readyReplicas"] == s["replicas"]) {
    s["currentReplicas"] = s["updatedReplicas"];
    s["currentRevision"] = s["updateRevision"];
  }
  const json old = set_.value("status", json::object());
  bool changed = int_at(old, {"observedGeneration"}) < int_at(s, {"observedGeneration"});
  for (const char* f : {"replicas", "readyReplicas", "availableReplicas", "currentReplicas",
                        "updatedReplicas", "collisionCount"})
    changed |= int_at(old, {f}) != int_at(s, {f});
  for (const char* f : {"replicas", "availableReplicas", "collisionCount"})  // never omitted
    changed |= !old.contains(f);
  for (const char* f : {"currentRevision", "updateRevision"})
    changed |= str_at(old, {f}) != str_at(s, {f});
  if (!changed) return Status::ok();
  // The API's omitempty fields are left out when zero, as kube writes them.
  json next = json::object();
  for (auto& [k, v] : s.items())
    if (!(v.is_number_integer() && v.get<int64_t>() == 0 && k != "replicas" &&
          k != "availableReplicas" && k != "collisionCount"))
      next[k] = v;
  if (old.contains("conditions")) next["conditions"] = old["conditions"];
  ApiResult r = update_status(
      ctx_.client, api_path("apps/v1", "statefulsets", meta(set_, "namespace"), meta(set_, "name")),
      set_, next);
  if (r.ok()) wrote_ = true;
  return api_status(r);
}

// --- writes --------------------------------------------------------------------

namespace {
std::string title(const std::string& verb) {
  std::string t = verb;
  if (!t.empty()) t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
  return t;
}
}  // namespace

Status SetSync::create_claims(const json& pod) {
  Status first;
  const int ordinal = ordinal_of(pod);
  for (json claim : claims_for(set_, ordinal)) {
    const std::string name = meta(claim, "name");
    ObjectPtr existing = claims_.get(meta(claim, "namespace"), name);
    if (existing) {
      if (is_terminating(*existing) && first.is_ok())
        first = Status::conflict("pvc " + name + " is being deleted");
      continue;
    }
    json refs = claim_owner_refs(set_, claim, pod);
    if (!refs.empty()) claim["metadata"]["ownerReferences"] = refs;
    ApiResult r = ctx_.client.call(
        "POST", api_path("v1", "persistentvolumeclaims", meta(claim, "namespace")), claim);
    Status s = api_status(r);
    if (s.is_ok()) {
      wrote_ = true;
      ctx_.events.record(set_, std::string(kComponent), "Normal", "SuccessfulCreate",
                         "create Claim " + name + " Pod " + meta(pod, "name") + " in StatefulSet " +
                             meta(set_, "name") + " success");
      continue;
    }
    if (first.is_ok())
      first = Status(s.code(), "failed to create PVC " + name + ": " + s.message());
    if (s.code() != Code::kAlreadyExists)
      ctx_.events.record(set_, std::string(kComponent), "Warning", "FailedCreate",
                         "create Claim " + name + " for Pod " + meta(pod, "name") +
                             " in StatefulSet " + meta(set_, "name") +
                             " failed error: " + first.message());
  }
  return first;
}

namespace {
void record_pod_event(Context& ctx, const json& set, const json& pod, const std::string& verb,
                      const Status& s) {
  const std::string what =
      verb + " Pod " + meta(pod, "name") + " in StatefulSet " + meta(set, "name");
  if (s.is_ok())
    ctx.events.record(set, std::string(kComponent), "Normal", "Successful" + title(verb),
                      what + " successful");
  else
    ctx.events.record(set, std::string(kComponent), "Warning", "Failed" + title(verb),
                      what + " failed error: " + s.message());
}
}  // namespace

Status SetSync::create_pod(const json& pod) {
  Status s = create_claims(pod);
  if (!s.is_ok()) {
    record_pod_event(ctx_, set_, pod, "create", s);
    return s;
  }
  ApiResult r = ctx_.client.call("POST", api_path("v1", "pods", meta(pod, "namespace")), pod);
  s = api_status(r);
  if (s.code() == Code::kAlreadyExists) return s;
  if (s.is_ok()) wrote_ = true;
  record_pod_event(ctx_, set_, pod, "create", s);
  return s;
}

Status SetSync::update_pod(const json& pod) {
  // Only the identity labels can change on a live pod.
  const int ordinal = ordinal_of(pod);
  json patch = {{"metadata",
                 {{"labels",
                   {{std::string(kPodNameLabel), meta(pod, "name")},
                    {std::string(kPodIndexLabel), std::to_string(ordinal)}}},
                  {"resourceVersion", meta(pod, "resourceVersion")}}}};
  Status s;
  if (!storage_matches(set_, pod)) s = create_claims(pod);
  if (s.is_ok()) {
    ApiResult r =
        ctx_.client.call("PATCH", api_path("v1", "pods", meta(pod, "namespace"), meta(pod, "name")),
                         patch, "application/merge-patch+json");
    s = api_status(r);
    if (s.is_ok()) wrote_ = true;
  }
  record_pod_event(ctx_, set_, pod, "update", s);
  return s;
}

Status SetSync::delete_pod(const json& pod) {
  ApiResult r =
      ctx_.client.call("DELETE", api_path("v1", "pods", meta(pod, "namespace"), meta(pod, "name")));
  Status s = api_status(r);
  if (s.is_ok()) wrote_ = true;
  record_pod_event(ctx_, set_, pod, "delete", s);
  return s;
}

bool SetSync::claims_match_policy(const json& pod) const {
  for (const json& claim : claims_for(set_, ordinal_of(pod))) {
    ObjectPtr existing = claims_.get(meta(claim, "namespace"), meta(claim, "name"));
    if (!existing) continue;
    const json refs = existing->at("metadata").value("ownerReferences", json::array());
    if (claim_owner_refs(set_, *existing, pod) != refs) return false;
  }
  return true;
}

Status SetSync::update_claims_for_policy(const json& pod) {
  for (const json& claim : claims_for(set_, ordinal_of(pod))) {
    ObjectPtr existing = claims_.get(meta(claim, "namespace"), meta(claim, "name"));
    if (!existing) continue;
    const json refs = claim_owner_refs(set_, *existing, pod);
    if (refs == existing->at("metadata").value("ownerReferences", json::array())) continue;
    json patch = {{"metadata",
                   {{"ownerReferences", refs.empty() ? json(nullptr) : refs},
                    {"resourceVersion", meta(*existing, "resourceVersion")}}}};
    ApiResult r = ctx_.client.call("PATCH",
                                   api_path("v1", "persistentvolumeclaims",
                                            meta(*existing, "namespace"), meta(*existing, "name")),
                                   patch, "application/merge-patch+json");
    if (r.code == 404) continue;
    VKUBE_RETURN_IF_ERROR(api_status(r));
    wrote_ = true;
  }
  return Status::ok();
}

}  // namespace vkube::controllers::statefulset
