// DELETE of one object, and of a collection.
#include <thread>

#include "codec.h"
#include "definition.h"
#include "delete.h"
#include "list_common.h"
#include "object.h"
#include "server_impl.h"
#include "service_ips.h"

namespace vkube::apiserver {

namespace {


// A DELETE's options: its DeleteOptions body, then the query parameters
// (kube reads those only without a body; here they win, and a dryRun in
// either makes the request a dry run).
Result<DeleteOptions> parse_delete_options(Context& c) {
  json body;
  if (!c.req.body.empty()) {
    auto decoded = decode_request_body(c.req, /*custom_resource=*/false);
    if (!decoded.is_ok()) return decoded.status();
    body = std::move(*decoded);
    if (!body.is_object()) return Status::bad_request("DeleteOptions must be an object");
  }
  auto parsed = delete_options_from(body);
  if (!parsed.is_ok()) return parsed.status();
  DeleteOptions o = std::move(parsed).value();
  if (auto g = c.param("gracePeriodSeconds")) {
    try {
      o.grace_period = std::stoll(*g);
    } catch (...) {
      return Status::bad_request("gracePeriodSeconds must be an integer");
    }
  }
  if (auto p = c.param("propagationPolicy")) o.propagation = *p;
  if (auto p = c.param("orphanDependents")) {
    if (*p == "true") o.propagation = "Orphan";
    if (*p == "false") o.orphan_dependents_false = true;
  }
  if (!o.propagation.empty() && o.propagation != "Background" && o.propagation != "Foreground" &&
      o.propagation != "Orphan")
    return Status::invalid("propagationPolicy: Unsupported value: \"" + o.propagation +
                           "\": supported values: \"Foreground\", \"Background\", \"Orphan\"");
  return o;
}

// Parses the request's options into *out and checks its dryRun values (the
// query's and the body's); the context then carries the body's dryRun to
// every write the request makes.
std::optional<ApiError> read_delete_options(Context& c, DeleteOptions* out) {
  std::vector<std::string> query;
  if (auto v = c.param("dryRun")) query.push_back(*v);
  if (auto err = check_dry_run_values("DeleteOptions", query)) return err;
  auto o = parse_delete_options(c);
  if (!o.is_ok()) return ApiError(o.status());
  if (auto err = check_dry_run_values("DeleteOptions", o->dry_run)) return err;
  c.options_dry_run = !o->dry_run.empty();
  *out = std::move(o).value();
  return std::nullopt;
}

bool has_finalizer(const json& meta, std::string_view f) {
  if (!meta.contains("finalizers") || !meta["finalizers"].is_array()) return false;
  for (const json& v : meta["finalizers"])
    if (v == f) return true;
  return false;
}

}  // namespace

Result<DeleteOptions> delete_options_from(const json& body) {
  DeleteOptions o;
  if (body.is_null()) return o;
  if (!body.is_object()) return Status::bad_request("DeleteOptions must be an object");
  if (body.contains("gracePeriodSeconds") && body["gracePeriodSeconds"].is_number_integer())
    o.grace_period = body["gracePeriodSeconds"].get<int64_t>();
  o.propagation = body.value("propagationPolicy", "");
  if (body.value("orphanDependents", false)) o.propagation = "Orphan";
  if (auto od = body.find("orphanDependents"); od != body.end() && od->is_boolean() && !od->get<bool>())
    o.orphan_dependents_false = true;
  if (body.contains("preconditions") && body["preconditions"].is_object()) {
    o.precondition_uid = body["preconditions"].value("uid", "");
    o.precondition_rv = body["preconditions"].value("resourceVersion", "");
  }
  if (auto d = body.find("dryRun"); d != body.end() && !d->is_null()) {
    std::vector<std::string> values;
    if (d->is_array())
      for (const json& v : *d)
        if (v.is_string()) values.push_back(v.get<std::string>());
    if (!d->is_array() || values.size() != d->size())
      return Status::bad_request(
          "json: cannot unmarshal " + std::string(d->is_array() ? "array element" : d->type_name()) +
          " into Go struct field DeleteOptions.dryRun of type []string");
    o.dry_run = std::move(values);
  }
  return o;
}

Result<Deleted> delete_one(Context& c, const std::string& ns, const std::string& name,
                           const DeleteOptions& o) {
  const std::string key = Registry::key(c.kind, ns, name);
  // A conflict here is a write to the same object still being committed
  // (the read came from the watch cache): retry until it lands, as kube's
  // GuaranteedUpdate retries until its deadline, rather than answer 409 to
  // a request that set no precondition.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int attempt = 0; attempt < 16 || std::chrono::steady_clock::now() < give_up; ++attempt) {
    auto kv_r = c.server.backend().get(key);
    if (!kv_r.is_ok()) return kv_r.status();
    auto cur_r = decode_stored(*kv_r);
    if (!cur_r.is_ok()) return cur_r.status();
    json cur = std::move(cur_r).value();
    json& meta = cur["metadata"];
    const std::string rv = str_at(meta, "resourceVersion");
    if (!o.precondition_uid.empty() && o.precondition_uid != str_at(meta, "uid"))
      return Status::conflict("Precondition failed: UID in precondition: " + o.precondition_uid +
                              ", UID in object meta: " + str_at(meta, "uid"));
    if (!o.precondition_rv.empty() && o.precondition_rv != rv)
      return Status::conflict("Precondition failed: ResourceVersion in precondition: " +
                              o.precondition_rv + ", ResourceVersion in object meta: " + rv);
    const int64_t expected = std::stoll(rv);

    json next = cur;
    json& nmeta = next["metadata"];
    bool changed = false;
    if (o.propagation == "Foreground" && !has_finalizer(nmeta, "foregroundDeletion")) {
      nmeta["finalizers"].push_back("foregroundDeletion");
      changed = true;
    } else if (o.propagation == "Orphan" && !has_finalizer(nmeta, "orphan")) {
      nmeta["finalizers"].push_back("orphan");
      changed = true;
    }
    // A kind may add a finalizer of its own when deletion starts: a CRD goes
    // only after its custom resources (the CRD cleanup controller removes it).
    const builtin::Strategy& st = c.kind.strategy;
    if (st.deletion_finalizer != nullptr && !nmeta.contains("deletionTimestamp") &&
        !has_finalizer(nmeta, st.deletion_finalizer)) {
      nmeta["finalizers"].push_back(st.deletion_finalizer);
      changed = true;
    }
    // Graceful deletion: a pod on a node lingers until its kubelet confirms.
    const int64_t grace = st.grace_period ? st.grace_period(cur, o.grace_period) : 0;
    const bool namespace_finalizers = st.held_by_own_finalizers && st.held_by_own_finalizers(cur);
    const bool finalizers = nmeta.contains("finalizers") && nmeta["finalizers"].is_array() &&
                            !nmeta["finalizers"].empty();
    if (finalizers || grace > 0 || namespace_finalizers) {
      if (!nmeta.contains("deletionTimestamp")) {
        nmeta["deletionTimestamp"] = format_rfc3339(now_unix() + grace);
        nmeta["deletionGracePeriodSeconds"] = grace;
        if (c.kind.has_generation) nmeta["generation"] = nmeta.value("generation", int64_t{1}) + 1;
        if (st.mark_terminating) st.mark_terminating(next);
        changed = true;
      } else if (grace < nmeta.value("deletionGracePeriodSeconds", int64_t{0}) && grace >= 0 &&
                 o.grace_period) {
        nmeta["deletionTimestamp"] = format_rfc3339(now_unix() + grace);
        nmeta["deletionGracePeriodSeconds"] = grace;
        changed = true;
      }
      if (!changed) return Deleted{std::move(cur), false};
      if (c.dry_run()) return Deleted{std::move(next), false};
      auto kv = c.server.backend().update(key, encode_for_storage(next), expected);
      if (!kv.is_ok()) {
        if (kv.status().code() == Code::kConflict) {
          if (attempt >= 1)  // the cached read may trail a commit in flight
            std::this_thread::sleep_for(std::chrono::microseconds(250 << std::min(attempt, 6)));
          continue;
        }
        return kv.status();
      }
      nmeta["resourceVersion"] = std::to_string(kv->mod_revision);
      return Deleted{std::move(next), false};
    }
    if (c.dry_run()) return Deleted{std::move(cur), true};
    auto kv = c.server.backend().remove(key, expected);
    if (!kv.is_ok()) {
      if (kv.status().code() == Code::kConflict || kv.status().code() == Code::kNotFound) continue;
      return kv.status();
    }
    if (st.allocates_cluster_ips) c.server.service_ips().release(cur);
    meta["resourceVersion"] = std::to_string(kv->mod_revision);
    return Deleted{std::move(cur), true};
  }
  return Status::conflict("the object is being modified concurrently; please retry");
}

namespace {

// Validating admission of a deletion: the object as it is now is the old object.
std::optional<ApiError> admit_delete(Context& c, const std::string& ns, const std::string& name,
                                     const json* current) {
  if (!c.server.admission().active()) return std::nullopt;
  json old;
  if (current != nullptr) {
    old = *current;
  } else {
    auto kv = c.server.backend().get(Registry::key(c.kind, ns, name));
    if (!kv.is_ok()) return std::nullopt;  // delete_one answers the 404
    auto obj = decode_stored(*kv);
    if (!obj.is_ok()) return std::nullopt;
    old = std::move(obj).value();
  }
  AdmissionRequest a{"DELETE", "", name, ns, nullptr, std::move(old),
                     write_options(c, "DeleteOptions")};
  return c.server.admission().validate(c, a);
}

}  // namespace

http::Response handle_delete(Context& c) {
  if (!c.info.subresource.empty()) return error_response(method_not_supported(c.resource(), "delete"));
  DeleteOptions opts;
  if (auto err = read_delete_options(c, &opts)) return error_response(*err);
  // The namespace lifecycle admission plugin keeps the system namespaces.
  const std::string& name = c.info.name;
  const std::vector<std::string>& kept = c.kind.strategy.undeletable;
  if (std::find(kept.begin(), kept.end(), name) != kept.end())
    return error_response(ApiError(
        Status(Code::kForbidden, c.resource().plural + " \"" + name +
                                     "\" is forbidden: this namespace may not be deleted"),
        {{"name", name}, {"kind", c.resource().plural}}));
  if (auto err = admit_delete(c, c.info.namespace_, name, nullptr)) return error_response(*err);
  auto d = delete_one(c, c.info.namespace_, c.info.name, opts);
  if (!d.is_ok()) {
    if (d.status().code() == Code::kConflict && d.status().message().starts_with("Precondition"))
      return error_response(conflict(c.resource(), c.info.name, d.status().message()));
    return error_response(storage_error(c, d.status(), c.info.name));
  }
  // Kube answers 202 for a deletion left pending only when the client set
  // orphanDependents: false (kept for old clients); otherwise 200.
  int code = !d->gone && opts.orphan_dependents_false ? 202 : 200;
  if (c.kind.return_deleted_object || !d->gone) return object_response(c, code, std::move(d->object));
  json details = {{"name", c.info.name}, {"kind", c.resource().plural},
                  {"uid", str_at(d->object["metadata"], "uid")}};
  if (!c.resource().gv.group.empty()) details["group"] = c.resource().gv.group;
  return json_response(200, success_status(details));
}

http::Response handle_delete_collection(Context& c) {
  DeleteOptions opts;
  if (auto err = read_delete_options(c, &opts)) return error_response(*err);
  auto listed = list_objects(c, ListQuery::from_context(c, /*paged=*/false));
  if (!listed.is_ok()) return error_response(listed.status());
  json items = json::array();
  for (json& obj : listed->items) {
    if (auto err = admit_delete(c, namespace_of(obj), name_of(obj), &obj))
      return error_response(*err);
    auto d = delete_one(c, namespace_of(obj), name_of(obj), opts);
    if (!d.is_ok()) {
      if (d.status().code() == Code::kNotFound) continue;
      return error_response(storage_error(c, d.status(), name_of(obj)));
    }
    items.push_back(std::move(d->object));
  }
  return json_response(200, {{"kind", c.resource().list_kind()},
                             {"apiVersion", c.resource().gv.api_version()},
                             {"metadata", {{"resourceVersion", std::to_string(listed->revision)}}},
                             {"items", std::move(items)}});
}

}  // namespace vkube::apiserver
