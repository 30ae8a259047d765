// PATCH application/apply-patch+yaml: server-side apply. The configuration
// is merged into the live object by the apply library (apply/); a missing
// object is created through the create pipeline.
#include "apply.h"
#include "authz.h"
#include "field_manager.h"
#include "object.h"
#include "server_impl.h"
#include "vkube/schema/validation.h"
#include "yaml_json.h"

namespace vkube::apiserver {

namespace {

// GroupVersionKind as Go prints it: "apps/v1, Kind=Deployment", "/v1, Kind=Pod".
std::string gvk_string(const std::string& api_version, const std::string& kind) {
  auto slash = api_version.find('/');
  std::string gv = slash == std::string::npos ? "/" + api_version : api_version;
  return gv + ", Kind=" + kind;
}

ApiError conflict_error(const std::vector<apply::Conflict>& conflicts) {
  json causes = json::array();
  for (const auto& c : conflicts)
    causes.push_back({{"reason", "FieldManagerConflict"},
                      {"message", "conflict with " + c.manager},
                      {"field", c.path}});
  return ApiError(Status::conflict(apply::conflict_message(conflicts)), {{"causes", causes}});
}

// The checks kube makes of an applied configuration before merging it.
Result<json> decode_config(Context& c) {
  const api::Resource& r = c.resource();
  auto first = c.req.body.find_first_not_of(" \t\r\n");
  const bool is_json = first != std::string::npos && c.req.body[first] == '{';
  // yaml-cpp keeps the last of duplicate keys; JSON's are noted as it is parsed.
  std::vector<std::string> duplicates;
  auto parsed =
      apply::yaml_to_json(c.req.body, is_json && notes_duplicates(c) ? &duplicates : nullptr);
  if (!parsed.is_ok()) return parsed.status();
  json config = std::move(parsed).value();
  if (!config.is_object())
    return Status::bad_request("error decoding YAML: the applied configuration must be an object");
  if (!config.contains("metadata") || config["metadata"].is_null())
    config["metadata"] = json::object();
  const json& meta = config["metadata"];
  if (!meta.is_object()) return Status::bad_request("metadata: the field must be an object");
  if (meta.contains("managedFields") && !meta["managedFields"].is_null())
    return Status::bad_request("metadata.managedFields must be nil");
  std::string api_version = str_at(config, "apiVersion"), kind = str_at(config, "kind");
  if (api_version != r.gv.api_version() || kind != r.kind)
    return Status::bad_request("invalid object type: " + gvk_string(api_version, kind));
  std::string name = str_at(meta, "name");
  if (!name.empty() && name != c.info.name)
    return Status::bad_request("the name of the object (" + name +
                               ") does not match the name on the URL (" + c.info.name + ")");
  std::string ns = str_at(meta, "namespace");
  if (r.namespaced && !ns.empty() && ns != c.info.namespace_)
    return Status::bad_request(
        "the namespace of the provided object does not match the namespace sent on the request");
  VKUBE_RETURN_IF_ERROR(check_fields(c, config, duplicates));
  return config;
}

}  // namespace

http::Response handle_apply(Context& c) {
  const api::Resource& r = c.resource();
  if (auto err = check_write_options(c, "PatchOptions", true)) return error_response(*err);
  if (Status s = check_dry_run(c); !s.is_ok()) return error_response(s);
  if (c.info.subresource == "scale")
    return error_response(Status(Code::kUnsupportedMediaType,
                                 "server-side apply of the scale subresource is not supported; "
                                 "apply spec.replicas to the object instead"));
  bool force = false;
  if (auto f = c.param("force"); f && !parse_bool(*f, &force))
    return error_response(bad_request("force: invalid value \"" + *f + "\": must be a boolean"));
  auto decoded = decode_config(c);
  if (!decoded.is_ok()) return error_response(decoded.status());
  const json config = std::move(decoded).value();

  apply::ApplyRequest req;
  req.config = &config;
  req.type = object_type_of(c);
  req.scope = scope_of(c);
  req.writer = {*c.param("fieldManager"), r.gv.api_version(), c.info.subresource, now_rfc3339()};
  req.force = force;
  req.object_ref =
      c.info.namespace_ + "/" + c.info.name + "; " + gvk_string(r.gv.api_version(), r.kind);

  std::optional<ApiError> refused;
  // What the apply made of managedFields (prepare_update may reset them).
  json fields;
  // The update read the object (else its 404 means there is none).
  bool found = false;
  auto update = [&] {
    return guaranteed_update(
        c,
        [&](const json& cur) -> Result<json> {
          found = true;
          refused.reset();
          // No copy of the live object: apiVersion and kind are never
          // tracked, and the merge takes them from the configuration.
          req.live = &cur;
          auto applied = apply::run_apply(req);
          if (!applied.is_ok()) return applied.status();
          if (!applied->conflicts.empty()) {
            refused = conflict_error(applied->conflicts);
            return refused->status;
          }
          json next = std::move(applied->object);
          // Moved, not copied, unless admission webhooks or policies see the
          // object before the hook below puts them back (a retry sets them anew).
          json& meta = next["metadata"];
          auto mf = meta.find("managedFields");
          if (mf == meta.end())
            fields = json();
          else if (c.server.admission().active())
            fields = *mf;
          else
            fields = std::move(*mf);
          // A resourceVersion the configuration does not give is no precondition.
          if (str_at(config["metadata"], "resourceVersion").empty())
            next["metadata"].erase("resourceVersion");
          return next;
        },
        [&](const json& cur, json& next) {
          if (fields.is_null())
            next["metadata"].erase("managedFields");
          else
            next["metadata"]["managedFields"] = std::move(fields);
          apply::keep_times_if_unchanged(cur, next);
        });
  };

  // The object is read once, by the update; only when it is missing does
  // apply create it (and a create that loses a race updates after all).
  for (int attempt = 0; attempt < 8; ++attempt) {
    http::Response resp = update();
    if (refused) return error_response(*refused);
    if (found || resp.status != 404 || !c.info.subresource.empty()) return resp;
    // Apply creates what does not exist yet, which needs the create verb
    // too (the chain authorized "patch"), as on kube.
    if (!rbac::is_privileged(c.user.groups)) {
      rbac::Attributes attrs = request_attributes(c.req, c.info, c.user);
      attrs.verb = "create";
      rbac::Decision d = c.server.authorizer().authorize(attrs);
      if (!d.allowed) return error_response(forbidden(attrs, d.reason));
    }
    req.live = nullptr;
    auto applied = apply::run_apply(req);
    if (!applied.is_ok()) return error_response(applied.status());
    json obj = std::move(applied->object);
    if (str_at(obj["metadata"], "name").empty()) obj["metadata"]["name"] = c.info.name;
    resp = create_object(c, std::move(obj), false);
    if (resp.status != 409 || resp.body.find("\"AlreadyExists\"") == std::string::npos) return resp;
  }
  return update();
}

}  // namespace vkube::apiserver
