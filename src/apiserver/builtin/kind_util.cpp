#include "kind_util.h"

#include <cctype>

#include "vkube/api/selector.h"
#include "vkube/api/validation.h"

namespace vkube::apiserver::builtin::util {

namespace {

using Type = FieldError::Type;

bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool check_type(FieldErrors& errs, const json& obj, const char* k, const std::string& path,
                bool (json::*is)() const noexcept, const char* type_name) {
  const json* v = get(obj, k);
  if (v == nullptr || (v->*is)()) return true;
  invalid(errs, child(path, k), *v, std::string("must be of type ") + type_name);
  return false;
}

}  // namespace

const json* get(const json& obj, const char* k) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(k);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

json* get(json& obj, const char* k) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(k);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

const json* get_object(const json& obj, const char* k) {
  const json* v = get(obj, k);
  return v != nullptr && v->is_object() ? v : nullptr;
}

json* get_object(json& obj, const char* k) {
  json* v = get(obj, k);
  return v != nullptr && v->is_object() ? v : nullptr;
}

const json* get_array(const json& obj, const char* k) {
  const json* v = get(obj, k);
  return v != nullptr && v->is_array() ? v : nullptr;
}

json* get_array(json& obj, const char* k) {
  json* v = get(obj, k);
  return v != nullptr && v->is_array() ? v : nullptr;
}

std::string get_string(const json& obj, const char* k) {
  const json* v = get(obj, k);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

std::optional<int64_t> get_int(const json& obj, const char* k) {
  const json* v = get(obj, k);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    double d = v->get<double>();
    // JSON has one number type: 3.0 decodes into an int32 field in Go.
    if (d > -9.2e18 && d < 9.2e18 && d == static_cast<double>(static_cast<int64_t>(d))) {
      return static_cast<int64_t>(d);
    }
  }
  return std::nullopt;
}

bool get_bool(const json& obj, const char* k) {
  const json* v = get(obj, k);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

bool absent(const json& obj, const char* k) {
  return obj.is_object() && get(obj, k) == nullptr;
}

void set_default(json& obj, const char* k, json value) {
  if (absent(obj, k)) obj[k] = std::move(value);
}

void set_default_nonzero(json& obj, const char* k, json value) {
  if (!obj.is_object()) return;
  const json* v = get(obj, k);
  if (v == nullptr || (v->is_number() && v->get<double>() == 0)) obj[k] = std::move(value);
}

json* ensure_object(json& obj, const char* k) {
  if (!obj.is_object()) return nullptr;
  json& v = obj[k];
  if (v.is_null()) v = json::object();
  return v.is_object() ? &v : nullptr;
}

std::string child(std::string_view path, std::string_view name) {
  if (path.empty()) return std::string(name);
  std::string out(path);
  out += '.';
  out += name;
  return out;
}

std::string index(std::string_view path, size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

std::string key(std::string_view path, std::string_view k) {
  return std::string(path) + "[" + std::string(k) + "]";
}

void required(FieldErrors& errs, std::string field, std::string detail) {
  errs.push_back({Type::kRequired, std::move(field), std::move(detail), nullptr});
}

void invalid(FieldErrors& errs, std::string field, json value, std::string detail) {
  // A nil value prints as "null" in kube's messages.
  if (value.is_null()) value = "null";
  errs.push_back({Type::kInvalid, std::move(field), std::move(detail), std::move(value)});
}

void not_supported(FieldErrors& errs, std::string field, json value,
                   const std::vector<std::string>& supported) {
  std::string detail;
  if (!supported.empty()) {
    detail = "supported values: ";
    for (size_t i = 0; i < supported.size(); ++i) {
      detail += (i ? ", \"" : "\"") + supported[i] + "\"";
    }
  }
  if (value.is_null()) value = "";
  errs.push_back({Type::kNotSupported, std::move(field), std::move(detail), std::move(value)});
}

void duplicate(FieldErrors& errs, std::string field, json value) {
  errs.push_back({Type::kDuplicate, std::move(field), "", std::move(value)});
}

void forbidden(FieldErrors& errs, std::string field, std::string detail) {
  errs.push_back({Type::kForbidden, std::move(field), std::move(detail), nullptr});
}

void too_long(FieldErrors& errs, std::string field, size_t max) {
  errs.push_back({Type::kTooLong, std::move(field),
                  "may not be more than " + std::to_string(max) + (max == 1 ? " byte" : " bytes"),
                  nullptr});
}

void not_found(FieldErrors& errs, std::string field, json value) {
  invalid(errs, std::move(field), std::move(value), "not found");
}

void immutable(FieldErrors& errs, const std::string& field, const json* now, const json* before) {
  bool now_set = now != nullptr && !now->is_null();
  bool before_set = before != nullptr && !before->is_null();
  if (!now_set && !before_set) return;
  if (now_set && before_set && *now == *before) return;
  invalid(errs, field, now_set ? *now : json(nullptr), "field is immutable");
}

bool check_object(FieldErrors& errs, const json& obj, const char* k, const std::string& path) {
  return check_type(errs, obj, k, path, &json::is_object, "object");
}
bool check_array(FieldErrors& errs, const json& obj, const char* k, const std::string& path) {
  return check_type(errs, obj, k, path, &json::is_array, "array");
}
bool check_string(FieldErrors& errs, const json& obj, const char* k, const std::string& path) {
  return check_type(errs, obj, k, path, &json::is_string, "string");
}
bool check_bool(FieldErrors& errs, const json& obj, const char* k, const std::string& path) {
  return check_type(errs, obj, k, path, &json::is_boolean, "boolean");
}
bool check_int(FieldErrors& errs, const json& obj, const char* k, const std::string& path) {
  const json* v = get(obj, k);
  if (v == nullptr || get_int(obj, k)) return true;
  invalid(errs, child(path, k), *v, "must be of type integer");
  return false;
}

void add_messages(FieldErrors& errs, const std::string& field, const std::string& value,
                  const std::vector<std::string>& msgs) {
  for (const std::string& m : msgs) invalid(errs, field, value, m);
}

void nonnegative(FieldErrors& errs, const json& obj, const char* k, const std::string& path) {
  if (!check_int(errs, obj, k, path)) return;
  std::optional<int64_t> v = get_int(obj, k);
  if (v && *v < 0) invalid(errs, child(path, k), *v, "must be greater than or equal to 0");
}

bool valid_port_num(int64_t port) {
  return port >= 1 && port <= 65535;
}

std::vector<std::string> port_name_errors(std::string_view name) {
  std::vector<std::string> out;
  if (name.size() > 15) out.push_back("must be no more than 15 characters");
  bool charset = !name.empty();
  bool letter = false;
  for (char c : name) {
    if (!is_lower_alnum(c) && c != '-') charset = false;
    if (c >= 'a' && c <= 'z') letter = true;
  }
  if (!charset) {
    out.push_back("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
  }
  if (name.find("--") != std::string_view::npos) {
    out.push_back("must not contain consecutive hyphens");
  }
  if (!letter) out.push_back("must contain at least one letter (a-z)");
  if (!name.empty() && (name.front() == '-' || name.back() == '-')) {
    out.push_back("must not begin or end with a hyphen");
  }
  return out;
}

void int_or_percent(FieldErrors& errs, const json& value, const std::string& path) {
  if (value.is_string()) {
    std::string s = value.get<std::string>();
    bool ok = s.size() >= 2 && s.back() == '%';
    for (size_t i = 0; ok && i + 1 < s.size(); ++i)
      ok = std::isdigit(static_cast<unsigned char>(s[i]));
    if (!ok) {
      invalid(errs, path, value,
              "a valid percent string must be a numeric string followed by an ending '%' (e.g. "
              "'1%',  or '93%', regex used for validation is '[0-9]+%')");
    }
  } else if (value.is_number_integer()) {
    if (value.get<int64_t>() < 0) invalid(errs, path, value, "must be greater than or equal to 0");
  } else if (!value.is_null()) {
    invalid(errs, path, value, "must be an integer or percentage (e.g '5%')");
  }
}

bool selector_matches(const json& selector, const json& labels) {
  auto parsed = api::LabelSelector::from_json(selector);
  if (!parsed.is_ok()) return false;
  return parsed->matches(labels.is_object() ? labels : json(nullptr));
}

bool selector_empty(const json& selector) {
  const json* ml = get_object(selector, "matchLabels");
  const json* me = get_array(selector, "matchExpressions");
  return (ml == nullptr || ml->empty()) && (me == nullptr || me->empty());
}

void validate_label_selector(FieldErrors& errs, const json& selector, const std::string& path) {
  if (!selector.is_object()) {
    invalid(errs, path, selector, "must be of type object");
    return;
  }
  if (check_object(errs, selector, "matchLabels", path)) {
    if (const json* ml = get_object(selector, "matchLabels")) {
      std::string mp = child(path, "matchLabels");
      for (const auto& [k, v] : ml->items()) {
        add_messages(errs, mp, k, api::validate_qualified_name(k));
        if (!v.is_string()) {
          invalid(errs, key(mp, k), v, "must be of type string");
        } else {
          add_messages(errs, key(mp, k), v.get<std::string>(),
                       api::validate_label_value(v.get<std::string>()));
        }
      }
    }
  }
  if (!check_array(errs, selector, "matchExpressions", path)) return;
  const json* me = get_array(selector, "matchExpressions");
  if (me == nullptr) return;
  for (size_t i = 0; i < me->size(); ++i) {
    const json& req = (*me)[i];
    std::string rp = index(child(path, "matchExpressions"), i);
    std::string op = get_string(req, "operator");
    const json* values = get_array(req, "values");
    size_t n = values ? values->size() : 0;
    if (op == "In" || op == "NotIn") {
      if (n == 0) {
        required(errs, child(rp, "values"), "must be specified when `operator` is 'In' or 'NotIn'");
      }
    } else if (op == "Exists" || op == "DoesNotExist") {
      if (n > 0) {
        forbidden(errs, child(rp, "values"),
                  "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
      }
    } else {
      invalid(errs, child(rp, "operator"), get(req, "operator") ? req["operator"] : json(""),
              "not a valid selector operator");
    }
    std::string k = get_string(req, "key");
    add_messages(errs, child(rp, "key"), k, api::validate_qualified_name(k));
  }
}

namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::string corrupt_at(size_t pos) {
  return "illegal base64 data at input byte " + std::to_string(pos);
}

}  // namespace

std::optional<std::string> base64_decode(std::string_view text) {
  if (base64_error(text)) return std::nullopt;
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = base64_value(c);
    if (v < 0) continue;  // newlines and padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// Follows Go's encoding/base64 decodeQuantum: quanta of four symbols,
// newlines skipped, '=' padding only where a quantum may end.
std::optional<std::string> base64_error(std::string_view src) {
  size_t si = 0;
  auto skip_newlines = [&] {
    while (si < src.size() && (src[si] == '\n' || src[si] == '\r')) ++si;
  };
  while (true) {
    size_t j = 0;
    for (; j < 4; ++j) {
      skip_newlines();
      if (si == src.size()) {
        if (j == 0) return std::nullopt;
        return corrupt_at(si - j);
      }
      char in = src[si++];
      if (base64_value(in) >= 0) continue;
      if (in != '=') return corrupt_at(si - 1);
      // Padding: "xx==" or "xxx=" ends the input.
      if (j < 2) return corrupt_at(si - 1);
      if (j == 2) {
        skip_newlines();
        if (si == src.size()) return corrupt_at(src.size());
        if (src[si] != '=') return corrupt_at(si - 1);
        ++si;
      }
      skip_newlines();
      if (si < src.size()) return corrupt_at(si);
      return std::nullopt;
    }
  }
}

}  // namespace vkube::apiserver::builtin::util
