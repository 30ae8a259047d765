// OpenAPI operation parameters and descriptions (openapi.cpp builds the
// documents with them).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/api/resource.h"

namespace vkube::apiserver {

using json = nlohmann::json;

// An OpenAPI v3 parameter with a scalar schema.
json openapi_param(const char* name, const char* in, const char* type, const char* description);
// Appends the query parameters of a list or watch (kube's ListOptions).
void add_list_params(std::vector<json>& params);
// Appends the query parameters of a delete (kube's DeleteOptions).
void add_delete_params(std::vector<json>& params);
// What the operation does, in kube's words ("list or watch objects of kind
// Pod"), for an x-kubernetes-action and the operation's id.
std::string op_description(const api::Resource& r, const std::string& action,
                           const std::string& op_id);
// Moves the parameters of every operation and path item of a v2 `paths`
// object into the returned "parameters" section, each distinct one once,
// named <name>-<hash> as kube-openapi names them, and leaves $refs in their
// place. Object names, dryRun, fieldValidation and bodies stay inline.
json share_parameters(json& paths);

}  // namespace vkube::apiserver
