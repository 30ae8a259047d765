// Object metadata helpers over the JSON object model, and the stored form.
//
// Objects are stored as compact JSON without metadata.resourceVersion: the
// storage revision is the resourceVersion, set on every read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/storage/backend.h"

namespace vkube::apiserver {

using json = nlohmann::json;

// The string at obj[a][b], or "" when absent or not a string.
std::string str_at(const json& obj, std::string_view a, std::string_view b = {});
inline std::string name_of(const json& o) { return str_at(o, "metadata", "name"); }
inline std::string namespace_of(const json& o) { return str_at(o, "metadata", "namespace"); }

// Parses a stored value and sets metadata.resourceVersion from kv.
Result<json> decode_stored(const storage::KeyValue& kv);
// The bytes to store for obj: without resourceVersion (and without selfLink).
// obj is left as it was; it is not const only so that those two fields can be
// set aside while it is written instead of copying the whole object.
std::string encode_for_storage(json& obj);

std::string new_uid();
// The current time as kube writes timestamps: "2026-12-02T13:40:01Z".
std::string now_rfc3339();
int64_t now_unix();
// Seconds since the epoch, or nullopt for a malformed timestamp.
std::optional<int64_t> parse_rfc3339(std::string_view ts);
std::string format_rfc3339(int64_t unix_seconds);

// A resourceVersion query or body value: "" -> 0, digits -> the revision,
// anything else -> kBadRequest.
Result<storage::Revision> parse_resource_version(std::string_view rv);

// generateName suffix: 5 characters from kube's alphabet.
std::string random_suffix();

}  // namespace vkube::apiserver
