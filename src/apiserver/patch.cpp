// PATCH: JSON patch, merge patch and strategic merge patch of an object, or
// of its status or scale; apply patches go to handle_apply (apply_patch.cpp).
#include "field_manager.h"
#include "object.h"
#include "patch_engine.h"
#include "scale.h"
#include "server_impl.h"
#include "vkube/schema/validation.h"

namespace vkube::apiserver {

http::Response handle_patch(Context& c) {
  auto type = patch_type(c.req.header("Content-Type"));
  if (!type.is_ok()) return error_response(type.status());
  if (*type == PatchType::kStrategic && c.resource().is_custom)
    return error_response(Status(Code::kUnsupportedMediaType,
                                 "the body of the request was in an unknown format - accepted "
                                 "media types include: application/json-patch+json, "
                                 "application/merge-patch+json, application/apply-patch+yaml"));
  if (*type == PatchType::kApply) return handle_apply(c);
  if (auto err = check_write_options(c, "PatchOptions", false)) return error_response(*err);
  const std::string kind = c.resource().kind;
  const api::Resource& r = c.resource();
  const schema::Message* message =
      r.is_custom ? nullptr : schema::Registry::get().find_kind(r.gv.group, r.gv.version, r.kind);
  const schema::Message* scale = schema::Registry::get().find_kind("autoscaling", "v1", "Scale");
  // Parsed once, not on every retry of the update loop.
  std::vector<std::string> duplicates;
  const json patch = schema::parse_json(c.req.body, notes_duplicates(c) ? &duplicates : nullptr);
  return guaranteed_update(c, [&](const json& cur) -> Result<json> {
    // Reported after the object is read, so a missing object is still a 404.
    if (patch.is_discarded()) return Status::bad_request("the patch is not valid JSON");
    if (c.info.subresource == "scale") {
      auto patched = apply_patch(*type, to_scale(c.kind, cur), patch, scale);
      if (!patched.is_ok()) return patched.status();
      json next = cur;
      VKUBE_RETURN_IF_ERROR(apply_scale(c.kind, *patched, next));
      // As for the object itself: only a resourceVersion the patch set is a
      // precondition (else a race with the controller's status write is a 409).
      std::string rv = str_at((*patched)["metadata"], "resourceVersion");
      if (rv != str_at(cur["metadata"], "resourceVersion"))
        next["metadata"]["resourceVersion"] = rv;
      else
        next["metadata"].erase("resourceVersion");
      return next;
    }
    // The one copy of the object this patch makes: merged in place.
    json base = cur;
    base["apiVersion"] = c.resource().gv.api_version();
    base["kind"] = kind;
    auto patched = patch_object(*type, std::move(base), cur, patch, message);
    if (!patched.is_ok()) return patched.status();
    json next = std::move(patched).value();
    if (!next.is_object()) return Status::bad_request("the patched object is not a JSON object");
    if (!next.contains("metadata") || !next["metadata"].is_object())
      return Status::bad_request("the patch removed the object's metadata");
    VKUBE_RETURN_IF_ERROR(check_fields(c, next, duplicates));
    // A resourceVersion the patch did not change is no precondition.
    if (str_at(next["metadata"], "resourceVersion") == str_at(cur["metadata"], "resourceVersion"))
      next["metadata"].erase("resourceVersion");
    return next;
  });
}

}  // namespace vkube::apiserver
