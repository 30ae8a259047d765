#include "workload_common.h"

#include <algorithm>
#include <mutex>

#include "vkube/api/json_path.h"

namespace vkube::controllers::workload {

Status api_status(const ApiResult& r) {
  if (r.ok()) return Status::ok();
  std::string message = r.body.is_object() ? r.body.value("message", "") : "";
  if (message.empty()) message = "the server answered " + std::to_string(r.code);
  std::string reason = r.body.is_object() ? r.body.value("reason", "") : "";
  switch (r.code) {
    case 404:
      return Status::not_found(message);
    case 409:
      return reason == "AlreadyExists" ? Status::already_exists(message)
                                       : Status::conflict(message);
    case 422:
      return Status::invalid(message);
    case 400:
      return Status::bad_request(message);
    case 403:
      return Status(Code::kForbidden, message);
    case 429:
      return Status(Code::kTooManyRequests, message);
    default:
      return Status::internal(message);
  }
}

Result<std::vector<ObjectPtr>> claim_objects(LocalClient& client, const json& owner,
                                             const std::vector<ObjectPtr>& candidates,
                                             const std::function<bool(const json&)>& match,
                                             std::string_view api_version,
                                             std::string_view plural) {
  const std::string owner_uid = meta(owner, "uid");
  const bool owner_deleting = is_terminating(owner);
  std::vector<ObjectPtr> claimed;
  for (const ObjectPtr& obj : candidates) {
    const json* ref = controller_ref(*obj);
    std::string path = api_path(api_version, plural, meta(*obj, "namespace"), meta(*obj, "name"));
    if (ref != nullptr) {
      if (ref->value("uid", "") != owner_uid) continue;
      if (match(*obj)) {
        claimed.push_back(obj);
      } else if (!owner_deleting) {
        json release = {{"metadata",
                         {{"ownerReferences", {{{"$patch", "delete"}, {"uid", owner_uid}}}},
                          {"uid", meta(*obj, "uid")}}}};
        // A failed release leaves the object ignored, as kube does.
        (void)client.call("PATCH", path, release, "application/strategic-merge-patch+json");
      }
      continue;
    }
    if (owner_deleting || is_terminating(*obj) || !match(*obj)) continue;
    json adopt = {{"metadata",
                   {{"ownerReferences", json::array({controller_owner_ref(owner)})},
                    {"uid", meta(*obj, "uid")}}}};
    ApiResult r = client.call("PATCH", path, adopt, "application/strategic-merge-patch+json");
    if (r.code == 404) continue;
    VKUBE_RETURN_IF_ERROR(api_status(r));
    claimed.push_back(std::make_shared<const json>(std::move(r.body)));
  }
  return claimed;
}

size_t slow_start(Context& ctx, size_t n, const std::function<Status(size_t)>& fn, Status* error) {
  constexpr size_t kMaxBatch = 500;
  size_t done = 0;
  size_t successes = 0;
  std::mutex mu;
  for (size_t batch = std::min<size_t>(n, 1); batch > 0;
       batch = std::min({2 * batch, n - done, kMaxBatch})) {
    Status first;
    size_t ok = 0;
    ctx.parallel(batch, [&](size_t i) {
      Status s = fn(done + i);
      std::lock_guard lock(mu);
      if (s.is_ok())
        ++ok;
      else if (first.is_ok())
        first = std::move(s);
    });
    successes += ok;
    done += batch;
    if (!first.is_ok()) {
      if (error != nullptr) *error = std::move(first);
      return successes;
    }
  }
  return successes;
}

// --- ControllerRevisions ----------------------------------------------------

json revision_data(const json& pod_template) {
  json t = pod_template.is_object() ? pod_template : json::object();
  t["$patch"] = "replace";
  return {{"spec", {{"template", std::move(t)}}}};
}

json revision_template(const json& revision) {
  const json* t = nullptr;
  auto d = revision.find("data");
  if (d != revision.end() && d->is_object()) {
    auto s = d->find("spec");
    if (s != d->end() && s->is_object()) {
      auto it = s->find("template");
      if (it != s->end() && it->is_object()) t = &*it;
    }
  }
  if (t == nullptr) return json::object();
  json out = *t;
  out.erase("$patch");
  return out;
}

int64_t revision_number(const json& revision) {
  auto it = revision.find("revision");
  return it != revision.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

std::string revision_hash(const json& data, std::optional<int64_t> collision_count) {
  // FNV-1 (multiply, then xor), as Go's hash/fnv New32 that kube uses here.
  uint32_t h = 2166136261u;
  auto write = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h *= 16777619u;
      h ^= c;
    }
  };
  write(data.dump());
  if (collision_count) write(std::to_string(*collision_count));
  return safe_encode(std::to_string(h));
}

bool equal_revisions(const json& a, const json& b) {
  auto da = a.find("data");
  auto db = b.find("data");
  if (da == a.end() || db == b.end()) return false;
  return *da == *db;
}

void sort_revisions(std::vector<ObjectPtr>& revisions) {
  std::stable_sort(revisions.begin(), revisions.end(), [](const ObjectPtr& x, const ObjectPtr& y) {
    int64_t rx = revision_number(*x), ry = revision_number(*y);
    if (rx != ry) return rx < ry;
    std::string cx = meta(*x, "creationTimestamp"), cy = meta(*y, "creationTimestamp");
    if (cx != cy) return cx < cy;
    return meta(*x, "name") < meta(*y, "name");
  });
}

Result<std::vector<ObjectPtr>> claim_revisions(LocalClient& client, const json& owner,
                                               const Lister& revisions,
                                               const api::LabelSelector& selector) {
  auto claimed = claim_objects(
      client, owner, revisions.list(meta(owner, "namespace")),
      [&](const json& r) { return selector.matches(labels_of(r)); }, "apps/v1",
      "controllerrevisions");
  if (!claimed.is_ok()) return claimed.status();
  std::vector<ObjectPtr> out = std::move(claimed).value();
  sort_revisions(out);
  return out;
}

Result<json> create_revision(LocalClient& client, const json& revision) {
  const std::string ns = meta(revision, "namespace");
  ApiResult r = client.call("POST", api_path("apps/v1", "controllerrevisions", ns), revision);
  if (r.ok()) return std::move(r.body);
  Status s = api_status(r);
  if (s.code() != Code::kAlreadyExists) return s;
  ApiResult existing =
      client.call("GET", api_path("apps/v1", "controllerrevisions", ns, meta(revision, "name")));
  VKUBE_RETURN_IF_ERROR(api_status(existing));
  if (equal_revisions(existing.body, revision)) return std::move(existing.body);
  return s;
}

Result<json> renumber_revision(LocalClient& client, const json& revision, int64_t number) {
  if (revision_number(revision) == number) return revision;
  json patch = {{"revision", number},
                {"metadata", {{"resourceVersion", meta(revision, "resourceVersion")}}}};
  ApiResult r = client.call("PATCH",
                            api_path("apps/v1", "controllerrevisions", meta(revision, "namespace"),
                                     meta(revision, "name")),
                            patch, "application/merge-patch+json");
  VKUBE_RETURN_IF_ERROR(api_status(r));
  return std::move(r.body);
}

Status delete_revision(LocalClient& client, const json& revision) {
  ApiResult r =
      client.call("DELETE", api_path("apps/v1", "controllerrevisions", meta(revision, "namespace"),
                                     meta(revision, "name")));
  return r.code == 404 ? Status::ok() : api_status(r);
}

// --- JSON accessors ----------------------------------------------------------

int64_t int_at(const json& obj, std::initializer_list<const char*> path, int64_t fallback) {
  const json* v = api::json_at(obj, path);
  return v != nullptr && v->is_number_integer() ? v->get<int64_t>() : fallback;
}

std::string str_at(const json& obj, std::initializer_list<const char*> path) {
  const json* v = api::json_at(obj, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

json with_type(json obj, std::string_view api_version, std::string_view kind) {
  if (!obj.contains("apiVersion") || !obj["apiVersion"].is_string())
    obj["apiVersion"] = std::string(api_version);
  if (!obj.contains("kind") || !obj["kind"].is_string()) obj["kind"] = std::string(kind);
  return obj;
}

}  // namespace vkube::controllers::workload
