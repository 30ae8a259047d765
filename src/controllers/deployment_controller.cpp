#include "deployment_controller.h"

#include <algorithm>

#include "claim.h"
#include "deployment_util.h"

namespace vkube::controllers {

using namespace deploy;
using namespace std::chrono_literals;

namespace {

constexpr const char* kComponent = "deployment-controller";

const json* owner_ref_of_kind(const json& obj, std::string_view kind) {
  const json* ref = controller_ref(obj);
  return ref != nullptr && ref->value("kind", "") == kind ? ref : nullptr;
}

std::string ref_uid(const json* ref) {
  return ref ? ref->value("uid", "") : std::string();
}

}  // namespace

DeploymentController::DeploymentController(Context& ctx)
    : Controller(ctx, kComponent),
      deployments_(ctx.informers.cache({"apps", "deployments"})),
      replicasets_(ctx.informers.cache({"apps", "replicasets"})),
      pods_(ctx.informers.cache({"core", "pods"})) {
  ctx.informers.on_event({"apps", "deployments"},
                         [this](const ObjectEvent& e) { queue().add(e.key); });
  ctx.informers.on_event({"apps", "replicasets"},
                         [this](const ObjectEvent& e) { on_replicaset(e); });
  ctx.informers.on_event({"core", "pods"}, [this](const ObjectEvent& e) { on_pod(e); });
}

// ---- handlers

void DeploymentController::queue_owner(const json& rs) {
  const json* ref = owner_ref_of_kind(rs, "Deployment");
  if (ref == nullptr) return;
  std::string ns = meta(rs, "namespace");
  std::string name = ref->value("name", "");
  ObjectPtr d = deployments_.get(ns, name);
  if (d && meta(*d, "uid") == ref->value("uid", "")) queue().add(ns + "/" + name);
}

void DeploymentController::queue_matching(const json& rs) {
  const json& labels = labels_of(rs);
  for (const ObjectPtr& d : deployments_.list(meta(rs, "namespace"))) {
    auto sel = selector_of(section(*d, "spec").value("selector", json()));
    if (sel && !sel->empty() && sel->matches(labels)) queue().add(object_key(*d));
  }
}

void DeploymentController::on_replicaset(const ObjectEvent& e) {
  const json& rs = *e.object;
  switch (e.type) {
    case EventType::kAdded:
      if (controller_ref(rs) != nullptr)
        queue_owner(rs);
      else if (!is_terminating(rs))
        queue_matching(rs);
      break;
    case EventType::kModified: {
      const json& old = *e.old;
      const json* cur_ref = controller_ref(rs);
      bool ref_changed = ref_uid(cur_ref) != ref_uid(controller_ref(old));
      if (ref_changed) queue_owner(old);
      if (cur_ref != nullptr)
        queue_owner(rs);
      else if (ref_changed || labels_of(rs) != labels_of(old))
        queue_matching(rs);
      break;
    }
    case EventType::kDeleted:
      queue_owner(rs);
      break;
  }
}

// A Recreate rollout waits for the old pods to be gone.
void DeploymentController::on_pod(const ObjectEvent& e) {
  if (e.type != EventType::kDeleted) return;
  const json* ref = owner_ref_of_kind(*e.object, "ReplicaSet");
  if (ref == nullptr) return;
  ObjectPtr rs = replicasets_.get(meta(*e.object, "namespace"), ref->value("name", ""));
  if (!rs || meta(*rs, "uid") != ref->value("uid", "")) return;
  const json* dref = owner_ref_of_kind(*rs, "Deployment");
  if (dref == nullptr) return;
  ObjectPtr d = deployments_.get(meta(*rs, "namespace"), dref->value("name", ""));
  if (d && !is_rolling(*d)) queue().add(object_key(*d));
}

// ---- helpers

json DeploymentController::event_object(const json& d) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata",
           {{"name", meta(d, "name")},
            {"namespace", meta(d, "namespace")},
            {"uid", meta(d, "uid")},
            {"resourceVersion", meta(d, "resourceVersion")}}}};
}

std::string DeploymentController::rs_path(const json& rs, std::string_view sub) {
  return api_path("apps/v1", "replicasets", meta(rs, "namespace"), meta(rs, "name"), sub);
}

std::string DeploymentController::deployment_path(const Sync& s, std::string_view sub) const {
  return api_path("apps/v1", "deployments", meta(s.d, "namespace"), meta(s.d, "name"), sub);
}

ApiResult DeploymentController::write(Sync& s, std::string_view method, const std::string& path,
                                      const json& body, std::string_view content_type) {
  s.wrote = true;
  return ctx_.client.call(method, path, body, content_type);
}

// One status write also carries a revision annotation set_deployment_revision
// left pending: kube's deployment status strategy keeps metadata changes.
Status DeploymentController::write_status(Sync& s, const json& status) {
  // (A missing status reads as the empty one, as Go's struct has it.)
  if (!s.revision_pending && section(s.d, "status") == status) return Status::ok();
  s.wrote = true;
  json next = s.d;
  next["status"] = status;
  ApiResult r = ctx_.client.call("PUT", deployment_path(s, "status"), next);
  if (!r.ok()) return api_status(r, "update deployment status");
  s.d = std::move(r.body);
  s.revision_pending = false;
  return Status::ok();
}

// As kube's SetDeploymentRevision: the annotation changes on the copy, and
// the next write_status sends it (the caller makes one).
void DeploymentController::set_deployment_revision(Sync& s, const std::string& revision) {
  if (annotation(s.d, kRevisionAnnotation) == revision) return;
  s.d["metadata"]["annotations"][kRevisionAnnotation] = revision;
  s.revision_pending = true;
}

// ---- sync

Status DeploymentController::reconcile(const std::string& key) {
  ObjectPtr cur = deployments_.get(key);
  if (!cur) return Status::ok();
  Sync s;
  s.key = key;
  s.d = *cur;
  s.d["apiVersion"] = "apps/v1";
  s.d["kind"] = "Deployment";
  Status st = sync_deployment(s);
  // The next sync must see this one's writes (a created ReplicaSet above all).
  if (s.wrote) ctx_.informers.sync();
  // A conflict means the deployment or a ReplicaSet changed since the caches
  // showed it: that change's event queues the deployment again, no backoff.
  if (st.code() == Code::kConflict) {
    queue().add_after(key, 50ms);
    return Status::ok();
  }
  return st;
}

Status DeploymentController::sync_deployment(Sync& s) {
  auto sel = selector_of(section(s.d, "spec").value("selector", json()));
  if (!sel) return Status::ok();
  if (sel->empty()) {
    ctx_.events.record(event_object(s.d), kComponent, "Warning", "SelectingAll",
                       "This deployment is selecting all pods. A non-empty selector is required.");
    int64_t gen = int_at(section(s.d, "metadata"), "generation");
    if (status_count(s.d, "observedGeneration") < gen) {
      json status = section(s.d, "status");
      status["observedGeneration"] = gen;
      return write_status(s, status);
    }
    return Status::ok();
  }
  VKUBE_RETURN_IF_ERROR(claim_replicasets(s, *sel));
  if (is_terminating(s.d)) return sync_status_only(s);
  VKUBE_RETURN_IF_ERROR(check_paused_conditions(s));
  if (section(s.d, "spec").value("paused", false)) return sync_scale(s);
  auto scaling = is_scaling_event(s);
  if (!scaling.is_ok()) return scaling.status();
  if (*scaling) return sync_scale(s);
  return is_rolling(s.d) ? rollout_rolling(s) : rollout_recreate(s);
}

Status DeploymentController::claim_replicasets(Sync& s, const api::LabelSelector& sel) {
  const std::string uid = meta(s.d, "uid");
  const bool deleting = is_terminating(s.d);
  Status first;
  for (const ObjectPtr& rs : replicasets_.list(meta(s.d, "namespace"))) {
    const json* ref = controller_ref(*rs);
    bool matches = sel.matches(labels_of(*rs));
    if (ref != nullptr) {
      if (ref->value("uid", "") != uid) continue;
      if (matches) {
        s.rss.push_back(rs);
      } else if (!deleting) {
        ApiResult r = release(ctx_.client, rs_path(*rs), *rs, uid);
        s.wrote = true;
        if (!r.ok() && r.code != 422 && first.is_ok()) first = api_status(r, "release");
      }
      continue;
    }
    if (deleting || !matches || is_terminating(*rs)) continue;
    s.wrote = true;
    ApiResult r = adopt(ctx_.client, rs_path(*rs), *rs, event_object(s.d));
    if (r.ok())
      s.rss.push_back(std::move(r.body));
    else if (r.code != 404 && first.is_ok())
      first = api_status(r, "adopt");
  }
  std::sort(s.rss.items().begin(), s.rss.items().end(), [](const ObjectPtr& a, const ObjectPtr& b) {
    std::string ca = meta(*a, "creationTimestamp"), cb = meta(*b, "creationTimestamp");
    return ca != cb ? ca < cb : meta(*a, "name") < meta(*b, "name");
  });
  return first;
}

Status DeploymentController::check_paused_conditions(Sync& s) {
  if (!has_progress_deadline(s.d)) return Status::ok();
  const json* cond = get_condition(section(s.d, "status"), "Progressing");
  std::string reason = cond ? cond->value("reason", "") : "";
  // A reported lack of progress is not overwritten by a paused condition.
  if (reason == kTimedOutReason) return Status::ok();
  bool paused = section(s.d, "spec").value("paused", false);
  json status = section(s.d, "status");
  if (paused && reason != kPausedReason) {
    set_condition(status, new_condition("Progressing", "Unknown", kPausedReason,
                                        "Deployment is paused", ctx_.now()));
  } else if (!paused && reason == kPausedReason) {
    set_condition(status, new_condition("Progressing", "Unknown", kResumedReason,
                                        "Deployment is resumed", ctx_.now()));
  } else {
    return Status::ok();
  }
  return write_status(s, status);
}

Result<bool> DeploymentController::is_scaling_event(Sync& s) {
  VKUBE_RETURN_IF_ERROR(get_all_replicasets(s, false));
  int64_t want = spec_replicas(s.d);
  for (const json& rs : s.rss) {
    if (spec_replicas(rs) <= 0) continue;
    auto desired = int_annotation(rs, kDesiredReplicasAnnotation);
    if (desired && *desired != want) return true;
  }
  return false;
}

Status DeploymentController::sync_status_only(Sync& s) {
  VKUBE_RETURN_IF_ERROR(get_all_replicasets(s, false));
  return write_status(s, calculate_status(s));
}

// kube's sync(): scaling and paused deployments.
Status DeploymentController::sync_scale(Sync& s) {
  VKUBE_RETURN_IF_ERROR(get_all_replicasets(s, false));
  VKUBE_RETURN_IF_ERROR(scale(s));
  if (section(s.d, "spec").value("paused", false)) VKUBE_RETURN_IF_ERROR(cleanup(s));
  return write_status(s, calculate_status(s));
}

json DeploymentController::calculate_status(const Sync& s) const {
  int64_t available = 0, total = 0, actual = 0, ready = 0;
  for (const json& rs : s.rss) {
    available += status_count(rs, "availableReplicas");
    total += spec_replicas(rs);
    actual += status_count(rs, "replicas");
    ready += status_count(rs, "readyReplicas");
  }
  int64_t updated = s.new_rs ? status_count(s.rss[*s.new_rs], "replicas") : 0;
  const json& old = section(s.d, "status");
  json status = json::object();
  auto put = [&](const char* field, int64_t v) {
    if (v != 0) status[field] = v;
  };
  put("observedGeneration", int_at(section(s.d, "metadata"), "generation"));
  put("replicas", actual);
  put("updatedReplicas", updated);
  put("readyReplicas", ready);
  put("availableReplicas", available);
  put("unavailableReplicas", std::max<int64_t>(0, total - available));
  if (old.contains("collisionCount")) status["collisionCount"] = old["collisionCount"];
  if (old.contains("conditions")) status["conditions"] = old["conditions"];
  if (available >= spec_replicas(s.d) - max_unavailable(s.d))
    set_condition(status, new_condition("Available", "True", "MinimumReplicasAvailable",
                                        "Deployment has minimum availability.", ctx_.now()));
  else
    set_condition(status,
                  new_condition("Available", "False", "MinimumReplicasUnavailable",
                                "Deployment does not have minimum availability.", ctx_.now()));
  return status;
}

Status DeploymentController::sync_rollout_status(Sync& s) {
  json status = calculate_status(s);
  const TimePoint now = ctx_.now();
  if (!has_progress_deadline(s.d)) remove_condition(status, "Progressing");
  const json* cur = get_condition(section(s.d, "status"), "Progressing");
  bool was_complete = int_at(status, "replicas") == int_at(status, "updatedReplicas") &&
                      cur != nullptr && cur->value("reason", "") == kNewRSAvailableReason;
  const std::string subject = s.new_rs ? "ReplicaSet \"" + meta(s.rss[*s.new_rs], "name") + "\""
                                       : "Deployment \"" + meta(s.d, "name") + "\"";
  if (has_progress_deadline(s.d) && !was_complete) {
    if (deployment_complete(s.d, status)) {
      set_condition(status, new_condition("Progressing", "True", kNewRSAvailableReason,
                                          subject + " has successfully progressed.", now));
    } else if (deployment_progressing(s.d, status)) {
      // Progress refreshes lastUpdateTime even when the reason stays the same.
      json c = new_condition("Progressing", "True", kReplicaSetUpdatedReason,
                             subject + " is progressing.", now);
      if (cur != nullptr) {
        if (cur->value("status", "") == "True")
          c["lastTransitionTime"] = cur->value("lastTransitionTime", json());
        remove_condition(status, "Progressing");
      }
      set_condition(status, std::move(c));
    } else if (deployment_timed_out(s.d, status, now)) {
      set_condition(status, new_condition("Progressing", "False", kTimedOutReason,
                                          subject + " has timed out progressing.", now));
    }
  }
  // The new ReplicaSet's failure first, else any other's.
  std::optional<json> failure;
  auto failure_of = [&](const json& rs) {
    const json* c = get_condition(section(rs, "status"), "ReplicaFailure");
    if (c == nullptr || failure) return;
    failure = json{{"type", "ReplicaFailure"},
                   {"status", c->value("status", "")},
                   {"lastUpdateTime", c->value("lastTransitionTime", json())},
                   {"lastTransitionTime", c->value("lastTransitionTime", json())},
                   {"reason", c->value("reason", "")},
                   {"message", c->value("message", "")}};
  };
  if (s.new_rs) failure_of(s.rss[*s.new_rs]);
  for (const json& rs : s.rss) failure_of(rs);
  if (failure)
    set_condition(status, std::move(*failure));
  else
    remove_condition(status, "ReplicaFailure");

  if (s.d.contains("status") && s.d["status"] == status) {
    requeue_stuck(s, status);
    return Status::ok();
  }
  return write_status(s, status);
}

// Without progress nothing else wakes the deployment up: look again when
// the progress deadline passes.
void DeploymentController::requeue_stuck(const Sync& s, const json& status) {
  const json* cur = get_condition(section(s.d, "status"), "Progressing");
  if (!has_progress_deadline(s.d) || cur == nullptr) return;
  if (deployment_complete(s.d, status) || cur->value("reason", "") == kTimedOutReason) return;
  auto from = parse_rfc3339(cur->value("lastUpdateTime", ""));
  if (!from) return;
  auto deadline = std::chrono::seconds(int_at(section(s.d, "spec"), "progressDeadlineSeconds"));
  auto after = std::chrono::duration_cast<std::chrono::milliseconds>(*from + deadline - ctx_.now());
  // Times have second precision: the deadline has passed once a little after.
  queue().add_after(s.key, std::max(after, std::chrono::milliseconds(0)) + 100ms);
}

}  // namespace vkube::controllers

namespace vkube::controllers {

std::unique_ptr<Controller> make_deployment_controller(Context& ctx) {
  return std::make_unique<DeploymentController>(ctx);
}

}  // namespace vkube::controllers
