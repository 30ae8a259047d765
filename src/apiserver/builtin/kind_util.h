// Helpers shared by the per-kind defaulting and validation files: JSON access
// that never throws on missing or wrongly typed fields, field-path building,
// and FieldError constructors worded as k8s.io/apimachinery's field package.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "field_errors.h"

namespace vkube::apiserver::builtin::util {

using json = nlohmann::json;

// --- Reading -----------------------------------------------------------------

// The child `key` of `obj` when `obj` is an object and the child is present
// and not null; nullptr otherwise.
const json* get(const json& obj, const char* key);
json* get(json& obj, const char* key);
// Like get(), but only when the child has the named JSON type.
const json* get_object(const json& obj, const char* key);
json* get_object(json& obj, const char* key);
const json* get_array(const json& obj, const char* key);
json* get_array(json& obj, const char* key);
// The child as a string, or "" when absent or not a string.
std::string get_string(const json& obj, const char* key);
// The child as an integer (a JSON number without a fraction), or nullopt.
std::optional<int64_t> get_int(const json& obj, const char* key);
// True only when the child is the JSON value true.
bool get_bool(const json& obj, const char* key);
// The child is absent or null: a Go nil pointer / zero value after decoding.
bool absent(const json& obj, const char* key);

// --- Defaulting --------------------------------------------------------------

// Sets obj[key] = value when obj is an object and the child is absent/null.
void set_default(json& obj, const char* key, json value);
// Like set_default, but also replaces a numeric 0 (Go's `if x == 0` defaults).
void set_default_nonzero(json& obj, const char* key, json value);
// The child object, created empty when absent/null; nullptr when `obj` is not
// an object or the child has another type (validation reports that).
json* ensure_object(json& obj, const char* key);

// --- Field paths ---------------------------------------------------------------

std::string child(std::string_view path, std::string_view name);  // "a.b"
std::string index(std::string_view path, size_t i);               // "a[0]"
std::string key(std::string_view path, std::string_view k);       // "a[k]"

// --- Field errors --------------------------------------------------------------

void required(FieldErrors& errs, std::string field, std::string detail = {});
void invalid(FieldErrors& errs, std::string field, json value, std::string detail);
void not_supported(FieldErrors& errs, std::string field, json value,
                   const std::vector<std::string>& supported);
void duplicate(FieldErrors& errs, std::string field, json value);
void forbidden(FieldErrors& errs, std::string field, std::string detail);
void too_long(FieldErrors& errs, std::string field, size_t max);
// field.NotFound: reported as Invalid until FieldError has a NotFound type.
void not_found(FieldErrors& errs, std::string field, json value);
// field.Invalid(path, value, "field is immutable") when new != old, where an
// absent/null field equals an absent/null one.
void immutable(FieldErrors& errs, const std::string& field, const json* now, const json* before);

// A type error for a field that must be an object/array/string/integer/bool,
// reported as Invalid (kube-apiserver answers these with 400 at decoding).
// Return true when the type is right (or the field is absent).
bool check_object(FieldErrors& errs, const json& obj, const char* k, const std::string& path);
bool check_array(FieldErrors& errs, const json& obj, const char* k, const std::string& path);
bool check_string(FieldErrors& errs, const json& obj, const char* k, const std::string& path);
bool check_int(FieldErrors& errs, const json& obj, const char* k, const std::string& path);
bool check_bool(FieldErrors& errs, const json& obj, const char* k, const std::string& path);

// --- Common value checks ---------------------------------------------------------

// Appends `Invalid(field, value, msg)` for each message of a name validator.
void add_messages(FieldErrors& errs, const std::string& field, const std::string& value,
                  const std::vector<std::string>& msgs);
// ValidateNonnegativeField: "must be greater than or equal to 0".
void nonnegative(FieldErrors& errs, const json& obj, const char* k, const std::string& path);
// IsValidPortNum: "must be between 1 and 65535, inclusive".
bool valid_port_num(int64_t port);
// IsValidPortName's messages (IANA_SVC_NAME), empty when valid.
std::vector<std::string> port_name_errors(std::string_view name);
// An int-or-string (intstr) positive integer or a "NN%" percentage; reports
// as ValidatePositiveIntOrPercent + IsValidPercent do.
void int_or_percent(FieldErrors& errs, const json& value, const std::string& path);
// The labels of a metav1.LabelSelector JSON object match `labels`; false
// when the selector does not parse.
bool selector_matches(const json& selector, const json& labels);
// An empty selector (no matchLabels and no matchExpressions).
bool selector_empty(const json& selector);
// metav1validation.ValidateLabelSelector, reduced to its common messages.
void validate_label_selector(FieldErrors& errs, const json& selector, const std::string& path);

// --- Base64 (Secret data, ConfigMap binaryData) ------------------------------------

// nullopt when `text` decodes as Go's base64.StdEncoding does (CR and LF
// ignored); else the message of its CorruptInputError, e.g.
// "illegal base64 data at input byte 3".
std::optional<std::string> base64_error(std::string_view text);
// The decoded bytes, or nullopt where base64_error reports a problem.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace vkube::apiserver::builtin::util
