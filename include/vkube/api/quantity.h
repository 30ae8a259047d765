// Kubernetes resource quantities ("100m", "2", "1Gi", "1.5e3") as numbers,
// as resource.Quantity's MilliValue / Value read them (rounding up).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace vkube::api {

// resource.ParseQuantity, to a number: "100m" -> 0.1, "1Gi" -> 2^30, a JSON
// number as it is; nullopt for malformed text (or a value not a string or number).
std::optional<long double> quantity_number(const nlohmann::json& value);
// The quantity in thousandths: "100m" -> 100, "2" -> 2000, "1Ki" -> 1024000.
// nullopt for malformed text (or a value not a string or number).
std::optional<int64_t> quantity_milli(std::string_view text);
std::optional<int64_t> quantity_milli(const nlohmann::json& value);
// The quantity in units, rounded up: "100m" -> 1, "1Gi" -> 1073741824.
std::optional<int64_t> quantity_value(const nlohmann::json& value);

}  // namespace vkube::api
