// The parameters and descriptions of OpenAPI operations, as kube's
// documents give them (ListOptions and DeleteOptions as query parameters),
// and the sharing of parameters in the v2 document.
#include "openapi_params.h"

#include <cstdint>
#include <map>

#include "vkube/common/base64.h"

namespace vkube::apiserver {

json openapi_param(const char* name, const char* in, const char* type, const char* description) {
  return {{"name", name},
          {"in", in},
          {"description", description},
          {"schema", {{"type", type}, {"uniqueItems", true}}}};
}

// The query parameters of a list (and of a watch, which is a list with
// watch=true), as kube's ListOptions gives them.
void add_list_params(std::vector<json>& params) {
  params.push_back(
      openapi_param("allowWatchBookmarks", "query", "boolean",
                    "Ask a watch for BOOKMARK events, which carry only a resourceVersion. "
                    "Ignored by lists and by servers that send none."));
  params.push_back(
      openapi_param("continue", "query", "string",
                    "The continue token of the previous page of a paged list; the list goes "
                    "on from where that page ended, at the same resourceVersion."));
  params.push_back(openapi_param("fieldSelector", "query", "string",
                                 "Only objects whose fields match, e.g. metadata.name=x or "
                                 "status.phase!=Running. Everything when unset."));
  params.push_back(openapi_param("labelSelector", "query", "string",
                                 "Only objects whose labels match, e.g. app=web,tier in (a,b). "
                                 "Everything when unset."));
  params.push_back(
      openapi_param("limit", "query", "integer",
                    "At most this many items per page; the list's continue token fetches the "
                    "next page."));
  params.push_back(
      openapi_param("resourceVersion", "query", "string",
                    "Which data a list or get may serve (see resourceVersionMatch), or where a "
                    "watch starts. Unset: the most recent."));
  params.push_back(openapi_param("resourceVersionMatch", "query", "string",
                                 "How resourceVersion applies to a list: Exact or NotOlderThan."));
  params.push_back(
      openapi_param("sendInitialEvents", "query", "boolean",
                    "With watch=true, begin with synthetic ADDED events for the existing "
                    "objects, then a BOOKMARK annotated k8s.io/initial-events-end."));
  params.push_back(openapi_param("timeoutSeconds", "query", "integer",
                                 "End the list or watch call after this many seconds."));
  params.push_back(
      openapi_param("watch", "query", "boolean",
                    "Stream changes (added, modified, deleted) to the listed objects instead "
                    "of listing them; start with resourceVersion."));
}

void add_delete_params(std::vector<json>& params) {
  params.push_back(
      openapi_param("gracePeriodSeconds", "query", "integer",
                    "Seconds before the object is deleted; 0 deletes at once. Unset: the "
                    "kind's default."));
  params.push_back(
      openapi_param("orphanDependents", "query", "boolean",
                    "Deprecated, use propagationPolicy: leave dependents without an owner "
                    "instead of deleting them."));
  params.push_back(openapi_param("propagationPolicy", "query", "string",
                                 "What happens to dependents: Orphan, Background or Foreground."));
}

// What kube's operations say they do, as generators and `kubectl explain`
// show it.
std::string op_description(const api::Resource& r, const std::string& action,
                           const std::string& op_id) {
  const std::string of = op_id.ends_with("Status") ? "status of " : "";
  if (action == "list") return "list or watch objects of kind " + r.kind;
  if (action == "post")
    return op_id.ends_with("Binding") ? "create binding of a " + r.kind : "create a " + r.kind;
  if (action == "get") return "read " + of + "the specified " + r.kind;
  if (action == "put") return "replace " + of + "the specified " + r.kind;
  if (action == "patch") return "partially update " + of + "the specified " + r.kind;
  if (action == "delete") return "delete a " + r.kind;
  if (action == "deletecollection") return "delete collection of " + r.kind;
  if (action == "watchlist")
    return "watch individual changes to a list of " + r.kind +
           ". deprecated: use the 'watch' parameter with a list operation instead.";
  if (action == "watch")
    return "watch changes to an object of kind " + r.kind +
           ". deprecated: use the 'watch' parameter with a list operation instead, filtered to a "
           "single item with the 'fieldSelector' parameter.";
  return "";
}

// kube-openapi's name for a shared parameter: its name and 6 bytes of the
// FNV-1 (64-bit) hash of its JSON, base64url.
namespace {

std::string shared_name(const std::string& name, const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h *= 1099511628211ull;
    h ^= c;
  }
  std::string bytes;
  for (int i = 7; i >= 2; --i) bytes += static_cast<char>((h >> (i * 8)) & 0xFF);
  return name + "-" + base64_encode(bytes, /*url_safe=*/true);
}

}  // namespace

// Shares parameters as kube's v2 document does: each distinct one once under
// "parameters", referenced by $ref; object names, dryRun and fieldValidation
// stay inline (kubectl looked for the last two there), as do bodies.
json share_parameters(json& paths) {
  std::map<std::string, std::string> names;  // parameter JSON -> shared name
  json shared = json::object();
  auto share = [&](json& params) {
    if (!params.is_array()) return;
    for (json& p : params) {
      if (!p.is_object() || p.contains("$ref")) continue;
      const std::string in = p.value("in", ""), name = p.value("name", "");
      if (in == "body" || name == "name" || name == "dryRun" || name == "fieldValidation") continue;
      std::string text = p.dump();
      auto it = names.find(text);
      if (it == names.end()) {
        std::string id = shared_name(name, text);
        for (int i = 1; shared.contains(id); ++i) id = name + "-" + std::to_string(i);
        shared[id] = p;
        it = names.emplace(std::move(text), std::move(id)).first;
      }
      p = {{"$ref", "#/parameters/" + it->second}};
    }
  };
  for (auto item = paths.begin(); item != paths.end(); ++item) {
    if (!item->is_object()) continue;
    for (auto m = item->begin(); m != item->end(); ++m) {
      if (m.key() == "parameters")
        share(m.value());
      else if (m->is_object() && m->contains("parameters"))
        share((*m)["parameters"]);
    }
  }
  return shared;
}

}  // namespace vkube::apiserver
