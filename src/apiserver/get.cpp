// GET of one object (and of its status and scale subresources).
#include "custom_conversion.h"
#include "object.h"
#include "scale.h"
#include "server_impl.h"

namespace vkube::apiserver {

Result<json> read_object(Context& c, const std::string& name) {
  auto kv = c.server.backend().get(c.key(name));
  if (!kv.is_ok()) return kv.status();
  auto obj = decode_stored(*kv);
  // Writes start from the object in the version the request is served in.
  if (obj.is_ok()) builtin::convert_to(c.kind.strategy, *obj, c.resource().gv.version);
  return obj;
}

http::Response handle_get(Context& c) {
  auto rv = parse_resource_version(c.param("resourceVersion").value_or(""));
  if (!rv.is_ok()) return error_response(rv.status());
  auto obj = read_object(c, c.info.name);
  if (!obj.is_ok()) return error_response(storage_error(c, obj.status(), c.info.name));
  if (c.info.subresource == "scale") {
    // The scale paths are the served version's: a webhook-converted object is converted first.
    Status s = convert_custom(c.server, c.kind, *obj, c.resource().gv.api_version());
    if (!s.is_ok()) return error_response(conversion_error(s));
    return json_response(200, to_scale(c.kind, *obj));
  }
  return object_response(c, 200, std::move(obj).value());
}

}  // namespace vkube::apiserver
