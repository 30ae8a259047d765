// Discovery: aggregated (apidiscovery.k8s.io/v2) and legacy (/api, /apis,
// /api/v1, /apis/<group>[/<version>]), all derived from the registry.
#include <openssl/sha.h>

#include "crd/definition.h"
#include "certificates.h"
#include "aggregator.h"
#include "server_impl.h"
#include "vkube/common/base64.h"

namespace vkube::apiserver {

namespace {

constexpr std::string_view kAggregatedType =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

bool wants_aggregated(std::string_view accept) {
  // Honour the client's first preference: kubectl and helm list v2 first.
  auto first = accept.substr(0, accept.find(','));
  return first.find("as=APIGroupDiscoveryList") != std::string_view::npos &&
         first.find("v=v2") != std::string_view::npos && first.find("v=v2beta1") == std::string_view::npos;
}

const std::vector<std::string> kSubVerbs = {"get", "patch", "update"};

// kube's discovery.StorageVersionHash of the version objects are stored in
// (the storage version migrator and controllers' caches watch it change);
// "" for what is never stored (reviews, bindings, metrics).
std::string storage_version_hash(const KindSet& reg, const Kind& k) {
  const api::Resource& r = k.resource;
  if (k.create_only || std::find(r.verbs.begin(), r.verbs.end(), "create") == r.verbs.end())
    return "";
  std::string version = r.gv.version;
  if (k.custom) {
    version = k.custom->storage_version;
  } else if (!r.storage_of.empty()) {
    // Versions sharing storage are stored in the one that owns it.
    const std::string prefix = Registry::storage_prefix(k);
    for (const Kind* other : reg.all())
      if (!other->custom && other->resource.storage_of.empty() &&
          Registry::storage_prefix(*other) == prefix)
        version = other->resource.gv.version;
  }
  const std::string gvk = r.gv.group + "/" + version + "/" + r.kind;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(gvk.data()), gvk.size(), digest);
  return base64_encode(std::string_view(reinterpret_cast<const char*>(digest), 8));
}

json legacy_resources(const KindSet& reg, const api::GroupVersion& gv) {
  json resources = json::array();
  for (const Kind* k : reg.kinds_in(gv)) {
    const api::Resource& r = k->resource;
    json entry = {{"name", r.plural},     {"singularName", r.singular}, {"namespaced", r.namespaced},
                  {"kind", r.kind},       {"verbs", r.verbs}};
    if (!r.short_names.empty()) entry["shortNames"] = r.short_names;
    if (!r.categories.empty()) entry["categories"] = r.categories;
    if (std::string hash = storage_version_hash(reg, *k); !hash.empty())
      entry["storageVersionHash"] = std::move(hash);
    resources.push_back(entry);
    if (r.plural == "pods" && gv.group.empty())
      resources.push_back({{"name", "pods/binding"},
                           {"singularName", ""},
                           {"namespaced", true},
                           {"kind", "Binding"},
                           {"verbs", {"create"}}});
    if (r.plural == "pods" && gv.group.empty())  // kubectl drain looks for it here
      resources.push_back({{"name", "pods/eviction"}, {"singularName", ""}, {"namespaced", true},
                           {"group", "policy"}, {"version", "v1"}, {"kind", "Eviction"},
                           {"verbs", {"create"}}});
    if (r.status_subresource)
      resources.push_back({{"name", r.plural + "/status"}, {"singularName", ""},
                           {"namespaced", r.namespaced}, {"kind", r.kind}, {"verbs", kSubVerbs}});
    if (is_csr(r))
      resources.push_back({{"name", r.plural + "/approval"}, {"singularName", ""},
                           {"namespaced", false}, {"kind", r.kind}, {"verbs", kSubVerbs}});
    if (r.scale_subresource)
      resources.push_back({{"name", r.plural + "/scale"}, {"singularName", ""},
                           {"namespaced", r.namespaced}, {"group", "autoscaling"},
                           {"version", "v1"}, {"kind", "Scale"}, {"verbs", kSubVerbs}});
    if (r.plural == "namespaces" && gv.group.empty())
      resources.push_back({{"name", "namespaces/finalize"}, {"singularName", ""},
                           {"namespaced", false}, {"kind", "Namespace"}, {"verbs", {"update"}}});
    if (r.plural == "serviceaccounts" && gv.group.empty())
      resources.push_back({{"name", "serviceaccounts/token"}, {"singularName", ""},
                           {"namespaced", true}, {"group", "authentication.k8s.io"},
                           {"version", "v1"}, {"kind", "TokenRequest"}, {"verbs", {"create"}}});
  }
  return {{"kind", "APIResourceList"}, {"apiVersion", "v1"},
          {"groupVersion", gv.api_version()}, {"resources", resources}};
}

json aggregated_group(const KindSet& reg, const std::string& group) {
  json versions = json::array();
  for (const auto& gv : reg.group_versions()) {
    if (gv.group != group) continue;
    json resources = json::array();
    for (const Kind* k : reg.kinds_in(gv)) {
      const api::Resource& r = k->resource;
      json kind_ref = {{"group", gv.group}, {"version", gv.version}, {"kind", r.kind}};
      json entry = {{"resource", r.plural},
                    {"responseKind", kind_ref},
                    {"scope", r.namespaced ? "Namespaced" : "Cluster"},
                    {"singularResource", r.singular},
                    {"verbs", r.verbs}};
      if (!r.short_names.empty()) entry["shortNames"] = r.short_names;
      if (!r.categories.empty()) entry["categories"] = r.categories;
      json subs = json::array();
      if (r.plural == "pods" && gv.group.empty())
        subs.push_back({{"subresource", "binding"},
                        {"responseKind", {{"group", ""}, {"version", "v1"}, {"kind", "Binding"}}},
                        {"verbs", {"create"}}});
      if (r.plural == "pods" && gv.group.empty())
        subs.push_back({{"subresource", "eviction"},
                        {"responseKind", {{"group", "policy"}, {"version", "v1"}, {"kind", "Eviction"}}},
                        {"verbs", {"create"}}});
      if (is_csr(r))
        subs.push_back({{"subresource", "approval"}, {"responseKind", kind_ref}, {"verbs", kSubVerbs}});
      if (r.scale_subresource)
        subs.push_back({{"subresource", "scale"},
                        {"responseKind", {{"group", "autoscaling"}, {"version", "v1"}, {"kind", "Scale"}}},
                        {"verbs", kSubVerbs}});
      if (r.status_subresource)
        subs.push_back({{"subresource", "status"}, {"responseKind", kind_ref}, {"verbs", kSubVerbs}});
      if (r.plural == "serviceaccounts" && gv.group.empty())
        subs.push_back({{"subresource", "token"},
                        {"responseKind",
                         {{"group", "authentication.k8s.io"}, {"version", "v1"}, {"kind", "TokenRequest"}}},
                        {"verbs", {"create"}}});
      if (!subs.empty()) entry["subresources"] = subs;
      resources.push_back(entry);
    }
    versions.push_back({{"version", gv.version}, {"resources", resources}, {"freshness", "Current"}});
  }
  return {{"metadata", {{"name", group}, {"creationTimestamp", nullptr}}}, {"versions", versions}};
}

json api_group(const KindSet& reg, const std::string& group) {
  json versions = json::array();
  for (const auto& gv : reg.group_versions())
    if (gv.group == group)
      versions.push_back({{"groupVersion", gv.api_version()}, {"version", gv.version}});
  if (versions.empty()) return nullptr;
  return {{"name", group}, {"versions", versions}, {"preferredVersion", versions[0]}};
}

http::Response aggregated_response(const json& items) {
  http::Response r = json_response(200, {{"kind", "APIGroupDiscoveryList"},
                                         {"apiVersion", "apidiscovery.k8s.io/v2"},
                                         {"metadata", json::object()},
                                         {"items", items}});
  r.set_header("Content-Type", std::string(kAggregatedType));
  r.set_header("Vary", "Accept");
  return r;
}

}  // namespace

http::Response handle_discovery(Server& s, const http::Request& req, const RequestInfo& info) {
  std::shared_ptr<const KindSet> snapshot = s.registry().snapshot();
  const KindSet& reg = *snapshot;
  std::string path = req.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const bool aggregated = wants_aggregated(req.header("Accept"));
  auto not_found = [] {
    return error_response(Status::not_found("the server could not find the requested resource"));
  };

  if (path == "/api") {
    if (aggregated) return aggregated_response(json::array({aggregated_group(reg, "")}));
    return json_response(200, {{"kind", "APIVersions"},
                               {"versions", {"v1"}},
                               {"serverAddressByClientCIDRs",
                                {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", ""}}}}});
  }
  if (path == "/apis") {
    std::vector<std::string> groups;
    for (const auto& gv : reg.group_versions())
      if (!gv.group.empty() && std::find(groups.begin(), groups.end(), gv.group) == groups.end())
        groups.push_back(gv.group);
    json items = json::array();
    for (const auto& g : groups) items.push_back(aggregated ? aggregated_group(reg, g) : api_group(reg, g));
    for (json& g : remote_api_groups(s, aggregated)) items.push_back(std::move(g));  // aggregator.h
    if (aggregated) return aggregated_response(items);
    return json_response(200, {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", items}});
  }
  if (path == "/api/v1") return json_response(200, legacy_resources(reg, {"", "v1"}));
  if (info.api_prefix == "apis" && !info.group.empty() && !info.version.empty()) {
    api::GroupVersion gv{info.group, info.version};
    if (reg.kinds_in(gv).empty()) return not_found();
    return json_response(200, legacy_resources(reg, gv));
  }
  if (path.starts_with("/apis/")) {
    std::string group = path.substr(6);
    json g = api_group(reg, group);
    if (g.is_null()) g = remote_api_group(s, group);
    if (g.is_null()) return not_found();
    g["kind"] = "APIGroup";
    g["apiVersion"] = "v1";
    return json_response(200, g);
  }
  return not_found();
}

}  // namespace vkube::apiserver
