// YAML request bodies (server-side apply's application/apply-patch+yaml) as
// the JSON object model, resolving plain scalars as kube's YAML decoder
// (YAML 1.1, go-yaml v2) does: null, booleans (true, yes, on, ...), integers
// (decimal, 0x, 0o, 0b), floats; everything quoted stays a string.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"

namespace vkube::apiserver::apply {

using json = nlohmann::json;

// Parses the first document of `text` (JSON is YAML, and is read directly).
// kBadRequest "error decoding YAML: ..." when it does not parse.
Result<json> yaml_to_json(std::string_view text);

}  // namespace vkube::apiserver::apply
