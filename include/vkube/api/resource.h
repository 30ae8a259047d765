// The resource registry: one row per served resource, from which discovery,
// OpenAPI, routing, storage keys, tables and strategies are derived.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkube::api {

using json = nlohmann::json;

struct GroupVersion {
  std::string group;  // "" for the core group
  std::string version;
  // "v1" or "apps/v1", as apiVersion fields spell it.
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  bool operator==(const GroupVersion&) const = default;
};

// One printed column of a Table (meta.k8s.io/v1 TableColumnDefinition).
struct Column {
  std::string name;         // "READY"
  std::string type;         // "string", "integer", "date", ...
  std::string format;       // "name" for the NAME column, else ""
  std::string description;
  int priority = 0;         // > 0: shown only with -o wide
};

// Everything the server knows of one resource (a table row).
struct Resource {
  GroupVersion gv;
  std::string kind;      // "Deployment"
  std::string plural;    // "deployments" (the URL segment)
  std::string singular;  // "deployment"
  bool namespaced = true;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;  // "all" puts it in `kubectl get all`
  std::vector<std::string> verbs = {"create", "delete", "deletecollection", "get",
                                    "list",   "patch",  "update",           "watch"};
  bool status_subresource = false;
  bool scale_subresource = false;
  // The group/resource whose storage this version shares (autoscaling/v1 and
  // v2 HPAs are one set of objects), as "group/plural"; empty: its own.
  std::string storage_of;
  // Fields a fieldSelector may name besides metadata.name/namespace.
  std::vector<std::string> selectable_fields;
  // Table columns after NAME (which every table has first) and before AGE
  // (appended unless the list holds "AGE" itself).
  std::vector<Column> columns;
  bool is_custom = false;  // served from a CustomResourceDefinition

  std::string list_kind() const { return kind + "List"; }
  // "deployments.apps", as RBAC and kubectl name a resource.
  std::string group_resource() const { return gv.group.empty() ? plural : plural + "." + gv.group; }
};

}  // namespace vkube::api
