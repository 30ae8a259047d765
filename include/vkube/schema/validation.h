// Unknown- and duplicate-field detection for fieldValidation=Strict|Warn,
// against the registry's description of a kind.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/schema/schema.h"

namespace vkube::schema {

// The fields of `obj` that message `m` does not have, as kube names them
// (`spec.template.spec.containers[0].imagePullPolcy`). apiVersion and kind
// are allowed at the top; embedded raw JSON (RawExtension, apiextensions
// JSON, FieldsV1) is not looked into.
std::vector<std::string> unknown_fields(const Message& m, const nlohmann::json& obj);

// Removes the fields unknown_fields() reports, as decoding into Go types
// does (kube-apiserver never stores a field its types do not have), and
// returns their paths.
std::vector<std::string> drop_unknown_fields(const Message& m, nlohmann::json& obj);

// Parses JSON (discarded when invalid); with `duplicates`, in the same pass
// it notes the keys that occur twice in one object (`metadata.name`).
nlohmann::json parse_json(std::string_view text, std::vector<std::string>* duplicates);

// Just the duplicate keys of a JSON document; empty for invalid JSON.
std::vector<std::string> duplicate_fields(std::string_view json_text);

}  // namespace vkube::schema
