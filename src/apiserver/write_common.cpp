// Steps shared by create, update, patch and delete.
#include "authz.h"
#include "certificates.h"
#include "custom_resources.h"
#include "codec.h"
#include "decode_error.h"
#include "managed_fields.h"
#include "patch_decode.h"
#include "vkube/schema/validation.h"
#include "object.h"
#include "server_impl.h"
#include "table.h"
#include "vkube/api/limits.h"
#include "vkube/api/validation.h"

namespace vkube::apiserver {

Result<json> decode_body(Context& c) {
  std::vector<std::string> duplicates;  // noted while parsing, unless they are ignored
  auto decoded = decode_request_body(c.req, c.resource().is_custom,
                                     notes_duplicates(c) ? &duplicates : nullptr);
  // A body that is not a JSON object gets kube's transformDecodeError words
  // (built-in kinds; kubectl create --raw sends YAML labelled as JSON).
  const bool json_refused = !decoded.is_ok() && decoded.status().code() == Code::kBadRequest &&
                            decoded.status().message().starts_with("the body of the request");
  if (json_refused || (decoded.is_ok() && !decoded->is_object())) {
    if (!c.resource().is_custom)
      if (auto msg = unrecognized_body_message(c.resource().kind, c.req.body))
        return Status::bad_request(*msg);
  }
  if (!decoded.is_ok()) return decoded.status();
  json obj = std::move(*decoded);
  if (!obj.is_object()) return Status::bad_request("the request body must be a JSON object");
  // The transport measures JSON text only; YAML and protobuf bodies are
  // measured here, once decoded, before anything walks them.
  if (!api::within_nesting_limit(obj))
    return Status::bad_request("the request body nests objects or arrays deeper than " +
                               std::to_string(api::kMaxNestingDepth) + " levels");
  const api::Resource& r = c.resource();
  std::string api_version = str_at(obj, "apiVersion");
  std::string kind = str_at(obj, "kind");
  if (api_version.empty()) obj["apiVersion"] = r.gv.api_version();
  else if (api_version != r.gv.api_version() && c.info.subresource.empty())
    return Status::bad_request("the API version in the data (" + api_version +
                               ") does not match the expected API version (" +
                               r.gv.api_version() + ")");
  if (kind.empty()) obj["kind"] = r.kind;
  else if (kind != r.kind && c.info.subresource.empty())
    return Status::bad_request("the kind in the data (" + kind +
                               ") does not match the expected kind (" + r.kind + ")");
  if (!obj.contains("metadata")) obj["metadata"] = json::object();
  if (!obj["metadata"].is_object())
    return Status::bad_request("metadata: the field must be an object");
  if (c.info.subresource != "scale" && !r.is_custom)
    VKUBE_RETURN_IF_ERROR(check_body_decodes(
        obj, schema::Registry::get().find_kind(r.gv.group, r.gv.version, r.kind), r.kind,
        r.gv.version));
  if (c.info.subresource != "scale") VKUBE_RETURN_IF_ERROR(check_fields(c, obj, duplicates));
  return obj;
}

bool notes_duplicates(const Context& c) { return c.param("fieldValidation").value_or("Warn") != "Ignore"; }

Status check_fields(Context& c, json& obj, const std::vector<std::string>& duplicates) {
  // kube-apiserver's default when the client does not say is Warn.
  std::string mode = c.param("fieldValidation").value_or("Warn");
  if (mode != "Ignore" && mode != "Warn" && mode != "Strict")
    return Status::bad_request("fieldValidation: Unsupported value: \"" + mode +
                               "\": supported values: \"Ignore\", \"Strict\", \"Warn\"");
  const api::Resource& r = c.resource();
  std::vector<std::string> unknown;
  if (r.is_custom) {
    // A custom resource keeps only what its CRD schema specifies (pruning).
    unknown = prune_custom(c.kind, obj);
    if (mode == "Ignore") return Status::ok();
  } else {
    const schema::Message* m = schema::Registry::get().find_kind(r.gv.group, r.gv.version, r.kind);
    if (m == nullptr) return Status::ok();
    if (mode == "Ignore") {
      schema::drop_unknown_fields(*m, obj);
      return Status::ok();
    }
    // Warn drops what it reports in the same walk; Strict refuses and keeps.
    unknown = mode == "Warn" ? schema::drop_unknown_fields(*m, obj) : schema::unknown_fields(*m, obj);
  }
  std::vector<std::string> problems;
  for (auto& p : duplicates) problems.push_back("duplicate field \"" + p + "\"");
  for (auto& p : unknown) problems.push_back("unknown field \"" + p + "\"");
  if (problems.empty()) return Status::ok();
  if (mode == "Warn") {
    for (auto& p : problems)
      if (std::find(c.warnings.begin(), c.warnings.end(), p) == c.warnings.end())
        c.warnings.push_back(std::move(p));
    return Status::ok();
  }
  std::string msg = r.kind + " in version \"" + r.gv.version + "\" cannot be handled as a " + r.kind +
                    ": strict decoding error: ";
  for (size_t i = 0; i < problems.size(); ++i) msg += (i ? ", " : "") + problems[i];
  return Status::bad_request(msg);
}

std::optional<ApiError> check_dry_run_values(std::string_view options_kind,
                                             const std::vector<std::string>& values) {
  for (const std::string& v : values) {
    if (v == "All") continue;
    // metav1 validation's NotSupported, the values printed as JSON.
    const std::string detail = "Unsupported value: " + json(values).dump() + ": supported values: \"All\"";
    return ApiError(
        Status::invalid(std::string(options_kind) + ".meta.k8s.io \"\" is invalid: dryRun: " + detail),
        {{"group", "meta.k8s.io"},
         {"kind", std::string(options_kind)},
         {"causes", json::array({{{"reason", "FieldValueNotSupported"},
                                  {"message", detail},
                                  {"field", "dryRun"}}})}});
  }
  return std::nullopt;
}

Status check_dry_run(const Context& c) {
  auto v = c.param("dryRun");
  if (!v) return Status::ok();
  const std::string& verb = c.info.verb;
  const char* kind = verb == "update"                                  ? "UpdateOptions"
                     : verb == "patch"                                 ? "PatchOptions"
                     : verb == "delete" || verb == "deletecollection" ? "DeleteOptions"
                                                                       : "CreateOptions";
  auto err = check_dry_run_values(kind, {*v});
  return err ? err->status : Status::ok();
}

namespace {

void check_name(const Kind& k, const std::string& name, FieldErrors& errs) {
  std::vector<std::string> problems;
  switch (k.name_rule) {
    case builtin::NameRule::kSubdomain: problems = api::validate_dns1123_subdomain(name); break;
    case builtin::NameRule::kLabel: problems = api::validate_dns1123_label(name); break;
    case builtin::NameRule::kDns1035Label: problems = api::validate_dns1035_label(name); break;
    case builtin::NameRule::kPathSegment: problems = api::validate_path_segment_name(name); break;
  }
  for (auto& p : problems) errs.push_back({FieldError::Type::kInvalid, "metadata.name", p, name});
}

void check_string_map(const json& m, const std::string& field, bool labels, FieldErrors& errs) {
  if (m.is_null()) return;
  if (!m.is_object()) {
    errs.push_back({FieldError::Type::kInvalid, field, "must be a map of strings", m});
    return;
  }
  size_t total = 0;
  for (auto it = m.begin(); it != m.end(); ++it) {
    for (auto& p : api::validate_qualified_name(it.key()))
      errs.push_back({FieldError::Type::kInvalid, field, p, it.key()});
    if (!it.value().is_string()) {
      errs.push_back({FieldError::Type::kInvalid, field + "[" + it.key() + "]",
                      "must be a string", it.value()});
      continue;
    }
    const std::string& v = it.value().get_ref<const std::string&>();
    total += it.key().size() + v.size();
    if (labels)
      for (auto& p : api::validate_label_value(v))
        errs.push_back({FieldError::Type::kInvalid, field, p, v});
  }
  if (!labels && total > 256 * 1024)
    errs.push_back({FieldError::Type::kTooLong, field, "may not be more than 262144 bytes", {}});
}

}  // namespace

std::optional<ApiError> validate_object(Context& c, const json& obj, const json* old) {
  FieldErrors errs;
  const json& meta = obj["metadata"];
  std::string name = str_at(meta, "name");
  if (name.empty() && str_at(meta, "generateName").empty())
    errs.push_back({FieldError::Type::kRequired, "metadata.name",
                    "name or generateName is required", {}});
  else if (!name.empty())
    check_name(c.kind, name, errs);
  if (c.resource().namespaced && str_at(meta, "namespace").empty())
    errs.push_back({FieldError::Type::kRequired, "metadata.namespace", "", {}});
  check_string_map(meta.value("labels", json()), "metadata.labels", true, errs);
  check_string_map(meta.value("annotations", json()), "metadata.annotations", false, errs);
  const json finalizers = meta.value("finalizers", json());
  auto meta_errors = api::validate_owner_references(meta.value("ownerReferences", json()));
  for (auto& e : api::validate_finalizers(finalizers)) meta_errors.push_back(std::move(e));
  for (auto& e : meta_errors)
    errs.push_back({FieldError::Type::kInvalid, e.field, e.detail, e.value});
  validate_kind(c.kind, obj, old, errs);
  if (errs.empty()) {
    // On update only the finalizers this write adds are warned about.
    json old_finalizers;
    if (old && old->contains("metadata") && (*old)["metadata"].is_object())
      old_finalizers = (*old)["metadata"].value("finalizers", json());
    for (auto& w : api::finalizer_warnings(finalizers, old ? &old_finalizers : nullptr))
      c.warnings.push_back(std::move(w));
    return admit_rbac(c, obj);
  }
  return invalid(c.resource(), name, errs);
}

json write_options(const Context& c, const std::string& kind) {
  json o = {{"kind", kind}, {"apiVersion", "meta.k8s.io/v1"}};
  if (c.dry_run()) o["dryRun"] = json::array({"All"});
  if (kind != "DeleteOptions") {
    if (auto m = c.param("fieldManager")) o["fieldManager"] = *m;
  }
  return o;
}

std::optional<ApiError> admit_namespace(Context& c, const std::string& ns,
                                        const std::string& name) {
  if (!c.resource().namespaced || ns.empty()) return std::nullopt;
  const Kind* ns_kind = c.server.registry().builtin("", "v1", "namespaces");
  auto kv = c.server.backend().get(Registry::key(*ns_kind, "", ns));
  if (!kv.is_ok()) {
    if (kv.status().code() == Code::kNotFound) return not_found(ns_kind->resource, ns);
    return ApiError(kv.status());
  }
  // Every create in a namespace reads it: parse it only when its bytes can
  // hold a deletionTimestamp (a key is written as "deletionTimestamp"; the
  // same text as an escaped string value has a backslash before the quote).
  if (kv->value.find("\"deletionTimestamp\"") == std::string::npos) return std::nullopt;
  auto obj = decode_stored(*kv);
  if (obj.is_ok() && (*obj)["metadata"].contains("deletionTimestamp")) {
    json details = {{"name", ns},
                    {"kind", "namespaces"},
                    {"causes", json::array({{{"reason", "NamespaceTerminating"},
                                             {"message", "namespace " + ns + " is being terminated"},
                                             {"field", "metadata.namespace"}}})}};
    return ApiError(Status(Code::kForbidden, c.resource().group_resource() + " \"" + name +
                                                 "\" is forbidden: unable to create new content in "
                                                 "namespace " + ns +
                                                 " because it is being terminated"),
                    details);
  }
  return std::nullopt;
}

http::Response object_response(Context& c, int code, json obj) {
  builtin::convert_to(c.kind.strategy, obj, c.resource().gv.version);
  if (Status s = convert_custom(c.server, c.kind, obj, c.resource().gv.api_version()); !s.is_ok())
    return error_response(conversion_error(s));
  if (wants_table(c.req.header("Accept"))) {
    auto include = parse_include_object(c.param("includeObject").value_or(""));
    json meta = {{"resourceVersion", str_at(obj["metadata"], "resourceVersion")}};
    return json_response(code, make_table(c.kind, {obj}, include, meta));
  }
  obj["apiVersion"] = c.resource().gv.api_version();
  obj["kind"] = c.resource().kind;
  return body_response(c.req, code, obj);
}

ApiError storage_error(const Context& c, const Status& s, const std::string& name) {
  return storage_error(c.resource(), s, name);
}

ApiError storage_error(const api::Resource& r, const Status& s, const std::string& name) {
  switch (s.code()) {
    case Code::kNotFound:
      return not_found(r, name);
    case Code::kAlreadyExists:
      return already_exists(r, name);
    case Code::kConflict:
      return conflict(r, name,
                      "the object has been modified; please apply your changes to the latest "
                      "version and try again");
    case Code::kTooLarge:
      return ApiError(Status::too_large("Request entity too large: limit is 1572864 bytes"));
    default: return ApiError(s);
  }
}

namespace {

bool being_deleted_and_finalized(const Kind& k, const json& obj) {
  const json& meta = obj["metadata"];
  if (!meta.contains("deletionTimestamp")) return false;
  if (meta.contains("finalizers") && meta["finalizers"].is_array() && !meta["finalizers"].empty())
    return false;
  // Namespaces also wait for spec.finalizers (the namespace controller's).
  return !(k.strategy.held_by_own_finalizers && k.strategy.held_by_own_finalizers(obj));
}

}  // namespace

void prepare_update(Context& c, const json& cur, json& next) {
  const std::string& sub = c.info.subresource;
  if (prepare_csr_update(c, cur, next)) {
    // The CSR strategy (certificates.cpp) kept what this subresource may not change.
  } else if (sub == "status" && c.kind.strategy.prepare_status_update) {
    if (!next.contains("status")) next["status"] = json::object();
    c.kind.strategy.prepare_status_update(cur, next);
  } else if (sub == "status") {
    json body_status = next.value("status", json::object());
    next = cur;
    next["status"] = std::move(body_status);
  } else if (sub == "finalize") {
    json finalizers = next.contains("spec") ? next["spec"].value("finalizers", json::array())
                                            : json::array();
    next = cur;
    next["spec"]["finalizers"] = std::move(finalizers);
  } else if (sub == "binding") {
    // The binding wrote exactly what a binding changes (spec.nodeName,
    // annotations, the PodScheduled condition) onto the current pod.
  } else {
    if (c.resource().status_subresource) {
      if (cur.contains("status")) next["status"] = cur["status"];
      else next.erase("status");
    }
    if (c.kind.strategy.prepare_for_update) c.kind.strategy.prepare_for_update(cur, next);
  }
  if (c.kind.strategy.normalize_status) c.kind.strategy.normalize_status(next);
  json& m = next["metadata"];
  const json& cm = cur["metadata"];
  for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                        "generation", "name", "namespace"}) {
    if (cm.contains(k)) m[k] = cm[k];
    else m.erase(k);
  }
  apply_kind_defaults(c.kind, next);
  if (c.kind.has_generation && sub != "status") {
    int64_t gen = cm.value("generation", int64_t{1});
    // A custom kind without a status subresource counts status as spec.
    const bool status_is_spec = c.resource().is_custom && !c.resource().status_subresource;
    // Compared in place: copies of both objects cost more than the comparison.
    bool same = status_is_spec
                    ? apply::equal_except(next, cur, {"metadata", "apiVersion", "kind"})
                    : apply::equal_except(next, cur, {"metadata", "apiVersion", "kind", "status"});
    if (!same) ++gen;
    m["generation"] = gen;
  }
}

namespace {

// The write changes nothing but (maybe) the resourceVersion precondition.
bool unchanged(const json& cur, json& next) {
  json& meta = next["metadata"];
  json rv = meta.value("resourceVersion", json());
  meta["resourceVersion"] = cur["metadata"].value("resourceVersion", json());
  bool same = next == cur;
  if (rv.is_null()) meta.erase("resourceVersion");
  else meta["resourceVersion"] = std::move(rv);
  return same;
}

}  // namespace

Result<std::optional<json>> commit_update(Context& c, const std::string& key, const json& cur,
                                          json& next, storage::Revision expected,
                                          std::string* written) {
  storage::Backend& b = c.server.backend();
  VKUBE_RETURN_IF_ERROR(to_storage_version(c.server, c.kind, next));
  if (c.info.verb == "update" || c.info.verb == "patch")
    for (auto& w : kind_warnings(c.kind, next))
      if (std::find(c.warnings.begin(), c.warnings.end(), w) == c.warnings.end())
        c.warnings.push_back(std::move(w));
  if (being_deleted_and_finalized(c.kind, next)) {
    if (c.dry_run()) return std::optional<json>();
    auto kv = b.remove(key, expected);
    if (!kv.is_ok()) return kv.status();
    return std::optional<json>();
  }
  // As kube's storage does, a write that changes nothing is not made: the
  // object keeps its resourceVersion and watchers see no event.
  if (c.kind.strategy.convert) {
    // `cur` was read in the version served; the comparison is in the stored one.
    json stored = cur;
    builtin::convert_to(c.kind.strategy, stored, c.kind.strategy.storage_version);
    if (unchanged(stored, next)) return std::optional<json>(cur);
  } else if (unchanged(cur, next)) {
    return std::optional<json>(cur);
  }
  if (c.dry_run()) {
    // Nothing is written, so the object keeps the revision it has.
    next["metadata"]["resourceVersion"] = std::to_string(expected);
    return std::optional<json>(std::move(next));
  }
  std::string bytes = encode_for_storage(next);
  auto kv = b.update(key, bytes, expected);
  if (!kv.is_ok()) return kv.status();
  next["metadata"]["resourceVersion"] = std::to_string(kv->mod_revision);
  if (written != nullptr) *written = std::move(bytes);
  return std::optional<json>(std::move(next));
}

}  // namespace vkube::apiserver
