// CEL's type conversions int(), uint(), double(), string(), bool() and bytes(), with Go's
// strconv parsing and its error text ("strconv.ParseInt: parsing \"x\": invalid syntax") and
// cel-go's range checks.
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "cel_internal.h"

namespace vkube::cel::detail {
namespace {

// Go's strconv.ParseInt/ParseUint (base 10, optional sign) and their error text.
template <typename T>
std::optional<Value> parse_integer(std::string_view s, const char* fn, T* out) {
  std::string_view digits = s;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  auto fail = [&](const char* why) {
    return make_error(std::string("strconv.") + fn + ": parsing \"" + std::string(s) +
                      "\": " + why);
  };
  uint64_t mag = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), mag);
  if (digits.empty() || r.ptr != digits.data() + digits.size() ||
      (r.ec != std::errc() && r.ec != std::errc::result_out_of_range)) {
    return fail("invalid syntax");
  }
  bool range = r.ec == std::errc::result_out_of_range;
  if constexpr (std::is_signed_v<T>) {
    range = range || mag > static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0);
    if (range) return fail("value out of range");
    *out = negative ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
  } else {
    if (negative) return fail("invalid syntax");
    if (range) return fail("value out of range");
    *out = mag;
  }
  return std::nullopt;
}

Value parse_double(std::string_view s) {
  std::string lower;
  for (char c : s) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  std::string_view t = lower;
  bool negative = !t.empty() && t[0] == '-';
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) t.remove_prefix(1);
  if (t == "inf" || t == "infinity") {
    return make_double(negative ? -std::numeric_limits<double>::infinity()
                                : std::numeric_limits<double>::infinity());
  }
  if (t == "nan") return make_double(std::numeric_limits<double>::quiet_NaN());
  double d = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), d);
  if (t.empty() || r.ptr != t.data() + t.size() || r.ec == std::errc::invalid_argument) {
    return make_error("strconv.ParseFloat: parsing \"" + std::string(s) + "\": invalid syntax");
  }
  if (r.ec == std::errc::result_out_of_range) {
    return make_error("strconv.ParseFloat: parsing \"" + std::string(s) + "\": value out of range");
  }
  return make_double(negative ? -d : d);
}

}  // namespace

Value to_int(const Value& v) {
  switch (v.kind) {
    case Kind::kInt:
      return v;
    case Kind::kDuration:  // cel-go: the nanoseconds
      return make_int(v.i);
    case Kind::kTimestamp:  // cel-go: the Unix seconds
      return make_int(v.i);
    case Kind::kUint:
      return v.u > static_cast<uint64_t>(INT64_MAX) ? int_overflow()
                                                    : make_int(static_cast<int64_t>(v.u));
    case Kind::kDouble:
      if (!std::isfinite(v.d) || v.d <= -9223372036854775808.0 || v.d >= 9223372036854775807.0) {
        return int_overflow();
      }
      return make_int(static_cast<int64_t>(v.d));
    case Kind::kString: {
      int64_t i = 0;
      if (auto err = parse_integer(v.str(), "ParseInt", &i)) return *err;
      return make_int(i);
    }
    default:
      return no_overload();
  }
}

Value to_uint(const Value& v) {
  switch (v.kind) {
    case Kind::kUint:
      return v;
    case Kind::kInt:
      return v.i < 0 ? uint_overflow() : make_uint(static_cast<uint64_t>(v.i));
    case Kind::kDouble:
      if (!std::isfinite(v.d) || v.d < 0 || v.d >= 18446744073709551616.0) return uint_overflow();
      return make_uint(static_cast<uint64_t>(v.d));
    case Kind::kString: {
      uint64_t u = 0;
      if (auto err = parse_integer(v.str(), "ParseUint", &u)) return *err;
      return make_uint(u);
    }
    default:
      return no_overload();
  }
}

Value to_double(const Value& v) {
  switch (v.kind) {
    case Kind::kDouble:
      return v;
    case Kind::kInt:
      return make_double(static_cast<double>(v.i));
    case Kind::kUint:
      return make_double(static_cast<double>(v.u));
    case Kind::kString:
      return parse_double(v.str());
    default:
      return no_overload();
  }
}

Value to_string(const Value& v) {
  switch (v.kind) {
    case Kind::kString:
      return v;
    case Kind::kInt:
      return make_string(format_int(v.i));
    case Kind::kUint:
      return make_string(std::to_string(v.u));
    case Kind::kDouble:
      return make_string(format_double(v.d));
    case Kind::kBool:
      return make_string(v.b ? "true" : "false");
    case Kind::kBytes:
      if (!valid_utf8(v.str()))
        return make_error("invalid UTF-8 in bytes, cannot convert to string");
      return make_string(std::string(v.str()));
    case Kind::kType:
      return make_string(std::string(v.str()));
    case Kind::kIp:
    case Kind::kCidr:
      return make_string(net_text(v));
    case Kind::kDuration:
      return make_string(duration_text(v.i));
    case Kind::kTimestamp:
      return make_string(timestamp_text(v));
    default:
      return no_overload();
  }
}

Value to_bool(const Value& v) {
  if (v.kind == Kind::kBool) return v;
  if (v.kind != Kind::kString) return no_overload();
  std::string_view s = v.str();
  if (s == "1" || s == "t" || s == "true" || s == "TRUE" || s == "True") return make_bool(true);
  if (s == "0" || s == "f" || s == "false" || s == "FALSE" || s == "False") return make_bool(false);
  return make_error("type conversion error from 'string' to 'bool'");
}

Value to_bytes(const Value& v) {
  if (v.kind == Kind::kBytes) return v;
  if (v.kind == Kind::kString) return make_text(Kind::kBytes, std::string(v.str()));
  return no_overload();
}

}  // namespace vkube::cel::detail
