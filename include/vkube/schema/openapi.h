// OpenAPI v3 schemas derived from the type registry, shaped as
// kube-apiserver publishes them (component names io.k8s.api.<g>.<v>.<Kind>,
// $refs wrapped in allOf, x-kubernetes-* list, map and patch extensions).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "vkube/schema/schema.h"

namespace vkube::schema {

// "#/components/schemas/io.k8s.api.core.v1.Pod"
std::string openapi_ref(const Message& m);

// The component schemas of `roots` and of every message they reach, keyed by
// openapi_name(). Served kinds (and their lists) carry
// x-kubernetes-group-version-kind.
nlohmann::json openapi_components(const std::vector<const Message*>& roots);

}  // namespace vkube::schema
