// PUT: replace an object, or its status or scale.
#include <thread>

#include "certificates.h"
#include "codec.h"
#include "custom_conversion.h"
#include "field_manager.h"
#include "list_common.h"
#include "object.h"
#include "scale.h"
#include "server_impl.h"
#include "service_ips.h"
#include "table.h"
#include "vkube/api/limits.h"

namespace vkube::apiserver {

namespace {
// The user the syncer writes tenant objects as (src/syncer).
constexpr std::string_view kSyncerUser = "system:vkube:syncer";

bool adopts_host_ip(const Context& c, const json& cur, const json& next) {
  if (c.user.name != kSyncerUser || !c.kind.strategy.allocates_cluster_ips) return false;
  const std::string before = str_at(cur.value("spec", json::object()), "clusterIP");
  const std::string after = str_at(next.value("spec", json::object()), "clusterIP");
  return !before.empty() && !after.empty() && before != after && before != "None" &&
         after != "None";
}
// A JSON answer in the version stored is the bytes just stored with their
// resourceVersion spliced in, as a create answers: the object is not
// encoded a second time. nullopt when nothing was written or it needs more.
std::optional<http::Response> stored_answer(const Context& c, const std::string& written,
                                            const json& result) {
  std::string_view accept = c.req.header("Accept");
  if (written.empty() || wants_table(accept) || prefers_protobuf(accept)) return std::nullopt;
  if (str_at(result, "apiVersion") != c.resource().gv.api_version() ||
      str_at(result, "kind") != c.resource().kind)
    return std::nullopt;
  auto rv = parse_resource_version(str_at(result["metadata"], "resourceVersion"));
  if (!rv.is_ok()) return std::nullopt;
  return stored_bytes_response(200, written, *rv);
}

}  // namespace

std::optional<http::Response> stored_bytes_response(int code, std::string_view stored,
                                                    storage::Revision rev) {
  auto body = splice_resource_version(stored, rev);
  if (!body) return std::nullopt;
  http::Response resp;
  resp.status = code;
  resp.set_header("Content-Type", "application/json");
  resp.body = std::move(*body);
  resp.body += '\n';  // as kube's encoder ends a document
  return resp;
}

http::Response guaranteed_update(Context& c, const Transform& transform) {
  return guaranteed_update(c, transform,
                           [&c](const json& cur, json& next) { track_fields(c, &cur, next); });
}

http::Response guaranteed_update(Context& c, const Transform& transform, const FieldsHook& fields) {
  if (Status s = check_dry_run(c); !s.is_ok()) return error_response(s);
  const std::string& name = c.info.name;
  const std::string key = c.key(name);
  // A conflict here is a write to the same object still being committed
  // (the read came from the watch cache): retry until it lands, as kube's
  // GuaranteedUpdate retries until its deadline, rather than answer 409 to
  // a request that set no precondition.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int attempt = 0; attempt < 16 || std::chrono::steady_clock::now() < give_up; ++attempt) {
    auto cur_r = read_object(c, name);
    if (!cur_r.is_ok()) return error_response(storage_error(c, cur_r.status(), name));
    // A custom resource converted by a webhook changes in the version asked for; its stored
    // form is what the commit compares with.
    std::optional<json> stored;
    if (converts_by_webhook(c.kind)) {
      stored = *cur_r;
      Status s = convert_custom(c.server, c.kind, *cur_r, c.resource().gv.api_version());
      if (!s.is_ok()) return error_response(conversion_error(s));
    }
    const json& cur = *cur_r;
    // Stored before nesting was limited: readable and deletable, but every
    // write walks the current object, so none may start from it.
    if (!api::within_object_limit(cur))
      return error_response(
          ApiError(Status::invalid("the stored object nests objects or arrays deeper than " +
                                   std::to_string(api::kMaxObjectNestingDepth) +
                                   " levels; it can be read and deleted, not changed"),
                   {{"name", name}, {"kind", c.resource().kind}}));
    auto next_r = transform(cur);
    if (!next_r.is_ok()) {
      if (next_r.status().code() == Code::kInvalid)
        return error_response(
            ApiError(next_r.status(), {{"name", name}, {"kind", c.resource().kind}}));
      return error_response(next_r.status());
    }
    json next = std::move(next_r).value();
    if (!next.is_object() || !next.contains("metadata") || !next["metadata"].is_object())
      return error_response(bad_request("the object must have metadata"));
    if (!api::within_object_limit(next))  // each transform checks; this is the backstop
      return error_response(
          ApiError(Status::invalid("the object nests objects or arrays deeper than " +
                                   std::to_string(api::kMaxObjectNestingDepth) + " levels"),
                   {{"name", name}, {"kind", c.resource().kind}}));
    json& meta = next["metadata"];

    const std::string cur_rv = str_at(cur["metadata"], "resourceVersion");
    // "0" is no precondition: kube's store reads it as unset (an unconditional update).
    if (str_at(meta, "resourceVersion") == "0") meta.erase("resourceVersion");
    const std::string want_rv = str_at(meta, "resourceVersion");
    if (!want_rv.empty() && want_rv != cur_rv)
      return error_response(storage_error(c, Status::conflict(""), name));
    std::string want_uid = str_at(meta, "uid");
    std::string cur_uid = str_at(cur["metadata"], "uid");
    if (!want_uid.empty() && want_uid != cur_uid)
      return error_response(conflict(c.resource(), name,
                                     "Precondition failed: UID in precondition: " + want_uid +
                                         ", UID in object meta: " + cur_uid));
    std::string body_name = str_at(meta, "name");
    if (!body_name.empty() && body_name != name)
      return error_response(bad_request("the name of the object (" + body_name +
                                        ") does not match the name on the URL (" + name + ")"));
    std::string body_ns = str_at(meta, "namespace");
    if (c.resource().namespaced && !body_ns.empty() && body_ns != c.info.namespace_)
      return error_response(bad_request(
          "the namespace of the provided object does not match the namespace sent on the request"));

    const bool dynamic = c.server.admission().active();
    // On the scale subresource webhooks and policies see autoscaling/v1 Scales, as kube
    // shows them; what a mutating webhook changes in the Scale goes back to the object.
    const bool scale = c.info.subresource == "scale";
    auto admitted = [&](const json& obj) -> AdmissionRequest {
      AdmissionRequest a{"UPDATE",
                         c.info.subresource,
                         name,
                         c.info.namespace_,
                         scale ? to_scale(c.kind, obj) : obj,
                         scale ? to_scale(c.kind, cur) : cur,
                         write_options(c, "UpdateOptions")};
      if (scale) {
        a.kind = "Scale";
        a.kind_group_version = "autoscaling/v1";
      }
      return a;
    };
    if (dynamic) {
      AdmissionRequest a = admitted(next);
      auto err = c.server.admission().mutate(c, a);
      if (err) return error_response(*err);
      if (!scale) {
        next = std::move(a.object);
      } else if (Status applied = apply_scale(c.kind, a.object, next); !applied.is_ok()) {
        return error_response(applied);
      }
    }
    prepare_update(c, cur, next);
    fields(cur, next);
    if (c.info.subresource.empty()) {
      // A cluster IP may not change, except for the syncer, which gives a
      // tenant Service the address the host cluster assigned to its copy.
      json adopted;
      const bool adopts = adopts_host_ip(c, cur, next);
      if (adopts) {
        adopted = cur;
        adopted["spec"]["clusterIP"] = next["spec"]["clusterIP"];
        adopted["spec"]["clusterIPs"] = next["spec"].value("clusterIPs", json::array());
      }
      if (auto err = validate_object(c, next, adopts ? &adopted : &cur))
        return error_response(*err);
      if (adopts && !c.dry_run()) c.server.service_ips().adopt(cur, next);
    }
    if (auto err = admit_pod_security(c, next, &cur)) return error_response(*err);
    if (auto err = admit_csr(c, next, &cur)) return error_response(*err);
    if (auto err = admit_host_policy(c, next, &cur, name)) return error_response(*err);
    if (dynamic) {
      if (auto err = c.server.admission().validate(c, admitted(next))) return error_response(*err);
    }
    // Last before the commit, as create does: what the Service's new type or
    // ports need is reserved now, what it no longer holds is freed once written.
    ServiceAllocation allocation;
    const bool allocates = c.kind.strategy.allocates_cluster_ips && c.info.subresource.empty();
    if (allocates) {
      if (auto err = c.server.service_ips().assign_update(cur, next, c.dry_run(), allocation))
        return error_response(*err);
    }
    const auto expected = std::stoll(cur_rv);
    std::string written;
    auto committed = commit_update(c, key, stored ? *stored : cur, next, expected, &written);
    if (allocates) c.server.service_ips().finish(allocation, committed.is_ok());
    if (!committed.is_ok()) {
      if (committed.status().code() == Code::kConflict && want_rv.empty()) {
        // The cached read can trail a write still being committed: give it
        // a moment before reading again.
        if (attempt >= 1)
          std::this_thread::sleep_for(std::chrono::microseconds(250 << std::min(attempt, 6)));
        continue;
      }
      return error_response(storage_error(c, committed.status(), name));
    }
    json result = committed->has_value() ? std::move(**committed) : std::move(next);
    if (c.info.subresource == "scale") return json_response(200, to_scale(c.kind, result));
    if (auto answer = stored_answer(c, written, result)) return std::move(*answer);
    return object_response(c, 200, std::move(result));
  }
  return error_response(storage_error(c, Status::conflict(""), name));
}

http::Response handle_update(Context& c) {
  if (auto err = check_write_options(c, "UpdateOptions", false)) return error_response(*err);
  auto body = decode_body(c);
  if (!body.is_ok()) return error_response(body.status());
  json obj = std::move(body).value();
  if (c.info.subresource == "scale") {
    return guaranteed_update(c, [&](const json& cur) -> Result<json> {
      json next = cur;
      VKUBE_RETURN_IF_ERROR(apply_scale(c.kind, obj, next));
      std::string rv = str_at(obj["metadata"], "resourceVersion");
      if (rv.empty())
        next["metadata"].erase("resourceVersion");
      else
        next["metadata"]["resourceVersion"] = rv;
      return next;
    });
  }
  return guaranteed_update(c, [&](const json&) -> Result<json> { return obj; });
}

}  // namespace vkube::apiserver
