// OpenAPI v3: the root lists a document per group-version; each document
// has the operations of its kinds (tagged x-kubernetes-group-version-kind,
// PATCH taking fieldValidation, so kubectl validates server-side) and a
// schema per kind derived from the type registry (vkube/schema), with every
// field, so `kubectl explain` walks the real types. /openapi/v2 is not
// served (clients then use v3).
#include <functional>
#include <mutex>

#include "definition.h"
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

json param(const char* name, const char* in, const char* type, const char* description) {
  return {{"name", name},
          {"in", in},
          {"description", description},
          {"schema", {{"type", type}, {"uniqueItems", true}}}};
}

json operation(const api::Resource& r, const std::string& verb, const std::string& action,
               const std::string& op_id, bool body, std::vector<json> params) {
  json op = {{"operationId", op_id},
             {"x-kubernetes-action", action},
             {"x-kubernetes-group-version-kind", gvk(r)},
             {"responses", {{"200", {{"description", "OK"}}}, {"401", {{"description", "Unauthorized"}}}}}};
  params.push_back(param("dryRun", "query", "string", "When present, do not persist: All"));
  if (verb != "get" && verb != "delete") {
    params.push_back(param("fieldManager", "query", "string", "Name of the actor making the change"));
    params.push_back(param("fieldValidation", "query", "string",
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
    if (r.namespaced) common.push_back(param("namespace", "path", "string", "object name and auth scope"));
    if (k->create_only) {  // reviews: POST only
      paths[base + ns_path + "/" + r.plural] = {
          {"post", operation(r, "post", "post", "create" + name, true, common)}};
      continue;
    }
    std::vector<json> named = common;
    named.push_back(param("name", "path", "string", "name of the object"));
    paths[base + ns_path + "/" + r.plural] = {
        {"get", operation(r, "get", "list", "list" + name, false, common)},
        {"post", operation(r, "post", "post", "create" + name, true, common)}};
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

}  // namespace

http::Response handle_openapi(Server& s, const http::Request& req) {
  OpenApiCache& cache = s.openapi_cache();
  std::string path = req.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path == "/openapi/v2")
    return error_response(Status::not_found("the server could not find the requested resource"));
  if (!path.starts_with("/openapi/v3"))
    return error_response(Status::not_found("the server could not find the requested resource"));

  std::lock_guard lock(cache.mu);
  refresh(s, cache);
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
