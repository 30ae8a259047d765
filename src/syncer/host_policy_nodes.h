// The node-selector part of the host policy's file form (see host_policy.h).
#pragma once

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/syncer/host_policy.h"

namespace vkube::syncer {

// The file's `nodeSelector:` mapping (label key -> value) into
// policy.node_selector. kInvalid naming the entry.
Status merge_node_selector(const nlohmann::json& value, HostPolicy& policy);

}  // namespace vkube::syncer
