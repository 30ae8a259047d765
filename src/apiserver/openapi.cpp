// OpenAPI v3: the root lists a document per group-version; each document
// has the operations of its kinds (tagged x-kubernetes-group-version-kind,
// PATCH taking fieldValidation, so kubectl validates server-side) and a
// schema per kind derived from the type registry (vkube/schema), with every
// field, so `kubectl explain` walks the real types. /openapi/v2 (Swagger
// 2.0, JSON or gnostic's protobuf) is made from the same documents (v2_document).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <mutex>

#include "definition.h"
#include "openapi_params.h"
#include "openapi_v2_proto.h"
#include "server_impl.h"
#include "vkube/schema/openapi.h"

namespace vkube::apiserver {

namespace {

std::string doc_path(const api::GroupVersion& gv) {
  return gv.group.empty() ? "api/" + gv.version : "apis/" + gv.group + "/" + gv.version;
}

const schema::Message* message_of(const api::Resource& r) {
  return schema::Registry::get().find_kind(r.gv.group, r.gv.version, r.kind);
}

// "stable.example.com" -> "com.example.stable", as kube names CRD schemas.
std::string reversed_group(const std::string& group) {
  std::string out;
  size_t end = group.size();
  while (true) {
    size_t dot = group.rfind('.', end == 0 ? 0 : end - 1);
    if (dot == std::string::npos || end == 0) {
      if (!out.empty()) out += '.';
      out += group.substr(0, end);
      break;
    }
    if (!out.empty()) out += '.';
    out += group.substr(dot + 1, end - dot - 1);
    end = dot;
  }
  return out;
}

std::string schema_name(const api::Resource& r) {
  if (r.is_custom) return reversed_group(r.gv.group) + "." + r.gv.version + "." + r.kind;
  if (const schema::Message* m = message_of(r)) return m->openapi_name();
  std::string group = r.gv.group.empty() ? "core" : r.gv.group;
  std::string short_group = group.substr(0, group.find('.'));
  return "io.k8s.api." + short_group + "." + r.gv.version + "." + r.kind;
}

json gvk(const api::Resource& r) {
  return {{"group", r.gv.group}, {"version", r.gv.version}, {"kind", r.kind}};
}

json meta_ref_to(const std::string& component) {
  return {{"allOf", json::array({{{"$ref", "#/components/schemas/" + component}}})}};
}

json operation(const api::Resource& r, const std::string& verb, const std::string& action,
               const std::string& op_id, bool body, std::vector<json> params) {
  json op = {{"operationId", op_id},
             {"description", op_description(r, action, op_id)},
             {"x-kubernetes-action", action},
             {"x-kubernetes-group-version-kind", gvk(r)},
             {"responses",
              {{"200", {{"description", "OK"}}}, {"401", {{"description", "Unauthorized"}}}}}};
  params.push_back(
      openapi_param("pretty", "query", "string",
                    "If 'true', the output is indented (vkube writes it compact either way)."));
  if (action == "list" || action == "watch" || action == "watchlist" ||
      action == "deletecollection")
    add_list_params(params);
  if (action == "delete" || action == "deletecollection") add_delete_params(params);
  if (verb != "get")
    params.push_back(
        openapi_param("dryRun", "query", "string", "When present, do not persist: All"));
  if (verb != "get" && verb != "delete") {
    params.push_back(
        openapi_param("fieldManager", "query", "string", "Name of the actor making the change"));
    params.push_back(
        openapi_param("fieldValidation", "query", "string",
                      "Ignore, Warn or Strict handling of unknown and duplicate fields"));
  }
  op["parameters"] = params;
  if (body) {
    json ref = {{"schema", {{"$ref", "#/components/schemas/" + schema_name(r)}}}};
    if (verb == "patch") {
      json patch_schema = {{"schema", {{"type", "object"}}}};
      // Strategic merge is deliberately not listed: kubectl then computes
      // strategic patches from its compiled-in types (see CLIENT-SURFACE §3).
      op["requestBody"] = {{"content",
                            {{"application/json-patch+json", patch_schema},
                             {"application/merge-patch+json", patch_schema},
                             {"application/apply-patch+yaml", patch_schema}}},
                           {"required", true}};
    } else {
      op["requestBody"] = {{"content", {{"application/json", ref}, {"application/yaml", ref}}},
                           {"required", true}};
    }
  }
  return op;
}

// A kind the registry does not describe (none today among the built-ins):
// an open object, so validation lets it through.
json open_schema(const api::Resource& r) {
  return {{"type", "object"},
          {"description", r.kind + " (" + r.gv.api_version() + ")"},
          {"x-kubernetes-preserve-unknown-fields", true},
          {"x-kubernetes-group-version-kind", json::array({gvk(r)})}};
}

constexpr std::string_view kObjectMeta = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";
constexpr std::string_view kListMeta = "k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta";

json meta_ref(std::string_view proto_name) {
  const schema::Message* m = schema::Registry::get().find(proto_name);
  if (m == nullptr) return {{"type", "object"}};
  return {{"allOf", json::array({{{"$ref", schema::openapi_ref(*m)}}})}};
}

// A custom kind's schema as kube publishes it: the CRD's openAPIV3Schema
// with apiVersion, kind and metadata (ObjectMeta) added, and its list.
void custom_schemas(const Kind& k, json& schemas, std::vector<const schema::Message*>& roots) {
  const api::Resource& r = k.resource;
  json s = k.custom && k.custom->schema.is_object() ? k.custom->schema
                                                     : json{{"type", "object"},
                                                            {"x-kubernetes-preserve-unknown-fields", true}};
  if (!s.contains("properties") || !s["properties"].is_object()) s["properties"] = json::object();
  s["properties"]["apiVersion"] = {{"type", "string"},
                                   {"description", "APIVersion defines the versioned schema of this representation of an object."}};
  s["properties"]["kind"] = {{"type", "string"},
                             {"description", "Kind is a string value representing the REST resource this object represents."}};
  s["properties"]["metadata"] = meta_ref(kObjectMeta);
  s["x-kubernetes-group-version-kind"] = json::array({gvk(r)});
  schemas[schema_name(r)] = std::move(s);
  json list_gvk = gvk(r);
  list_gvk["kind"] = r.list_kind();
  schemas[schema_name(r) + "List"] = {
      {"type", "object"},
      {"description", r.list_kind() + " is a list of " + r.kind},
      {"required", json::array({"items"})},
      {"properties",
       {{"apiVersion", {{"type", "string"}}},
        {"kind", {{"type", "string"}}},
        {"items", {{"type", "array"}, {"items", meta_ref_to(schema_name(r))}}},
        {"metadata", meta_ref(kListMeta)}}},
      {"x-kubernetes-group-version-kind", json::array({list_gvk})}};
  for (std::string_view name : {kObjectMeta, kListMeta})
    if (const schema::Message* m = schema::Registry::get().find(name)) roots.push_back(m);
}

std::string op_kind_name(const api::Resource& r) {
  std::string g = r.gv.group.empty() ? "Core" : r.gv.group.substr(0, r.gv.group.find('.'));
  g[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(g[0])));
  std::string v = r.gv.version;
  v[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(v[0])));
  return g + v;
}

json document(const KindSet& reg, const api::GroupVersion& gv) {
  json paths = json::object();
  json schemas = json::object();
  std::vector<const schema::Message*> roots;
  const std::string base = "/" + doc_path(gv);
  for (const Kind* k : reg.kinds_in(gv)) {
    const api::Resource& r = k->resource;
    if (r.is_custom) {
      custom_schemas(*k, schemas, roots);
    } else if (const schema::Message* m = message_of(r)) {
      roots.push_back(m);
      if (const schema::Message* list = schema::Registry::get().find_kind(r.gv.group, r.gv.version, r.list_kind()))
        roots.push_back(list);
    } else {
      schemas[schema_name(r)] = open_schema(r);
    }
    const std::string scope = r.namespaced ? "Namespaced" : "";
    const std::string ns_path = r.namespaced ? "/namespaces/{namespace}" : "";
    const std::string name = op_kind_name(r) + scope + r.kind;
    std::vector<json> common;
    if (r.namespaced)
      common.push_back(openapi_param("namespace", "path", "string", "object name and auth scope"));
    if (k->create_only) {  // reviews: POST only
      paths[base + ns_path + "/" + r.plural] = {
          {"post", operation(r, "post", "post", "create" + name, true, common)}};
      continue;
    }
    std::vector<json> named = common;
    named.push_back(openapi_param("name", "path", "string", "name of the object"));
    json& collection = paths[base + ns_path + "/" + r.plural];
    collection = {{"get", operation(r, "get", "list", "list" + name, false, common)},
                  {"post", operation(r, "post", "post", "create" + name, true, common)}};
    const auto has_verb = [&](const char* v) {
      return std::find(r.verbs.begin(), r.verbs.end(), v) != r.verbs.end();
    };
    if (has_verb("deletecollection"))
      collection["delete"] =
          operation(r, "delete", "deletecollection", "deletecollection" + name, false, common);
    if (has_verb("watch")) {
      // The deprecated watch paths, which kube still serves and documents.
      paths[base + "/watch" + ns_path + "/" + r.plural] = {
          {"get", operation(r, "get", "watchlist", "watch" + name + "List", false, common)}};
      paths[base + "/watch" + ns_path + "/" + r.plural + "/{name}"] = {
          {"get", operation(r, "get", "watch", "watch" + name, false, named)}};
    }
    if (r.namespaced) {  // across namespaces: the list, and its watch
      const std::string all = op_kind_name(r) + r.kind + "ForAllNamespaces";
      paths[base + "/" + r.plural] = {
          {"get", operation(r, "get", "list", "list" + all, false, {})}};
      if (has_verb("watch"))
        paths[base + "/watch/" + r.plural] = {
            {"get",
             operation(r, "get", "watchlist",
                       "watch" + op_kind_name(r) + r.kind + "ListForAllNamespaces", false, {})}};
    }
    paths[base + ns_path + "/" + r.plural + "/{name}"] = {
        {"get", operation(r, "get", "get", "read" + name, false, named)},
        {"put", operation(r, "put", "put", "replace" + name, true, named)},
        {"patch", operation(r, "patch", "patch", "patch" + name, true, named)},
        {"delete", operation(r, "delete", "delete", "delete" + name, false, named)}};
    if (r.status_subresource)
      paths[base + ns_path + "/" + r.plural + "/{name}/status"] = {
          {"get", operation(r, "get", "get", "read" + name + "Status", false, named)},
          {"put", operation(r, "put", "put", "replace" + name + "Status", true, named)},
          {"patch", operation(r, "patch", "patch", "patch" + name + "Status", true, named)}};
    if (r.plural == "pods" && gv.group.empty()) {
      if (const Kind* b = reg.find("", "v1", "bindings"))
        paths[base + ns_path + "/pods/{name}/binding"] = {
            {"post",
             operation(b->resource, "post", "post", "create" + name + "Binding", true, named)}};
    }
  }
  json generated = schema::openapi_components(roots);
  for (auto it = generated.begin(); it != generated.end(); ++it) schemas[it.key()] = std::move(it.value());
  return {{"openapi", "3.0.0"},
          {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
          {"paths", paths},
          {"components", {{"schemas", schemas}}}};
}

std::pair<std::string, std::string> render(const KindSet& reg, const api::GroupVersion& gv) {
  std::string body = document(reg, gv).dump();
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016zX", std::hash<std::string>{}(body));
  return {std::move(body), hash};
}

// Brings the cached documents up to date: the built-in group versions are
// rendered once, the custom ones again whenever the registry changed.
void refresh(Server& s, OpenApiCache& cache) {
  const uint64_t generation = s.registry().generation();
  if (!cache.docs.empty() && cache.generation == generation) return;
  std::shared_ptr<const KindSet> snapshot = s.registry().snapshot();
  if (cache.docs.empty())
    for (const auto& gv : s.registry().builtin_set().group_versions())
      cache.docs[doc_path(gv)] = render(*snapshot, gv);
  for (auto it = cache.docs.begin(); it != cache.docs.end();)
    it = cache.custom.contains(it->first) ? cache.docs.erase(it) : std::next(it);
  cache.custom.clear();
  for (const auto& gv : snapshot->group_versions()) {
    std::string path = doc_path(gv);
    if (cache.docs.contains(path)) continue;
    cache.docs[path] = render(*snapshot, gv);
    cache.custom.insert(path);
  }
  cache.generation = generation;
}

// Swagger 2.0 from the OpenAPI 3 documents, for clients that still read
// /openapi/v2: schemas under definitions, $refs renamed, single-ref allOf
// wrappers undone, bodies and responses as v2 spells them.
void to_v2_schema(json& j) {
  if (j.is_array()) {
    for (json& v : j) to_v2_schema(v);
    return;
  }
  if (!j.is_object()) return;
  if (auto a = j.find("allOf"); a != j.end() && a->is_array() && a->size() == 1 &&
                                (*a)[0].is_object() && (*a)[0].contains("$ref")) {
    json ref = (*a)[0]["$ref"];
    j.erase("allOf");
    j["$ref"] = std::move(ref);
  }
  if (auto r = j.find("$ref"); r != j.end() && r->is_string()) {
    const std::string ref = r->get<std::string>();
    if (ref.starts_with("#/components/schemas/"))
      *r = "#/definitions/" + ref.substr(std::string("#/components/schemas/").size());
  }
  j.erase("nullable");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "properties" && it->is_object()) {
      for (auto p = it->begin(); p != it->end(); ++p) to_v2_schema(*p);  // keys are field names
    } else {
      to_v2_schema(*it);
    }
  }
}

void to_v2_parameters(json& params) {
  if (!params.is_array()) return;
  for (json& p : params) {
    if (!p.is_object()) continue;
    auto sch = p.find("schema");
    if (sch != p.end() && sch->is_object() && sch->contains("type")) {
      json type = (*sch)["type"];
      p.erase("schema");
      p["type"] = std::move(type);
    }
    if (p.value("in", "") == "path") p["required"] = true;  // Swagger 2.0 wants it said
  }
}

json to_v2_operation(json op) {
  json params = op.value("parameters", json::array());
  to_v2_parameters(params);
  if (auto body = op.find("requestBody"); body != op.end() && body->is_object()) {
    const json& content = body->value("content", json::object());
    json consumes = json::array();
    json schema = json::object();
    for (auto it = content.begin(); it != content.end(); ++it) {
      consumes.push_back(it.key());
      if (schema.empty()) schema = it->value("schema", json::object());
    }
    to_v2_schema(schema);
    params.push_back({{"name", "body"}, {"in", "body"}, {"required", true}, {"schema", schema}});
    op["consumes"] = std::move(consumes);
    op.erase("requestBody");
  }
  if (auto rs = op.find("responses"); rs != op.end() && rs->is_object()) {
    json produces = json::array();
    for (auto it = rs->begin(); it != rs->end(); ++it) {
      json& r = it.value();
      if (!r.is_object() || !r.contains("content")) continue;
      json schema;
      for (auto c = r["content"].begin(); c != r["content"].end(); ++c) {
        if (std::find(produces.begin(), produces.end(), c.key()) == produces.end())
          produces.push_back(c.key());
        if (schema.is_null()) schema = c->value("schema", json::object());
      }
      r.erase("content");
      if (!schema.is_null()) {
        to_v2_schema(schema);
        r["schema"] = std::move(schema);
      }
    }
    if (!produces.empty()) op["produces"] = std::move(produces);
  }
  op["parameters"] = std::move(params);
  return op;
}

std::string v2_document(const OpenApiCache& cache) {
  json paths = json::object();
  json definitions = json::object();
  for (const auto& [path, doc] : cache.docs) {
    json v3 = json::parse(doc.first, nullptr, false);
    if (!v3.is_object()) continue;
    json& schemas = v3["components"]["schemas"];
    for (auto it = schemas.begin(); it != schemas.end(); ++it) {
      json schema = std::move(it.value());
      to_v2_schema(schema);
      definitions[it.key()] = std::move(schema);
    }
    json& ps = v3["paths"];
    for (auto it = ps.begin(); it != ps.end(); ++it) {
      json item = json::object();
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (m.key() == "parameters") {
          json params = m.value();
          to_v2_parameters(params);
          item["parameters"] = std::move(params);
        } else if (m->is_object()) {
          item[m.key()] = to_v2_operation(std::move(m.value()));
        }
      }
      paths[it.key()] = std::move(item);
    }
  }
  json parameters = share_parameters(paths);
  return json{{"swagger", "2.0"},
              {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
              {"paths", std::move(paths)},
              {"definitions", std::move(definitions)},
              {"parameters", std::move(parameters)}}
      .dump();
}

// The v2 document of the current v3 documents, as JSON and as protobuf, made again only when
// one of them changed (their hashes are the key). Called under cache.mu.
struct V2Document {
  std::string json, protobuf, hash;
};

const V2Document& v2_of(const OpenApiCache& cache) {
  static std::string last;  // the key `out` was made for
  static V2Document out;
  std::string key;
  for (const auto& [path, doc] : cache.docs) key += path + "=" + doc.second + ";";
  if (last != key || out.json.empty()) {
    out.json = v2_document(cache);
    out.protobuf = openapi_v2_protobuf(json::parse(out.json));
    char hash[32];
    std::snprintf(hash, sizeof hash, "%016zX", std::hash<std::string>{}(out.json));
    out.hash = hash;
    last = std::move(key);
  }
  return out;
}

}  // namespace

http::Response handle_openapi(Server& s, const http::Request& req) {
  OpenApiCache& cache = s.openapi_cache();
  std::string path = req.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path != "/openapi/v2" && !path.starts_with("/openapi/v3"))
    return error_response(Status::not_found("the server could not find the requested resource"));

  std::lock_guard lock(cache.mu);
  refresh(s, cache);
  if (path == "/openapi/v2") {
    // JSON, or gnostic's protobuf form, which is all kubectl asks for (it
    // validates create-only kinds such as TokenReview with it).
    const std::string accept(req.header("Accept"));
    const size_t proto_at = accept.find("application/com.github.proto-openapi.spec.v2");
    const size_t json_at = accept.find("json");
    const bool protobuf = proto_at != std::string::npos &&
                          (json_at == std::string::npos || proto_at < json_at);
    if (!protobuf && !accept.empty() && json_at == std::string::npos &&
        accept.find("*/*") == std::string::npos)
      return error_response(Status(Code::kNotAcceptable,
                                   "only the following media types are accepted: "
                                   "application/json, " + std::string(kOpenApiV2Protobuf)));
    const V2Document& doc = v2_of(cache);
    http::Response r;
    r.status = 200;
    r.set_header("Content-Type", protobuf ? kOpenApiV2Protobuf : "application/json");
    r.set_header("Etag", "\"" + doc.hash + "\"");
    r.set_header("Vary", "Accept");
    if (req.header("If-None-Match") == "\"" + doc.hash + "\"") {
      r.status = 304;
      return r;
    }
    r.body = protobuf ? doc.protobuf : doc.json;
    return r;
  }
  if (path == "/openapi/v3") {
    json paths = json::object();
    for (const auto& [p, doc] : cache.docs)
      paths[p] = {{"serverRelativeURL", "/openapi/v3/" + p + "?hash=" + doc.second}};
    return json_response(200, {{"paths", paths}});
  }
  auto it = cache.docs.find(path.substr(std::string("/openapi/v3/").size()));
  if (it == cache.docs.end())
    return error_response(Status::not_found("the server could not find the requested resource"));
  http::Response r;
  r.status = 200;
  r.set_header("Content-Type", "application/json");
  r.set_header("Etag", "\"" + it->second.second + "\"");
  if (req.header("If-None-Match") == "\"" + it->second.second + "\"") {
    r.status = 304;
    return r;
  }
  r.body = it->second.first;
  return r;
}

}  // namespace vkube::apiserver
