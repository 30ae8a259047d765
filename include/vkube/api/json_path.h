// Reading a nested member of a decoded object by its keys: the one path
// reader that the scheduler, the controllers and the GPU books share.
#pragma once

#include <initializer_list>

#include <nlohmann/json.hpp>

namespace vkube::api {

// The value at `path` in `j` (object keys, outermost first), or null where a
// step is missing or its parent is not an object.
const nlohmann::json* json_at(const nlohmann::json& j, std::initializer_list<const char*> path);

}  // namespace vkube::api
