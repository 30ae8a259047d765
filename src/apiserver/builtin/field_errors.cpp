#include "field_errors.h"

namespace vkube::apiserver {

std::string FieldError::to_string() const {
  std::string v;
  if (!value.is_null()) v = value.is_string() ? "\"" + value.get<std::string>() + "\"" : value.dump();
  switch (type) {
    case Type::kRequired: return field + ": Required value" + (detail.empty() ? "" : ": " + detail);
    case Type::kInvalid: return field + ": Invalid value: " + v + ": " + detail;
    case Type::kNotSupported: return field + ": Unsupported value: " + v + (detail.empty() ? "" : ": " + detail);
    case Type::kDuplicate: return field + ": Duplicate value: " + v;
    case Type::kForbidden: return field + ": Forbidden: " + detail;
    case Type::kTooLong: return field + ": Too long: " + detail;
    case Type::kTooMany: return field + ": Too many: " + detail;
  }
  return field;
}

}  // namespace vkube::apiserver
