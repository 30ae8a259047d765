// Numeric validation as kube-openapi's numberValidator does it: multipleOf, minimum and
// maximum compared natively for integers (against the bound truncated to an integer, as Go
// converts it) and as float64 otherwise, plus the range checks that refuse values and bounds an
// integer/int32/float node cannot hold ("Checked value must be of type integer ...").
#include <cmath>
#include <limits>

#include "structural_validator.h"

namespace vkube::apiserver::crd::detail {
namespace {

// IsValueValidAgainstRange: whether number `v` parses as the node's integer type/format, or
// fits a float32 for format float. Other nodes accept every number.
bool fits(const json& v, std::string_view type, std::string_view format) {
  if (type == "integer") {
    if (kind_of(v) == Kind::kInt) {
      std::int64_t i = v.get<std::int64_t>();
      return format != "int32" || (i >= INT32_MIN && i <= INT32_MAX);
    }
    double d = as_double(v);
    double lo = format == "int32" ? INT32_MIN : -9223372036854775808.0;
    double hi = format == "int32" ? INT32_MAX : 9223372036854775807.0;
    return std::trunc(d) == d && d >= lo && d < (format == "int32" ? hi + 1 : hi);
  }
  if (format == "float") return std::fabs(as_double(v)) <= std::numeric_limits<float>::max();
  return true;
}

bool fits_int64(double d) {
  return d >= -9223372036854775808.0 && d < 9223372036854775807.0;
}

}  // namespace

std::string Validator::range_message(std::string_view prefix, std::string_view type,
                                     std::string_view format) const {
  std::string t = type.empty() ? "number" : std::string(type);
  std::string f = format.empty() ? " (default format)" : " with format " + std::string(format);
  return std::string(prefix) + " value must be of type " + t + f + " in " + path_;
}

void Validator::check_number(const Keywords& kw, const json& v, Kind k, FieldErrors& out) const {
  SchemaType t = schema_type(kw);
  std::string_view type = t.single == "integer" || t.single == "number" ? t.single : "";
  std::string_view format = effective_format(kw.str(kFormat), type, false);
  if (!fits(v, type, format)) composite(out, range_message("Checked", type, format));
  FieldErrors multiple, minimum, maximum;
  if (const json* f = kw[kMultipleOf]; f && f->is_number()) {
    check_multiple(*f, v, k, type, format, multiple);
  }
  if (const json* m = kw[kMinimum]; m && m->is_number()) {
    check_bound(*m, false, kw.is_true(kExclusiveMinimum), v, k, type, format, minimum);
  }
  if (const json* m = kw[kMaximum]; m && m->is_number()) {
    check_bound(*m, true, kw.is_true(kExclusiveMaximum), v, k, type, format, maximum);
  }
  for (FieldErrors* part : {&multiple, &minimum, &maximum}) {
    out.insert(out.end(), part->begin(), part->end());
  }
}

void Validator::check_multiple(const json& factor, const json& v, Kind k, std::string_view type,
                               std::string_view format, FieldErrors& out) const {
  bool native = fits(factor, type, format);
  if (!native) composite(out, range_message("MultipleOf", type, format));
  double f = as_double(factor);
  if (native && k == Kind::kInt && fits_int64(f)) {
    // Integers are checked against the factor truncated to an integer, as Go converts it.
    auto fi = static_cast<std::int64_t>(f);
    std::string text = std::to_string(fi);
    if (fi <= 0) {
      return invalid(out, field_of(path_), fi,
                     "factor MultipleOf declared for " + path_ + " must be positive: " + text);
    }
    if (v.get<std::int64_t>() % fi != 0) value_error(out, v, "should be a multiple of " + text);
    return;
  }
  if (f <= 0) {
    return invalid(out, field_of(path_), f,
                   "factor MultipleOf declared for " + path_ + " must be positive: " + go_float(f));
  }
  double d = as_double(v);
  double mult = f < 1 ? (1 / f) * d : d / f;
  if (!is_json_integer(mult)) value_error(out, v, "should be a multiple of " + go_float(f));
}

void Validator::check_bound(const json& bound, bool is_max, bool exclusive, const json& v, Kind k,
                            std::string_view type, std::string_view format,
                            FieldErrors& out) const {
  bool native = fits(bound, type, format);
  if (!native)
    composite(out, range_message(is_max ? "Maximum boundary" : "Minimum boundary", type, format));
  double b = as_double(bound);
  bool fails;
  std::string text;
  if (native && k == Kind::kInt && fits_int64(b)) {
    auto bi = static_cast<std::int64_t>(b);  // Go's int64(max) truncation
    auto d = v.get<std::int64_t>();
    fails = is_max ? (exclusive ? d >= bi : d > bi) : (exclusive ? d <= bi : d < bi);
    text = std::to_string(bi);
  } else {
    double d = as_double(v);
    fails = is_max ? (exclusive ? d >= b : d > b) : (exclusive ? d <= b : d < b);
    text = go_float(b);
  }
  if (!fails) return;
  std::string what =
      is_max ? (exclusive ? "should be less than " : "should be less than or equal to ")
             : (exclusive ? "should be greater than " : "should be greater than or equal to ");
  value_error(out, v, what + text);
}

}  // namespace vkube::apiserver::crd::detail
