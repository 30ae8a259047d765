// The scale subresource: autoscaling/v1 Scale views of workloads.
#pragma once

#include <nlohmann/json.hpp>

#include "vkube/api/resource.h"
#include "vkube/common/status.h"

namespace vkube::apiserver {

using json = nlohmann::json;

// The Scale of a workload: spec.replicas, status.replicas and the selector.
json to_scale(const api::Resource& r, const json& obj);
// Applies a Scale's spec.replicas to the workload. kBadRequest/kInvalid on a
// malformed Scale.
Status apply_scale(const json& scale, json& obj);

}  // namespace vkube::apiserver
