// YAML request bodies (server-side apply's application/apply-patch+yaml) as
// the JSON object model, resolving plain scalars as kube's YAML decoder
// (YAML 1.1, go-yaml v2) does: null, booleans (true, yes, on, ...), integers
// (decimal, 0x, 0o, 0b), floats; everything quoted stays a string.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"

namespace vkube::apiserver::apply {

using json = nlohmann::json;

// Parses the first document of `text` (JSON is YAML, and is read directly).
// kBadRequest "error decoding YAML: error converting YAML to JSON: yaml: ..."
// when it does not parse, nests deeper than 1000 levels, or its aliases
// expand too much: "document contains excessive aliasing" past go-yaml's
// alias ratio or past 4 MiB of scalars copied by aliases, "anchor 'a' value
// contains itself". Builds without recursion; aliases add at most about
// 400,000 nodes and 4 MiB of scalars to what `text` itself holds.
// `duplicates`, when given, gets the keys a JSON text has twice in one
// object, noted in the same pass (schema::duplicate_fields); YAML's are not.
Result<json> yaml_to_json(std::string_view text, std::vector<std::string>* duplicates = nullptr);

}  // namespace vkube::apiserver::apply
