// Field errors of an Invalid (422) response: metav1.StatusCause entries.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkube::apiserver {

using json = nlohmann::json;

// One field problem of an Invalid error (metav1.StatusCause).
struct FieldError {
  enum class Type { kRequired, kInvalid, kNotSupported, kDuplicate, kForbidden, kTooLong, kTooMany };
  Type type;
  std::string field;  // "metadata.name", "spec.containers[0].image"
  std::string detail;
  json value;  // the offending value, when there is one

  // "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
  std::string to_string() const;
};
using FieldErrors = std::vector<FieldError>;

}  // namespace vkube::apiserver
