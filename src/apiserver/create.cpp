// POST: create an object.
#include <optional>

#include "certificates.h"
#include "codec.h"
#include "custom_resources.h"
#include "field_manager.h"
#include "list_common.h"
#include "object.h"
#include "server_impl.h"
#include "service_ips.h"
#include "table.h"

namespace vkube::apiserver {

namespace {

// The status an object starts with (the kind's PrepareForCreate).
void reset_status(const Kind& k, json& obj) {
  if (!k.resource.status_subresource) return;
  if (k.resource.is_custom) {
    obj.erase("status");  // kube drops a custom resource's status on create
    return;
  }
  if (k.strategy.reset_status) k.strategy.reset_status(obj);
}

// The 201 answer of a create as the stored bytes with their resourceVersion
// spliced in; nullopt when they have no metadata object to splice it into.
std::optional<http::Response> stored_answer(const std::string& stored, storage::Revision rev) {
  return stored_bytes_response(201, stored, rev);
}

// The 201 answer of a create in protobuf: `obj` (in the version served)
// with its resourceVersion, encoded once; JSON when its kind has no message.
std::optional<http::Response> protobuf_answer_of(json& obj, storage::Revision rev) {
  auto meta = obj.find("metadata");
  if (meta == obj.end() || !meta->is_object()) return std::nullopt;
  (*meta)["resourceVersion"] = std::to_string(rev);
  return body_response_protobuf(201, obj);
}

}  // namespace

http::Response handle_create(Context& c) {
  if (!c.info.name.empty() || !c.info.subresource.empty())
    return error_response(method_not_supported(c.resource(), "create"));
  if (auto err = check_write_options(c, "CreateOptions", false)) return error_response(*err);
  if (Status s = check_dry_run(c); !s.is_ok()) return error_response(s);
  auto decoded = decode_body(c);
  if (!decoded.is_ok()) return error_response(decoded.status());
  return create_object(c, std::move(decoded).value(), true, true);
}

bool create_may_defer(Server& s, const Kind& k) {
  const builtin::Strategy& st = k.strategy;
  // A kind stored in another version than served answers with a conversion, not the stored bytes.
  const bool converted = st.convert && st.storage_version != k.resource.gv.version;
  return !st.allocates_cluster_ips && !(st.gpu_quota_counted && s.gpu_quota() != nullptr) &&
         !st.defines_kinds && !converted;
}

http::Response create_object(Context& c, json obj, bool track, bool may_defer) {
  json& meta = obj["metadata"];

  const api::Resource& r = c.resource();
  if (r.namespaced) {
    std::string body_ns = str_at(meta, "namespace");
    if (c.info.namespace_.empty())
      return error_response(bad_request("a namespace is required to create " + r.plural));
    if (!body_ns.empty() && body_ns != c.info.namespace_)
      return error_response(bad_request(
          "the namespace of the provided object does not match the namespace sent on the request"));
    meta["namespace"] = c.info.namespace_;
  } else {
    meta.erase("namespace");
  }
  if (!str_at(meta, "resourceVersion").empty())
    return error_response(bad_request("resourceVersion should not be set on objects to be created"));
  std::string name = str_at(meta, "name");
  std::string generate = str_at(meta, "generateName");
  if (name.empty() && !generate.empty()) {
    name = generate + random_suffix();
    meta["name"] = name;
  }

  meta["uid"] = new_uid();
  meta["creationTimestamp"] = now_rfc3339();
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  if (c.kind.has_generation) meta["generation"] = 1;
  else meta.erase("generation");
  if (auto err = admit_custom_create(c.kind)) return error_response(*err);
  reset_status(c.kind, obj);
  prepare_csr_create(c, obj);
  apply_kind_defaults(c.kind, obj);
  if (c.kind.strategy.computed_on_create) c.kind.strategy.computed_on_create(obj);
  if (track) track_fields(c, nullptr, obj);

  if (auto err = admit_runtime_class(c, obj)) return error_response(*err);
  // Mutating webhooks see the defaulted object; what they change is defaulted again.
  const bool dynamic = c.server.admission().active();
  if (dynamic) {
    AdmissionRequest a{"CREATE", "", name, c.info.namespace_, std::move(obj), nullptr,
                       write_options(c, "CreateOptions")};
    auto err = c.server.admission().mutate(c, a);
    obj = std::move(a.object);
    if (err) return error_response(*err);
    apply_kind_defaults(c.kind, obj);
  }

  if (auto err = validate_object(c, obj, nullptr)) return error_response(*err);
  if (auto err = admit_csr(c, obj, nullptr)) return error_response(*err);
  if (auto err = admit_namespace(c, c.info.namespace_, name)) return error_response(*err);
  if (auto err = admit_pod_security(c, obj, nullptr)) return error_response(*err);
  if (auto err = admit_host_policy(c, obj, nullptr, name)) return error_response(*err);
  if (dynamic) {
    AdmissionRequest a{"CREATE", "", name, c.info.namespace_, obj, nullptr,
                       write_options(c, "CreateOptions")};
    if (auto err = c.server.admission().validate(c, a)) return error_response(*err);
  }
  if (c.kind.strategy.allocates_cluster_ips) {
    if (auto err = c.server.service_ips().assign(obj, c.dry_run())) return error_response(*err);
  }
  // Last, as kube runs ResourceQuota after every other admission plugin.
  if (auto err = admit_gpu_quota(c, obj, name)) return error_response(*err);
  for (auto& w : kind_warnings(c.kind, obj)) c.warnings.push_back(std::move(w));
  if (Status s = to_storage_version(c.server, c.kind, obj); !s.is_ok())
    return error_response(conversion_error(s));
  if (c.dry_run()) return object_response(c, 201, std::move(obj));

  // An answer in the stored version is the stored bytes plus the
  // resourceVersion (JSON: no second encoding) or, for a client that prefers
  // protobuf, the object encoded once as protobuf.
  std::string_view accept = c.req.header("Accept");
  const bool in_stored_version = !wants_table(accept) &&
                                 str_at(obj, "apiVersion") == r.gv.api_version() &&
                                 str_at(obj, "kind") == r.kind;
  // Custom resources have no protobuf: they are answered in JSON.
  const bool protobuf_answer = in_stored_version && !r.is_custom && prefers_protobuf(accept);
  const bool answer_stored = in_stored_version && !protobuf_answer;
  // The handler's thread need not wait for the commit.
  if (may_defer && in_stored_version && create_may_defer(c.server, c.kind)) {
    auto stored = std::make_shared<const std::string>(encode_for_storage(obj));
    // The protobuf answer is encoded when the revision is known; the object
    // is kept for it (the stored JSON would have to be parsed again).
    std::shared_ptr<json> kept;
    if (protobuf_answer) kept = std::make_shared<json>(std::move(obj));
    auto deferred = std::make_shared<http::DeferredResponse>();
    c.server.backend().create_async(
        c.key(name), *stored,
        // `kinds` keeps `resource` alive (a custom kind may be removed meanwhile).
        [deferred, stored, kept, name, kinds = c.kinds,
         resource = &r](Result<storage::KeyValue> kv) {
          if (!kv.is_ok()) {
            deferred->complete(error_response(storage_error(*resource, kv.status(), name)));
          } else if (auto answer = kept ? protobuf_answer_of(*kept, kv->mod_revision)
                                        : stored_answer(*stored, kv->mod_revision)) {
            deferred->complete(std::move(*answer));
          } else {
            deferred->complete(error_response(Status::internal(
                "the created object has no metadata to add its resourceVersion to")));
          }
        });
    c.created_name = name;
    http::Response later;
    later.deferred = std::move(deferred);
    return later;
  }

  std::string stored = encode_for_storage(obj);
  auto kv = c.server.backend().create(c.key(name), stored);
  if (!kv.is_ok()) {
    if (c.kind.strategy.allocates_cluster_ips) c.server.service_ips().release(obj);
    release_gpu_quota(c, obj);
    return error_response(storage_error(c, kv.status(), name));
  }
  c.created_name = name;
  if (answer_stored) {
    if (auto answer = stored_answer(stored, kv->mod_revision)) return std::move(*answer);
  }
  obj["metadata"]["resourceVersion"] = std::to_string(kv->mod_revision);
  return object_response(c, 201, std::move(obj));
}

}  // namespace vkube::apiserver
