// GET of a collection: JSON lists and Tables.
#include "codec.h"
#include "list_common.h"
#include "object.h"
#include "table.h"

namespace vkube::apiserver {

http::Response handle_list(Context& c) {
  ListQuery q = ListQuery::from_context(c, /*paged=*/true);
  auto listed = list_objects(c, q);
  if (!listed.is_ok()) return error_response(listed.status());
  json meta = {{"resourceVersion", std::to_string(listed->revision)}};
  if (!listed->continue_token.empty()) meta["continue"] = listed->continue_token;

  if (wants_table(c.req.header("Accept"))) {
    auto include = parse_include_object(c.param("includeObject").value_or(""));
    return json_response(200, make_table(c.kind, listed->items, include, std::move(meta)));
  }
  json items = json::array();
  // Custom resources are stored in the CRD's storage version: each item
  // is shown in the version asked for (the None conversion).
  const bool custom = c.resource().is_custom;
  for (json& obj : listed->items) {
    if (custom) obj["apiVersion"] = c.resource().gv.api_version();
    items.push_back(std::move(obj));
  }
  return body_response(c.req, 200, {{"kind", c.resource().list_kind()},
                             {"apiVersion", c.resource().gv.api_version()},
                             {"metadata", std::move(meta)},
                             {"items", std::move(items)}});
}

}  // namespace vkube::apiserver
