#include "field_errors.h"

namespace vkube::apiserver {

std::string FieldError::to_string() const {
  std::string v;
  // Appended piecewise: `"\"" + s + "\""` makes GCC 12 at -O3 warn
  // (-Wrestrict, a false positive) and so fails the Release build.
  if (value.is_string()) {
    v += '"';
    v += value.get_ref<const std::string&>();
    v += '"';
  } else if (!value.is_null()) {
    v = value.dump();
  }
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
