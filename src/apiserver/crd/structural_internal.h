// Private helpers of the structural-schema library: reading schema keywords from raw JSON,
// Go-style text (fmt's %v and %q) so messages read as kube-apiserver's, field errors worded as
// k8s.io/apimachinery's field package, the per-thread `pattern` cache and kube-openapi's string
// formats. Not part of the library's interface.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "field_errors.h"

namespace vkube::apiserver::crd::detail {

using json = nlohmann::json;

// --- Schema keywords ----------------------------------------------------------------------

// The keyword `key` of schema node `s`; nullptr when `s` is not an object or the keyword is
// absent or null (a JSON null keyword means "unset" after Go decoding).
const json* keyword(const json& s, std::string_view key);
// The keyword as a string, "" when absent or not a string.
std::string_view string_keyword(const json& s, std::string_view key);
// True only when the keyword is the JSON value true.
bool flag(const json& s, std::string_view key);
// The keyword as an integer (a JSON number with an integral value), nullopt otherwise.
std::optional<std::int64_t> int_keyword(const json* v);
// The schema of property `name` under `properties`, nullptr when there is none.
const json* property(const json& s, std::string_view name);
// The additionalProperties schema when it is a schema (not a bool), else nullptr.
const json* additional_schema(const json& s);
// The `items` schema when it is a single schema, else nullptr.
const json* items_schema(const json& s);
// The `default` value, nullptr when there is none (absent or null).
const json* default_value(const json& s);
// Shared empty values, so `cond ? *list : empty_array()` binds a reference instead of copying.
const json& empty_array();
const json& empty_object();

// --- Values -------------------------------------------------------------------------------

// A value's kind as kube's JSON decoder leaves it: integral numbers that fit int64 are
// integers, all other numbers float64.
enum class Kind { kNull, kBool, kInt, kFloat, kString, kArray, kObject };
Kind kind_of(const json& v);
double as_double(const json& v);
// swag.IsFloat64AJSONInteger: integral and within +-2^53.
bool is_json_integer(double f);
// Counts code points as Go's utf8.RuneCountInString does (a bad byte counts as one).
std::size_t rune_count(std::string_view s);

// --- Go text ------------------------------------------------------------------------------

std::string go_quote(std::string_view s);  // strconv.Quote / %q
std::string go_float(double f);            // %v of a float64 (shortest, 1e+06 style)
std::string go_number(const json& v);      // %v of a decoded JSON number
// Compact JSON text that never throws (invalid UTF-8 is replaced).
std::string dump(const json& v);
// fmt.Sprint of an enum value as kube lists supported values: strings raw, others as JSON.
std::string enum_text(const json& v);

// --- Field paths (k8s.io/apimachinery field.Path) ------------------------------------------

std::string child(std::string_view path, std::string_view name);  // "a.b" ("b" at the root)
std::string index(std::string_view path, std::size_t i);          // "a[0]"
std::string key(std::string_view path, std::string_view k);       // "a[k]"

// --- Field errors (k8s.io/apimachinery field package) ----------------------------------------

void required(FieldErrors& errs, std::string field, std::string detail = {});
void invalid(FieldErrors& errs, std::string field, json value, std::string detail);
void forbidden(FieldErrors& errs, std::string field, std::string detail);
void not_supported(FieldErrors& errs, std::string field, json value,
                   const std::vector<std::string>& supported);
void duplicate(FieldErrors& errs, std::string field, json value);
void too_long(FieldErrors& errs, std::string field, std::int64_t max);
void too_many(FieldErrors& errs, std::string field, std::int64_t actual, std::int64_t max);

// --- Patterns -------------------------------------------------------------------------------

// A `pattern` compiled once (crd::Regex, Go's RE2 syntax, matched in linear time so that no
// pattern or value can hang validation or exhaust the stack).
struct CompiledPattern;
const CompiledPattern& compile_pattern(const std::string& pattern);
// The compile error in Go's words, "" when the pattern compiled.
const std::string& pattern_error(const CompiledPattern& p);
// regexp.MatchString: true when the pattern matches anywhere in `s`. A pattern this engine
// cannot compile matches everything, so that no resource is refused for our shortcoming.
bool pattern_matches(const CompiledPattern& p, std::string_view s);

// --- Characters (shared by the format checks) ------------------------------------------------

inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline bool all_of(std::string_view s, bool (*pred)(char)) {
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}
// The value of a run of decimal digits (callers check they are digits and few).
inline int digits(std::string_view s) {
  int n = 0;
  for (char c : s) n = n * 10 + (c - '0');
  return n;
}

// --- String formats (kube-openapi strfmt) ---------------------------------------------------

// The format a node's values are validated with: `format` when kube supports it for the node's
// `type` (int-or-string nodes count as untyped), "" otherwise (kube strips the rest).
std::string_view effective_format(std::string_view format, std::string_view type,
                                  bool int_or_string);
// Whether `format` ("date-time", "uuid", ...) is a string format kube validates.
bool is_string_format(std::string_view format);
// Whether `value` is valid in `format` (a name is_string_format accepts).
bool format_accepts(std::string_view format, std::string_view value);
// The network formats (structural_formats_net.cpp).
bool is_hostname(std::string_view s);
bool is_ipv4(std::string_view s);
bool is_ipv6(std::string_view s);
bool is_cidr(std::string_view s);
bool is_mac(std::string_view s);
bool is_email(std::string_view s);
bool is_uri(std::string_view s);

// --- Shared algorithms ------------------------------------------------------------------------

// kube-openapi validation of `value` against `schema`; error fields are prefixed with `base`
// ("" for a whole resource, where field-less errors read "<nil>").
void openapi_validate(const json& schema, const json& value, const std::string& base,
                      FieldErrors& errs);
// objectmeta.Validate: embedded resources' apiVersion/kind/metadata, below `path`. With
// `resource_root` the value itself is treated as an embedded resource.
void validate_embedded(const json& schema, const json& value, const std::string& path,
                       bool resource_root, FieldErrors& errs);
// NewStructural's error for a schema it cannot convert (unsupported keywords, items arrays,
// x-kubernetes-preserve-unknown-fields: false), "" when it converts.
std::string new_structural_error(const json& schema);
// ValidateStructural: structural invariants and completeness, sorted by their text as kube
// sorts them.
void check_structural(const json& schema, const std::string& path, FieldErrors& errs);
// Structural pruning without metadata handling (pruning.Prune). `resource_root` keeps
// apiVersion/kind/metadata at the top. Unknown field paths go to `unknown` when not null.
void prune_fields(json& value, const json& schema, bool resource_root,
                  std::vector<std::string>* unknown);

}  // namespace vkube::apiserver::crd::detail
