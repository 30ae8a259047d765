// The Deployment controller's rollouts (kube's deployment sync.go,
// rolling.go, recreate.go): finding or creating the new ReplicaSet, the two
// strategies, proportional scaling and the cleanup of old ReplicaSets.
#include <algorithm>
#include <cmath>

#include "claim.h"
#include "deployment_controller.h"
#include "deployment_util.h"

namespace vkube::controllers {

using namespace deploy;

namespace {

constexpr const char* kComponent = "deployment-controller";

// "/" and "~" escaped for a JSON pointer.
std::string pointer_token(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

}  // namespace

Status DeploymentController::get_all_replicasets(Sync& s, bool create) {
  // Which ReplicaSet is the new one is found once per sync (kube compares
  // the templates on each call; no write of this sync changes a template).
  if (!s.classified) {
    s.new_rs.reset();
    s.old.clear();
    const json& tmpl = section(section(s.d, "spec"), "template");
    for (size_t i = 0; i < s.rss.size(); ++i) {
      if (!s.new_rs && equal_ignore_hash(section(section(s.rss[i], "spec"), "template"), tmpl))
        s.new_rs = i;
      else
        s.old.push_back(i);
    }
    s.classified = true;
  }
  int64_t max_old = 0;
  for (size_t i : s.old) max_old = std::max(max_old, revision_of(s.rss[i]));
  const std::string revision = std::to_string(max_old + 1);
  if (!s.new_rs) return create ? create_new_replicaset(s, revision) : Status::ok();

  const json& rs = s.rss[*s.new_rs];
  json copy = rs;
  bool annotations = set_new_rs_annotations(s.d, copy, revision, true);
  json min_ready = section(s.d, "spec").value("minReadySeconds", json(0));
  if (annotations || section(copy, "spec").value("minReadySeconds", json(0)) != min_ready) {
    copy["spec"]["minReadySeconds"] = min_ready;
    ApiResult r = write(s, "PUT", rs_path(copy), copy);
    if (!r.ok()) return api_status(r, "update replica set");
    s.rss.replace(*s.new_rs, std::move(r.body));
    return Status::ok();
  }
  // The revision the new ReplicaSet already carries.
  set_deployment_revision(s, annotation(rs, kRevisionAnnotation));
  json status = section(s.d, "status");
  if (has_progress_deadline(s.d) && !get_condition(status, "Progressing"))
    set_condition(status,
                  new_condition("Progressing", "True", kFoundNewRSReason,
                                "Found new replica set \"" + meta(rs, "name") + "\"", ctx_.now()));
  return write_status(s, status);
}

Status DeploymentController::create_new_replicaset(Sync& s, const std::string& revision) {
  const json& spec = section(s.d, "spec");
  std::optional<int64_t> collisions;
  if (section(s.d, "status").contains("collisionCount"))
    collisions = int_at(section(s.d, "status"), "collisionCount");
  json tmpl = section(spec, "template");
  const std::string hash = template_hash(tmpl, collisions);
  tmpl["metadata"]["labels"][kHashLabel] = hash;
  json selector = section(spec, "selector");
  selector["matchLabels"][kHashLabel] = hash;
  const std::string name = meta(s.d, "name") + "-" + hash;
  json rs = {{"apiVersion", "apps/v1"},
             {"kind", "ReplicaSet"},
             {"metadata",
              {{"name", name},
               {"namespace", meta(s.d, "namespace")},
               {"ownerReferences", json::array({controller_owner_ref(s.d)})},
               {"labels", tmpl["metadata"]["labels"]}}},
             {"spec",
              {{"replicas", 0},
               {"minReadySeconds", spec.value("minReadySeconds", json(0))},
               {"selector", selector},
               {"template", tmpl}}}};
  auto count = new_rs_new_replicas(s, rs);
  if (!count.is_ok()) return count.status();
  rs["spec"]["replicas"] = *count;
  set_new_rs_annotations(s.d, rs, revision, false);

  ApiResult r = write(s, "POST", api_path("apps/v1", "replicasets", meta(s.d, "namespace")), rs);
  bool already_exists = false;
  if (r.code == 409) {
    // Ours from an earlier sync, or another template's ReplicaSet with the
    // same hash: then a new collisionCount gives another name.
    ApiResult got = ctx_.client.call("GET", rs_path(rs));
    if (!got.ok()) return api_status(got, "get replica set");
    if (is_controlled_by(got.body, meta(s.d, "uid")) &&
        equal_ignore_hash(section(section(got.body, "spec"), "template"),
                          section(spec, "template"))) {
      already_exists = true;
      r = std::move(got);
    } else {
      json status = section(s.d, "status");
      status["collisionCount"] = collisions.value_or(0) + 1;
      VKUBE_RETURN_IF_ERROR(write_status(s, status));
      return Status::conflict("replica set \"" + name + "\" exists with another template");
    }
  } else if (!r.ok()) {
    Status err = api_status(r, "create replica set");
    bool ns_terminating = false;
    for (const json& c : section(r.body, "details").value("causes", json::array()))
      ns_terminating |= c.value("reason", "") == "NamespaceTerminating";
    if (ns_terminating) return err;
    std::string msg = "Failed to create new replica set \"" + name + "\": " + err.message();
    if (has_progress_deadline(s.d)) {
      json status = section(s.d, "status");
      set_condition(status,
                    new_condition("Progressing", "False", kFailedRSCreateReason, msg, ctx_.now()));
      (void)write_status(s, status);
    }
    ctx_.events.record(event_object(s.d), kComponent, "Warning", kFailedRSCreateReason, msg);
    return err;
  }
  if (!already_exists && *count > 0)
    ctx_.events.record(event_object(s.d), kComponent, "Normal", "ScalingReplicaSet",
                       "Scaled up replica set " + name + " from 0 to " + std::to_string(*count));
  s.rss.push_back(std::move(r.body));
  s.new_rs = s.rss.size() - 1;
  set_deployment_revision(s, revision);
  json status = section(s.d, "status");
  if (!already_exists && has_progress_deadline(s.d))
    set_condition(status, new_condition("Progressing", "True", kNewRSReason,
                                        "Created new replica set \"" + name + "\"", ctx_.now()));
  return write_status(s, status);
}

Result<int64_t> DeploymentController::new_rs_new_replicas(const Sync& s, const json& new_rs) const {
  int64_t want = spec_replicas(s.d);
  if (!is_rolling(s.d)) return want;
  const json& ru = section(section(section(s.d, "spec"), "strategy"), "rollingUpdate");
  auto surge = scaled_value(ru.value("maxSurge", json()), want, true);
  if (!surge.is_ok()) return surge.status();
  int64_t current = spec_replicas(new_rs);
  for (size_t i : s.old) current += spec_replicas(s.rss[i]);
  int64_t max_total = want + *surge;
  if (current >= max_total) return spec_replicas(new_rs);
  int64_t up = std::min(max_total - current, want - spec_replicas(new_rs));
  return spec_replicas(new_rs) + up;
}

// A JSON patch whose tests make it fail (422) when the ReplicaSet's size
// changed since the cache showed it: status writes by the ReplicaSet
// controller do not conflict with it, as a full update would.
Result<bool> DeploymentController::scale_replicaset(Sync& s, size_t i, int64_t scale,
                                                    const char* operation) {
  const json& rs = s.rss[i];
  const int64_t old_scale = spec_replicas(rs);
  const int64_t desired = spec_replicas(s.d);
  const int64_t max = desired + max_surge(s.d);
  bool size_changes = old_scale != scale;
  if (!size_changes && !replicas_annotations_need_update(rs, desired, max)) return false;
  json patch = json::array({{{"op", "test"}, {"path", "/metadata/uid"}, {"value", meta(rs, "uid")}},
                            {{"op", "test"}, {"path", "/spec/replicas"}, {"value", old_scale}},
                            {{"op", "replace"}, {"path", "/spec/replicas"}, {"value", scale}}});
  const json& annotations = section(section(rs, "metadata"), "annotations");
  if (section(rs, "metadata").contains("annotations") && annotations.is_object()) {
    for (auto [key, value] :
         {std::pair{kDesiredReplicasAnnotation, desired}, std::pair{kMaxReplicasAnnotation, max}})
      patch.push_back({{"op", "add"},
                       {"path", "/metadata/annotations/" + pointer_token(key)},
                       {"value", std::to_string(value)}});
  } else {
    patch.push_back({{"op", "add"},
                     {"path", "/metadata/annotations"},
                     {"value",
                      {{kDesiredReplicasAnnotation, std::to_string(desired)},
                       {kMaxReplicasAnnotation, std::to_string(max)}}}});
  }
  ApiResult r = write(s, "PATCH", rs_path(rs), patch, "application/json-patch+json");
  if (!r.ok()) {
    if (r.code == 422) return Status::conflict("replica set " + meta(rs, "name") + " changed");
    return api_status(r, "scale replica set");
  }
  const std::string name = meta(rs, "name");
  s.rss.replace(i, std::move(r.body));  // `rs` is gone from here on
  if (!size_changes) return false;
  ctx_.events.record(event_object(s.d), kComponent, "Normal", "ScalingReplicaSet",
                     std::string("Scaled ") + operation + " replica set " + name + " from " +
                         std::to_string(old_scale) + " to " + std::to_string(scale));
  return true;
}

Result<bool> DeploymentController::scale_and_record(Sync& s, size_t i, int64_t scale) {
  int64_t cur = spec_replicas(s.rss[i]);
  if (cur == scale) return false;
  return scale_replicaset(s, i, scale, cur < scale ? "up" : "down");
}

// ---- RollingUpdate

Status DeploymentController::rollout_rolling(Sync& s) {
  VKUBE_RETURN_IF_ERROR(get_all_replicasets(s, true));
  auto up = reconcile_new_replicaset(s);
  if (!up.is_ok()) return up.status();
  if (*up) return sync_rollout_status(s);
  auto down = reconcile_old_replicasets(s);
  if (!down.is_ok()) return down.status();
  if (*down) return sync_rollout_status(s);
  if (deployment_complete(s.d, section(s.d, "status"))) VKUBE_RETURN_IF_ERROR(cleanup(s));
  return sync_rollout_status(s);
}

Result<bool> DeploymentController::reconcile_new_replicaset(Sync& s) {
  if (!s.new_rs) return false;
  const size_t n = *s.new_rs;
  int64_t want = spec_replicas(s.d);
  int64_t cur = spec_replicas(s.rss[n]);
  if (cur == want) return false;
  if (cur > want) return scale_and_record(s, n, want);
  auto count = new_rs_new_replicas(s, s.rss[n]);
  if (!count.is_ok()) return count.status();
  return scale_and_record(s, n, *count);
}

Result<bool> DeploymentController::reconcile_old_replicasets(Sync& s) {
  if (!s.new_rs) return false;
  int64_t old_pods = 0;
  for (size_t i : s.old) old_pods += spec_replicas(s.rss[i]);
  if (old_pods == 0) return false;
  const json& nrs = s.rss[*s.new_rs];
  int64_t all_pods = old_pods + spec_replicas(nrs);
  int64_t min_available = spec_replicas(s.d) - max_unavailable(s.d);
  int64_t new_unavailable = spec_replicas(nrs) - status_count(nrs, "availableReplicas");
  int64_t max_scaled_down = all_pods - min_available - new_unavailable;
  if (max_scaled_down <= 0) return false;
  // Unhealthy replicas go first: scaling them down costs no availability.
  auto cleaned = cleanup_unhealthy_replicas(s, max_scaled_down);
  if (!cleaned.is_ok()) return cleaned.status();
  auto scaled = scale_down_old_for_rolling(s);
  if (!scaled.is_ok()) return scaled.status();
  return *cleaned + *scaled > 0;
}

Result<int64_t> DeploymentController::cleanup_unhealthy_replicas(Sync& s, int64_t max_cleanup) {
  int64_t total = 0;
  for (size_t i : s.old) {
    if (total >= max_cleanup) break;
    int64_t replicas = spec_replicas(s.rss[i]);
    int64_t available = status_count(s.rss[i], "availableReplicas");
    if (replicas == 0 || replicas == available) continue;
    int64_t n = std::min(max_cleanup - total, replicas - available);
    auto r = scale_and_record(s, i, replicas - n);
    if (!r.is_ok()) return r.status();
    total += n;
  }
  return total;
}

Result<int64_t> DeploymentController::scale_down_old_for_rolling(Sync& s) {
  int64_t min_available = spec_replicas(s.d) - max_unavailable(s.d);
  int64_t available = 0;
  for (const json& rs : s.rss) available += status_count(rs, "availableReplicas");
  if (available <= min_available) return int64_t{0};
  int64_t to_scale_down = available - min_available;
  int64_t total = 0;
  for (size_t i : s.old) {
    if (total >= to_scale_down) break;
    int64_t replicas = spec_replicas(s.rss[i]);
    if (replicas == 0) continue;
    int64_t n = std::min(replicas, to_scale_down - total);
    auto r = scale_and_record(s, i, replicas - n);
    if (!r.is_ok()) return r.status();
    total += n;
  }
  return total;
}

// ---- Recreate

bool DeploymentController::old_pods_running(const Sync& s) const {
  for (size_t i : s.old)
    if (status_count(s.rss[i], "replicas") > 0) return true;
  for (size_t i : s.old) {
    for (const ObjectPtr& p : pods_.controlled_by(meta(s.rss[i], "uid"))) {
      std::string phase = pod_phase(*p);
      if (phase != "Failed" && phase != "Succeeded") return true;
    }
  }
  return false;
}

Status DeploymentController::rollout_recreate(Sync& s) {
  VKUBE_RETURN_IF_ERROR(get_all_replicasets(s, false));
  bool scaled_down = false;
  for (size_t i : s.old) {
    if (spec_replicas(s.rss[i]) == 0) continue;
    auto r = scale_and_record(s, i, 0);
    if (!r.is_ok()) return r.status();
    scaled_down = true;
  }
  if (scaled_down || old_pods_running(s)) return sync_rollout_status(s);
  if (!s.new_rs) VKUBE_RETURN_IF_ERROR(get_all_replicasets(s, true));
  if (s.new_rs) {
    auto r = scale_and_record(s, *s.new_rs, spec_replicas(s.d));
    if (!r.is_ok()) return r.status();
  }
  if (deployment_complete(s.d, section(s.d, "status"))) VKUBE_RETURN_IF_ERROR(cleanup(s));
  return sync_rollout_status(s);
}

// ---- scaling (kube's scale(): a scaled deployment or a paused one)

Status DeploymentController::scale(Sync& s) {
  const int64_t want = spec_replicas(s.d);
  std::vector<size_t> active;
  if (s.new_rs && spec_replicas(s.rss[*s.new_rs]) > 0) active.push_back(*s.new_rs);
  for (size_t i : s.old)
    if (spec_replicas(s.rss[i]) > 0) active.push_back(i);
  // One active ReplicaSet (or none: then the newest) takes the whole size.
  if (active.size() <= 1) {
    std::optional<size_t> target;
    if (active.size() == 1)
      target = active[0];
    else if (s.new_rs)
      target = s.new_rs;
    else if (!s.old.empty())
      target = s.old.back();
    if (!target || spec_replicas(s.rss[*target]) == want) return Status::ok();
    return scale_and_record(s, *target, want).status();
  }
  // A saturated new ReplicaSet: the old ones go.
  if (s.new_rs && is_saturated(s.d, s.rss[*s.new_rs])) {
    for (size_t i : s.old) {
      if (spec_replicas(s.rss[i]) == 0) continue;
      VKUBE_RETURN_IF_ERROR(scale_and_record(s, i, 0).status());
    }
    return Status::ok();
  }
  if (!is_rolling(s.d)) return Status::ok();
  // Proportional scaling: every active ReplicaSet grows or shrinks by its
  // share of the size it was last sized for (the max-replicas annotation).
  int64_t current = 0;
  for (size_t i : active) current += spec_replicas(s.rss[i]);
  int64_t allowed = want > 0 ? want + max_surge(s.d) : 0;
  int64_t to_add = allowed - current;
  auto newer = [&](size_t a, size_t b) {
    return meta(s.rss[a], "creationTimestamp") != meta(s.rss[b], "creationTimestamp")
               ? meta(s.rss[a], "creationTimestamp") > meta(s.rss[b], "creationTimestamp")
               : meta(s.rss[a], "name") > meta(s.rss[b], "name");
  };
  std::sort(active.begin(), active.end(), [&](size_t a, size_t b) {
    int64_t ra = spec_replicas(s.rss[a]), rb = spec_replicas(s.rss[b]);
    if (ra != rb) return ra > rb;
    // Equal sizes: newer first when scaling up, older first when down.
    return to_add > 0 ? newer(a, b) : newer(b, a);
  });
  const char* operation = to_add > 0 ? "up" : "down";
  std::vector<int64_t> sizes;
  int64_t added = 0;
  for (size_t i : active) {
    int64_t replicas = spec_replicas(s.rss[i]);
    int64_t proportion = 0;
    if (to_add != 0 && replicas != 0 && to_add != added) {
      int64_t fraction;
      if (want == 0) {
        fraction = -replicas;
      } else {
        int64_t annotated = int_annotation(s.rss[i], kMaxReplicasAnnotation)
                                .value_or(status_count(s.d, "replicas"));
        double size = annotated == 0 ? static_cast<double>(replicas)
                                     : static_cast<double>(replicas * (want + max_surge(s.d))) /
                                           static_cast<double>(annotated);
        fraction = static_cast<int64_t>(std::llround(size)) - replicas;
      }
      int64_t room = to_add - added;
      proportion = to_add > 0 ? std::min(fraction, room) : std::max(fraction, room);
    }
    sizes.push_back(replicas + proportion);
    added += proportion;
  }
  for (size_t k = 0; k < active.size(); ++k) {
    // The leftover goes to the largest ReplicaSet.
    if (k == 0 && to_add != 0) sizes[0] = std::max<int64_t>(0, sizes[0] + to_add - added);
    auto r = scale_replicaset(s, active[k], sizes[k], operation);
    if (!r.is_ok()) return r.status();
  }
  return Status::ok();
}

// ---- history

Status DeploymentController::cleanup(Sync& s) {
  const json& spec = section(s.d, "spec");
  if (!spec.contains("revisionHistoryLimit") || !spec["revisionHistoryLimit"].is_number_integer())
    return Status::ok();
  int64_t limit = spec["revisionHistoryLimit"].get<int64_t>();
  std::vector<size_t> cleanable;
  for (size_t i : s.old)
    if (!is_terminating(s.rss[i])) cleanable.push_back(i);
  int64_t diff = static_cast<int64_t>(cleanable.size()) - limit;
  if (diff <= 0) return Status::ok();
  std::stable_sort(cleanable.begin(), cleanable.end(), [&](size_t a, size_t b) {
    return revision_of(s.rss[a]) < revision_of(s.rss[b]);
  });
  for (int64_t k = 0; k < diff; ++k) {
    const json& rs = s.rss[cleanable[k]];
    if (status_count(rs, "replicas") != 0 || spec_replicas(rs) != 0 ||
        int_at(section(rs, "metadata"), "generation") > status_count(rs, "observedGeneration"))
      continue;
    ApiResult r = write(s, "DELETE", rs_path(rs));
    if (!r.ok() && r.code != 404) return api_status(r, "delete replica set");
  }
  return Status::ok();
}

}  // namespace vkube::controllers
