// RequestInfo: what a request asks for, parsed from its method and path
// (kube-apiserver's RequestInfoFactory).
//
//   /api/v1/namespaces/ns/pods/name/status  -> verb get|update|patch, core/v1 pods, subresource status
//   /apis/apps/v1/deployments?watch=true    -> verb watch, all namespaces
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vkube/http/server.h"

namespace vkube::apiserver {

struct RequestInfo {
  bool is_resource_request = false;
  std::string path;
  // get, list, watch, create, update, patch, delete, deletecollection;
  // for non-resource requests the lowercased HTTP method.
  std::string verb;
  std::string api_prefix;  // "api" or "apis"
  std::string group;
  std::string version;
  std::string namespace_;  // "" for cluster-scoped requests or all namespaces
  std::string resource;    // plural
  std::string subresource;
  std::string name;
  std::vector<std::string> parts;  // path segments after the group-version
};

// Parses any request; non-resource paths get is_resource_request = false.
RequestInfo parse_request_info(const http::Request& req);

// Go's strconv.ParseBool: "1", "t", "T", "true", "TRUE", "True" (and the
// false forms). Python's client sends "True".
bool parse_bool(std::string_view s, bool* out);

}  // namespace vkube::apiserver
