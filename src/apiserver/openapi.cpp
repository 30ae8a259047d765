// OpenAPI v3: the root lists a document per group-version; each document
// has the operations of its kinds (tagged x-kubernetes-group-version-kind,
// PATCH taking fieldValidation, so kubectl validates server-side) and a
// schema per kind. Schemas are minimal until the type registry describes
// every field; /openapi/v2 is not served (clients then use v3).
#include <functional>
#include <mutex>

#include "server_impl.h"

namespace vkube::apiserver {

namespace {

std::string doc_path(const api::GroupVersion& gv) {
  return gv.group.empty() ? "api/" + gv.version : "apis/" + gv.group + "/" + gv.version;
}

std::string schema_name(const api::Resource& r) {
  std::string group = r.gv.group.empty() ? "core" : r.gv.group;
  // io.k8s.api.<group>.<version>.<Kind>, as kube names its definitions.
  std::string short_group = group.substr(0, group.find('.'));
  return "io.k8s.api." + short_group + "." + r.gv.version + "." + r.kind;
}

json gvk(const api::Resource& r) {
  return {{"group", r.gv.group}, {"version", r.gv.version}, {"kind", r.kind}};
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

json kind_schema(const api::Resource& r) {
  json props = {
      {"apiVersion", {{"type", "string"}, {"description", "APIVersion defines the versioned schema of this representation of an object."}}},
      {"kind", {{"type", "string"}, {"description", "Kind is a string value representing the REST resource this object represents."}}},
      {"metadata", {{"allOf", json::array({{{"$ref", "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}}})},
                    {"default", json::object()},
                    {"description", "Standard object's metadata."}}}};
  if (r.kind != "ConfigMap" && r.kind != "Secret" && r.kind != "ServiceAccount" &&
      r.kind != "Event" && r.kind != "Role" && r.kind != "ClusterRole" &&
      r.kind != "RoleBinding" && r.kind != "ClusterRoleBinding" && r.kind != "ControllerRevision") {
    props["spec"] = {{"type", "object"}, {"description", "Spec defines the desired state of the " + r.kind + "."},
                     {"x-kubernetes-preserve-unknown-fields", true}};
  }
  if (r.status_subresource)
    props["status"] = {{"type", "object"}, {"description", "Status is the observed state of the " + r.kind + "."},
                       {"x-kubernetes-preserve-unknown-fields", true}};
  if (r.kind == "ConfigMap" || r.kind == "Secret") {
    props["data"] = {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}};
    if (r.kind == "Secret") props["type"] = {{"type", "string"}};
    props["immutable"] = {{"type", "boolean"}};
  }
  return {{"type", "object"},
          {"description", r.kind + " (" + r.gv.api_version() + ")"},
          {"properties", props},
          {"x-kubernetes-group-version-kind", json::array({gvk(r)})}};
}

json object_meta_schema() {
  auto str = [](const char* d) { return json{{"type", "string"}, {"description", d}}; };
  json map = {{"type", "object"}, {"additionalProperties", {{"type", "string"}, {"default", ""}}}};
  return {{"type", "object"},
          {"description", "ObjectMeta is metadata that all persisted resources must have."},
          {"properties",
           {{"name", str("Name must be unique within a namespace.")},
            {"generateName", str("Prefix for a server-generated name.")},
            {"namespace", str("Namespace of the object.")},
            {"uid", str("UID is the unique in time and space value for this object.")},
            {"resourceVersion", str("An opaque value that represents the internal version of this object.")},
            {"generation", {{"type", "integer"}, {"format", "int64"}}},
            {"creationTimestamp", str("Time the object was created (RFC3339).")},
            {"deletionTimestamp", str("Time the object will be deleted (RFC3339).")},
            {"labels", map},
            {"annotations", map},
            {"finalizers", {{"type", "array"}, {"items", {{"type", "string"}}}}},
            {"ownerReferences", {{"type", "array"}, {"items", {{"type", "object"}}}}}}}};
}

std::string op_kind_name(const api::Resource& r) {
  std::string g = r.gv.group.empty() ? "Core" : r.gv.group.substr(0, r.gv.group.find('.'));
  g[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(g[0])));
  std::string v = r.gv.version;
  v[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(v[0])));
  return g + v;
}

json document(const Registry& reg, const api::GroupVersion& gv) {
  json paths = json::object();
  json schemas = json::object();
  schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"] = object_meta_schema();
  const std::string base = "/" + doc_path(gv);
  for (const Kind* k : reg.kinds_in(gv)) {
    const api::Resource& r = k->resource;
    schemas[schema_name(r)] = kind_schema(r);
    const std::string scope = r.namespaced ? "Namespaced" : "";
    const std::string ns_path = r.namespaced ? "/namespaces/{namespace}" : "";
    const std::string name = op_kind_name(r) + scope + r.kind;
    std::vector<json> common;
    if (r.namespaced) common.push_back(param("namespace", "path", "string", "object name and auth scope"));
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
  }
  return {{"openapi", "3.0.0"},
          {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
          {"paths", paths},
          {"components", {{"schemas", schemas}}}};
}

struct Cache {
  std::mutex mu;
  std::map<std::string, std::pair<std::string, std::string>> docs;  // path -> (body, hash)
};

}  // namespace

http::Response handle_openapi(Server& s, const http::Request& req) {
  static Cache cache;
  std::string path = req.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path == "/openapi/v2")
    return error_response(Status::not_found("the server could not find the requested resource"));
  if (!path.starts_with("/openapi/v3"))
    return error_response(Status::not_found("the server could not find the requested resource"));

  std::lock_guard lock(cache.mu);
  if (cache.docs.empty()) {
    for (const auto& gv : s.registry().group_versions()) {
      std::string body = document(s.registry(), gv).dump();
      char hash[32];
      std::snprintf(hash, sizeof hash, "%016zX", std::hash<std::string>{}(body));
      cache.docs[doc_path(gv)] = {std::move(body), hash};
    }
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
