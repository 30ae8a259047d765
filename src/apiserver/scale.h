// The scale subresource: autoscaling/v1 Scale views of workloads.
#pragma once

#include <nlohmann/json.hpp>

#include "builtin/kinds.h"
#include "vkube/api/resource.h"
#include "vkube/common/status.h"

namespace vkube::apiserver {

using json = nlohmann::json;

// The Scale of a workload: spec.replicas, status.replicas and the selector.
// Custom kinds read the paths their CRD names.
json to_scale(const builtin::Kind& k, const json& obj);
// Applies a Scale's spec.replicas to the workload. kBadRequest/kInvalid on a
// malformed Scale.
Status apply_scale(const builtin::Kind& k, const json& scale, json& obj);

}  // namespace vkube::apiserver
