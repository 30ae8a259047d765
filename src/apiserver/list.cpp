// GET of a collection: JSON lists and Tables.
#include "codec.h"
#include "custom_conversion.h"
#include "definition.h"
#include "list_common.h"
#include "object.h"
#include "table.h"

namespace vkube::apiserver {

namespace {

// A JSON list written around the stored items without decoding them (the
// common kubectl / informer list: no selector, JSON, no Table).
http::Response raw_list(Context& c, const ListOutput& listed, const json& meta) {
  std::string body =
      "{\"apiVersion\":" + json(c.resource().gv.api_version()).dump() + ",\"items\":[";
  size_t size = body.size() + 256;
  for (const auto& item : listed.raw_items) size += item->value.size() + 48;
  body.reserve(size);
  for (size_t i = 0; i < listed.raw_items.size(); ++i) {
    if (i > 0) body += ',';
    const storage::KeyValue& kv = *listed.raw_items[i];
    if (!append_with_resource_version(body, kv.value, kv.mod_revision))
      return error_response(Status::corruption("stored object " + kv.key + " has no metadata"));
  }
  body += "],\"kind\":" + json(c.resource().list_kind()).dump() + ",\"metadata\":" + meta.dump() +
          "}\n";
  http::Response r;
  r.status = 200;
  r.set_header("Content-Type", "application/json");
  r.body = std::move(body);
  return r;
}

// A Table written row by row as the objects are read.
http::Response table_list(Context& c, ListOutput& listed, const json& meta) {
  TableWriter table(c.kind, parse_include_object(c.param("includeObject").value_or("")), meta);
  for (const storage::KeyValuePtr& kv : listed.raw_items) {
    if (!table.add_stored(kv))
      return error_response(Status::corruption("stored object " + kv->key + " is not valid JSON"));
  }
  for (json& obj : listed.items) {
    table.add(obj);
    obj = json();  // each decoded object goes once its row is written
  }
  http::Response r;
  r.status = 200;
  r.set_header("Content-Type", "application/json");
  r.body = table.finish();
  return r;
}

}  // namespace

http::Response handle_list(Context& c) {
  ListQuery q = ListQuery::from_context(c, /*paged=*/true);
  const std::string accept(c.req.header("Accept"));
  const bool table = wants_table(accept);
  // Items are re-served as stored unless something must look into them:
  // protobuf, or a custom kind shown in another version than stored. A
  // Table of a built-in kind reads what its columns need from stored text.
  const bool raw =
      !prefers_protobuf(accept) &&
      (table ? !c.kind.custom
             : !c.kind.custom || (c.kind.custom->storage_version == c.resource().gv.version &&
                                  !converts_by_webhook(c.kind)));
  auto listed = list_objects(c, q, raw);
  if (!listed.is_ok()) return error_response(listed.status());
  json meta = {{"resourceVersion", std::to_string(listed->revision)}};
  if (!listed->continue_token.empty()) meta["continue"] = listed->continue_token;

  if (converts_by_webhook(c.kind)) {
    // One ConversionReview for every item not in the version asked for, as kube sends.
    std::vector<json*> items;
    for (json& obj : listed->items) items.push_back(&obj);
    Status s = convert_custom(c.server, c.kind, items, c.resource().gv.api_version());
    if (!s.is_ok()) return error_response(conversion_error(s));
  }
  if (table) return table_list(c, *listed, meta);
  if (raw && listed->items.empty() && !listed->raw_items.empty()) return raw_list(c, *listed, meta);
  json items = json::array();
  // Custom resources are stored in the CRD's storage version: each item
  // is shown in the version asked for (the None conversion).
  const bool custom = c.resource().is_custom;
  for (json& obj : listed->items) {
    if (custom) obj["apiVersion"] = c.resource().gv.api_version();
    items.push_back(std::move(obj));
  }
  return body_response(c.req, 200,
                       {{"kind", c.resource().list_kind()},
                        {"apiVersion", c.resource().gv.api_version()},
                        {"metadata", std::move(meta)},
                        {"items", std::move(items)}});
}

}  // namespace vkube::apiserver
