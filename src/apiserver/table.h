// Tables (meta.k8s.io/v1): what `kubectl get` asks for and prints.
#pragma once

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "registry.h"

namespace vkube::apiserver {

using json = nlohmann::json;

// True when the Accept header asks for a meta.k8s.io Table first.
bool wants_table(std::string_view accept);

enum class IncludeObject { kNone, kMetadata, kObject };
// The includeObject parameter; Metadata when absent.
IncludeObject parse_include_object(std::string_view value);

// One row per object, with the kind's columns. `list_meta` becomes the
// table's metadata (resourceVersion, continue).
json make_table(const Kind& kind, const std::vector<json>& objects, IncludeObject include,
                json list_meta);

}  // namespace vkube::apiserver
