// Schema keyword access, value kinds, Go-style text, field paths and field errors shared by the
// structural-schema files. Messages must read byte for byte as kube-apiserver's, so numbers are
// printed as Go's fmt prints them ("1e+06", not "1000000.0").
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "structural_internal.h"

namespace vkube::apiserver::crd::detail {

// --- Schema keywords ----------------------------------------------------------------------

const json* keyword(const json& s, std::string_view key) {
  if (!s.is_object()) return nullptr;
  auto it = s.find(key);
  if (it == s.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string_view string_keyword(const json& s, std::string_view key) {
  const json* v = keyword(s, key);
  return v != nullptr && v->is_string() ? std::string_view(v->get_ref<const std::string&>())
                                        : std::string_view();
}

bool flag(const json& s, std::string_view key) {
  const json* v = keyword(s, key);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

std::optional<std::int64_t> int_keyword(const json* v) {
  if (v == nullptr || !v->is_number()) return std::nullopt;
  if (v->is_number_unsigned())
    return static_cast<std::int64_t>(std::min<std::uint64_t>(v->get<std::uint64_t>(), INT64_MAX));
  if (v->is_number_integer()) return v->get<std::int64_t>();
  double d = v->get<double>();
  if (!is_json_integer(d)) return std::nullopt;
  return static_cast<std::int64_t>(d);
}

const json* property(const json& s, std::string_view name) {
  const json* props = keyword(s, "properties");
  if (props == nullptr || !props->is_object()) return nullptr;
  auto it = props->find(name);
  return it == props->end() ? nullptr : &*it;
}

const json* additional_schema(const json& s) {
  const json* a = keyword(s, "additionalProperties");
  return a != nullptr && a->is_object() ? a : nullptr;
}

const json* items_schema(const json& s) {
  const json* i = keyword(s, "items");
  return i != nullptr && i->is_object() ? i : nullptr;
}

const json* default_value(const json& s) {
  return keyword(s, "default");
}

const json& empty_array() {
  static const json kEmpty = json::array();
  return kEmpty;
}

const json& empty_object() {
  static const json kEmpty = json::object();
  return kEmpty;
}

// --- Values -------------------------------------------------------------------------------

Kind kind_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return Kind::kNull;
    case json::value_t::boolean:
      return Kind::kBool;
    case json::value_t::number_integer:
      return Kind::kInt;
    case json::value_t::number_unsigned:
      // Above int64 kube's decoder falls back to float64.
      return v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX) ? Kind::kFloat
                                                                            : Kind::kInt;
    case json::value_t::number_float:
      return Kind::kFloat;
    case json::value_t::string:
      return Kind::kString;
    case json::value_t::array:
      return Kind::kArray;
    default:
      return Kind::kObject;
  }
}

double as_double(const json& v) {
  return v.is_number() ? v.get<double>() : 0;
}

bool is_json_integer(double f) {
  constexpr double kMax = 9007199254740991.0;  // 2^53 - 1
  if (!std::isfinite(f) || f < -kMax || f > kMax) return false;
  return std::trunc(f) == f;
}

std::size_t rune_count(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t width = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    bool ok = i + width <= s.size();
    for (std::size_t j = 1; ok && j < width; ++j) {
      ok = (static_cast<unsigned char>(s[i + j]) & 0xC0) == 0x80;
    }
    i += ok ? width : 1;
    ++n;
  }
  return n;
}

// --- Go text ------------------------------------------------------------------------------

std::string go_quote(std::string_view s) {
  static constexpr std::string_view kEscaped = "\"\\\a\b\f\n\r\t\v";
  static constexpr std::string_view kLetters = "\"\\abfnrtv";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (std::size_t e = kEscaped.find(ch); e != std::string_view::npos) {
      (out += '\\') += kLetters[e];
    } else if (c < 0x20 || c == 0x7F) {
      ((out += "\\x") += kHex[c >> 4]) += kHex[c & 0xF];
    } else {
      out += ch;
    }
  }
  out += '"';
  return out;
}

std::string go_float(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto sci = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string_view text(buf, static_cast<std::size_t>(sci.ptr - buf));
  int exp = std::atoi(std::string(text.substr(text.find('e') + 1)).c_str());
  // strconv 'g' with the shortest precision switches to an exponent below 1e-4 and from 1e6.
  if (exp < -4 || exp >= 6) return std::string(text);
  auto fixed = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::fixed);
  return std::string(buf, fixed.ptr);
}

std::string go_number(const json& v) {
  if (v.is_number_integer()) return dump(v);
  return go_float(as_double(v));
}

std::string dump(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string enum_text(const json& v) {
  return v.is_string() ? v.get<std::string>() : dump(v);
}

// --- Field paths ----------------------------------------------------------------------------

std::string child(std::string_view path, std::string_view name) {
  if (path.empty()) return std::string(name);
  std::string out(path);
  out += '.';
  out += name;
  return out;
}

std::string index(std::string_view path, std::size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

std::string key(std::string_view path, std::string_view k) {
  return std::string(path) + "[" + std::string(k) + "]";
}

// --- Field errors ---------------------------------------------------------------------------

using Type = FieldError::Type;

void required(FieldErrors& errs, std::string field, std::string detail) {
  errs.push_back({Type::kRequired, std::move(field), std::move(detail), nullptr});
}

void invalid(FieldErrors& errs, std::string field, json value, std::string detail) {
  if (value.is_null()) value = "null";  // Go prints a nil value as "null"
  errs.push_back({Type::kInvalid, std::move(field), std::move(detail), std::move(value)});
}

void forbidden(FieldErrors& errs, std::string field, std::string detail) {
  errs.push_back({Type::kForbidden, std::move(field), std::move(detail), nullptr});
}

void not_supported(FieldErrors& errs, std::string field, json value,
                   const std::vector<std::string>& supported) {
  std::string detail;
  for (const std::string& s : supported) {
    detail += detail.empty() ? "supported values: " : ", ";
    detail += go_quote(s);
  }
  if (value.is_null()) value = "null";
  errs.push_back({Type::kNotSupported, std::move(field), std::move(detail), std::move(value)});
}

void duplicate(FieldErrors& errs, std::string field, json value) {
  errs.push_back({Type::kDuplicate, std::move(field), "", std::move(value)});
}

void too_long(FieldErrors& errs, std::string field, std::int64_t max) {
  errs.push_back({Type::kTooLong, std::move(field),
                  "may not be more than " + std::to_string(max) + (max == 1 ? " byte" : " bytes"),
                  nullptr});
}

void too_many(FieldErrors& errs, std::string field, std::int64_t actual, std::int64_t max) {
  // field.TooMany prints its value before the detail ("Too many: 3: must have at most 2
  // items"); FieldError::to_string prints only the detail for kTooMany, so it carries both.
  std::string detail = std::to_string(actual) + ": must have at most " + std::to_string(max) +
                       (max == 1 ? " item" : " items");
  errs.push_back({Type::kTooMany, std::move(field), std::move(detail), actual});
}

}  // namespace vkube::apiserver::crd::detail
