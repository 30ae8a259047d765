// GET of a collection: JSON lists and Tables.
#include "codec.h"
#include "custom_conversion.h"
#include "definition.h"
#include "list_bodies.h"
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
  // A row is no longer than its stored object and the cells (pages never
  // written stay out of memory).
  size_t rows = 0;
  for (const storage::KeyValuePtr& kv : listed.raw_items) rows += kv->value.size() + 256;
  table.reserve(rows);
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

// The answer of a LIST, read at `*revision`.
http::Response answer_list(Context& c, storage::Revision* revision) {
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
  *revision = listed->revision;
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

// What makes two LISTs' answers the same bytes: the path, the query
// (selectors, limit, continue, resourceVersion, includeObject), what the
// client accepts, and for a Table the second its ages are printed at.
std::string share_key(const Context& c) {
  std::string key = c.req.path + '?' + c.req.query + '\n' + std::string(c.req.header("Accept"));
  if (wants_table(c.req.header("Accept"))) key += '\n' + std::to_string(now_unix());
  return key;
}

http::Response shared_answer(const ListBody& answer) {
  http::Response r;
  r.status = 200;
  r.headers = answer.headers;
  // The transport sends the shared bytes; they live while an answer of
  // them is in flight, for the identical LISTs that come meanwhile.
  r.shared_body = answer.body;
  return r;
}

// The answers being shared by each server. Kept here rather than in the
// Server so that the many files including server_impl.h do not see it; a
// ListBodies outlives its server (a few bytes), and one a new server at
// the same address finds holds no body any more.
ListBodies& list_bodies(const Server& server) {
  static std::mutex mu;
  static auto* all = new std::unordered_map<const Server*, std::unique_ptr<ListBodies>>();
  std::lock_guard lock(mu);
  auto& bodies = (*all)[&server];
  if (!bodies) bodies = std::make_unique<ListBodies>();
  return *bodies;
}

// The oldest revision a shared answer may have been read at: a LIST sees
// every write acknowledged before it came, unless it asked for an older or
// a given revision (resourceVersion "0", Exact, a continue token's).
storage::Revision oldest_shareable(Context& c) {
  const std::string rv = c.param("resourceVersion").value_or("");
  if (!c.param("continue").value_or("").empty() || rv == "0" ||
      c.param("resourceVersionMatch").value_or("") == "Exact")
    return 0;
  if (!rv.empty()) {
    auto parsed = parse_resource_version(rv);
    if (parsed.is_ok()) return *parsed;
  }
  return c.server.backend().current_revision();
}

}  // namespace

http::Response handle_list(Context& c) {
  // Network clients only: the server's own components read answers in
  // process, and a burst is what clients send.
  // A YAML answer is re-encoded from the JSON one, answer by answer.
  if (c.req.remote.empty() || prefers_yaml(c.req.header("Accept"))) {
    storage::Revision revision = 0;
    return answer_list(c, &revision);
  }
  const std::string key = share_key(c);
  ListBodies::Claim claim = list_bodies(c.server).claim(key, oldest_shareable(c));
  if (claim.answer.body) return shared_answer(claim.answer);
  storage::Revision revision = 0;
  http::Response r = answer_list(c, &revision);
  if (claim.build && r.status == 200 && !r.stream && !r.deferred && !r.upgrade) {
    ListBody answer{std::make_shared<const std::string>(std::move(r.body)), r.headers, revision};
    r = shared_answer(answer);
    claim.build->publish(std::move(answer));
  }
  return r;
}

}  // namespace vkube::apiserver
