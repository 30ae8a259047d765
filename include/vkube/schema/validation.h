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
// does: kube-apiserver never stores a field its types do not have.
void drop_unknown_fields(const Message& m, nlohmann::json& obj);

// Keys that occur twice in the same object of a JSON document
// (`metadata.name`). Empty for invalid JSON (the parser reports that).
std::vector<std::string> duplicate_fields(std::string_view json_text);

}  // namespace vkube::schema
