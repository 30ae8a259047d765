// CEL values over JSON: JSON-backed lists and maps are read in place and typed by the structural
// schema when one is given (integer fields are ints, number fields doubles, list types and
// embedded resources as kube declares them, property names unescaped as kube escapes them), and
// results are turned back into JSON. Also how numbers and map keys print (cel-go's text).
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel::detail {
namespace {

const json* child(const json* schema, std::string_view key) {
  if (schema == nullptr || !schema->is_object()) return nullptr;
  auto it = schema->find(key);
  return it != schema->end() && it->is_object() ? &*it : nullptr;
}

std::string_view string_field(const json* schema, std::string_view key) {
  if (schema == nullptr || !schema->is_object()) return {};
  auto it = schema->find(key);
  return it != schema->end() && it->is_string()
             ? std::string_view(it->get_ref<const std::string&>())
             : std::string_view();
}

bool flag(const json* schema, std::string_view key) {
  if (schema == nullptr || !schema->is_object()) return false;
  auto it = schema->find(key);
  return it != schema->end() && it->is_boolean() && it->get<bool>();
}

const json* property_schema(const json* schema, std::string_view key) {
  const json* props = child(schema, "properties");
  if (const json* p = child(props, key)) return p;
  return child(schema, "additionalProperties");
}

Value number_from_json(const json& j, const json* schema) {
  std::string_view type = string_field(schema, "type");
  if (type == "number") return make_double(j.get<double>());
  if (j.is_number_float()) {
    double d = j.get<double>();
    bool integral = std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.2e18;
    return type == "integer" && integral ? make_int(static_cast<int64_t>(d)) : make_double(d);
  }
  if (j.is_number_unsigned()) {
    auto u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return make_uint(u);
  }
  return make_int(j.get<int64_t>());
}

// kube's escaping of property names that are not CEL identifiers: "__dash__" is '-', ...
std::string unescape_property(std::string_view name) {
  static constexpr std::string_view kKeywords[] = {
      "true",     "false",   "null",      "in",       "as",  "break",  "const",
      "continue", "else",    "for",       "function", "if",  "import", "let",
      "loop",     "package", "namespace", "return",   "var", "void",   "while"};
  if (name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__") {
    std::string_view inner = name.substr(2, name.size() - 4);
    for (auto k : kKeywords) {
      if (inner == k) return std::string(k);
    }
  }
  static constexpr std::pair<std::string_view, std::string_view> kEscapes[] = {
      {"__underscores__", "__"}, {"__dot__", "."}, {"__dash__", "-"}, {"__slash__", "/"}};
  std::string out;
  for (std::size_t i = 0; i < name.size();) {
    bool replaced = false;
    for (const auto& [from, to] : kEscapes) {
      if (name.substr(i, from.size()) == from) {
        out += to;
        i += from.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(name[i++]);
  }
  return out;
}

// A resource root's metadata as kube's CEL sees it: name and generateName only.
Value narrowed_metadata(const json& metadata) {
  ValueMap entries;
  if (metadata.is_object()) {
    for (const char* key : {"name", "generateName"}) {
      auto it = metadata.find(key);
      if (it != metadata.end() && it->is_string()) {
        entries.emplace_back(make_string(key), make_string(it->get<std::string>()));
      }
    }
  }
  return make_map(std::move(entries));
}

std::optional<Value> json_map_get(const Value& m, std::string_view key) {
  auto it = m.node->find(key);
  if (it == m.node->end()) return std::nullopt;
  if (m.resource_root && key == "metadata") return narrowed_metadata(*it);
  return from_json(*it, property_schema(m.schema, key));
}

json map_to_json(const Value& v, int depth) {
  json out = json::object();
  for (const Value& k : map_keys(v)) {
    auto e = map_get(v, k);
    if (e) out[key_text(k)] = to_json(*e, depth + 1);
  }
  return out;
}

}  // namespace

std::string_view type_name(Kind kind) {
  switch (kind) {
    case Kind::kNull:
      return "null_type";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kUint:
      return "uint";
    case Kind::kDouble:
      return "double";
    case Kind::kString:
      return "string";
    case Kind::kBytes:
      return "bytes";
    case Kind::kList:
      return "list";
    case Kind::kMap:
      return "map";
    case Kind::kType:
      return "type";
    case Kind::kOptional:
      return "optional_type";
    case Kind::kQuantity:
      return "kubernetes.Quantity";
    case Kind::kIp:
      return "net.IP";
    case Kind::kCidr:
      return "net.CIDR";
    case Kind::kUrl:
      return "kubernetes.URL";
    case Kind::kDuration:
      return "google.protobuf.Duration";
    case Kind::kTimestamp:
      return "google.protobuf.Timestamp";
    case Kind::kObject:
      return "object";
    case Kind::kError:
      return "error";
  }
  return "";
}

std::string_view list_type(const Value& list) {
  std::string_view t = string_field(list.schema, "x-kubernetes-list-type");
  return t.empty() ? "atomic" : t;
}

Value from_json(const json& j, const json* schema) {
  Value v;
  switch (j.type()) {
    case json::value_t::boolean:
      return make_bool(j.get<bool>());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return number_from_json(j, schema);
    case json::value_t::string:
      if (schema != nullptr) {
        const std::string_view format = string_field(schema, "format");
        if (!format.empty())
          if (auto typed = formatted_string(format, j.get_ref<const std::string&>())) return *typed;
      }
      v.kind = Kind::kString;
      v.borrowed = &j.get_ref<const std::string&>();
      return v;
    case json::value_t::array:
    case json::value_t::object:
      v.kind = j.is_array() ? Kind::kList : Kind::kMap;
      v.node = &j;
      v.schema = schema;
      v.resource_root = j.is_object() && flag(schema, "x-kubernetes-embedded-resource");
      return v;
    default:
      return v;
  }
}

std::size_t list_size(const Value& v) {
  return v.items ? v.items->size() : v.node->size();
}

Value list_at(const Value& v, std::size_t i) {
  if (v.items) return (*v.items)[i];
  return from_json((*v.node)[i], child(v.schema, "items"));
}

std::size_t map_size(const Value& v) {
  return v.entries ? v.entries->size() : v.node->size();
}

std::optional<Value> map_get(const Value& m, const Value& key) {
  if (m.node != nullptr) {
    if (key.kind != Kind::kString) return std::nullopt;
    return json_map_get(m, key.str());
  }
  for (const auto& [k, v] : *m.entries) {
    if (values_equal_shallow(k, key)) return v;
  }
  return std::nullopt;
}

// A field selection: the key itself, else kube's unescaped property name.
std::optional<Value> map_field(const Value& m, std::string_view name) {
  if (m.node == nullptr) {
    Value key;
    key.kind = Kind::kString;
    std::string s(name);
    key.borrowed = &s;
    return map_get(m, key);
  }
  if (auto v = json_map_get(m, name)) return v;
  if (name.find("__") == std::string_view::npos) return std::nullopt;
  return json_map_get(m, unescape_property(name));
}

ValueList map_keys(const Value& m) {
  ValueList keys;
  if (m.entries) {
    for (const auto& e : *m.entries) keys.push_back(e.first);
    return keys;
  }
  for (auto it = m.node->begin(); it != m.node->end(); ++it) {
    Value k;
    k.kind = Kind::kString;
    k.borrowed = &it.key();
    keys.push_back(std::move(k));
  }
  return keys;
}

std::string format_int(int64_t i) {
  return std::to_string(i);
}

// Go's %g (cel-go's string(double)): the shortest digits that round-trip, in exponent form when
// the exponent is below -4 or at least 6 ("1e+06", "123456", "1.5e-05").
std::string format_double(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  int exp = std::stoi(sci.substr(e + 1));
  bool negative = mantissa[0] == '-';
  std::string digits;
  for (char c : mantissa) {
    if (c >= '0' && c <= '9') digits.push_back(c);
  }
  std::string out = negative ? "-" : "";
  if (exp < -4 || exp >= 6) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    std::string ex = std::to_string(std::abs(exp));
    if (ex.size() < 2) ex = "0" + ex;
    return out + "e" + (exp < 0 ? "-" : "+") + ex;
  }
  if (exp < 0) return out + "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
  std::size_t int_digits = static_cast<std::size_t>(exp) + 1;
  if (digits.size() <= int_digits)
    return out + digits + std::string(int_digits - digits.size(), '0');
  return out + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

std::string key_text(const Value& k) {
  switch (k.kind) {
    case Kind::kInt:
      return format_int(k.i);
    case Kind::kUint:
      return std::to_string(k.u);
    case Kind::kDouble:
      return format_double(k.d);
    case Kind::kBool:
      return k.b ? "true" : "false";
    default:
      return std::string(k.str());
  }
}

json to_json(const Value& v, int depth) {
  if (depth > kMaxValueDepth) throw std::runtime_error("value nesting exceeds the supported depth");
  switch (v.kind) {
    case Kind::kNull:
      return nullptr;
    case Kind::kBool:
      return v.b;
    case Kind::kInt:
      return v.i;
    case Kind::kUint:
      return v.u;
    case Kind::kDouble:
      return v.d;
    case Kind::kString:
    case Kind::kBytes:
    case Kind::kType:
    case Kind::kError:
      return std::string(v.str());
    case Kind::kList: {
      if (v.node != nullptr) return *v.node;
      json out = json::array();
      for (const Value& e : *v.items) out.push_back(to_json(e, depth + 1));
      return out;
    }
    case Kind::kMap:
      if (v.node != nullptr && !v.resource_root) return *v.node;
      return map_to_json(v, depth);
    case Kind::kQuantity:  // its text, as a Quantity is written in JSON
    case Kind::kUrl:
      return std::string(v.str());
    case Kind::kIp:
    case Kind::kCidr:
      return net_text(v);
    case Kind::kDuration:
      return duration_text(v.i);
    case Kind::kTimestamp:
      return timestamp_text(v);
    case Kind::kOptional:  // the value, or null for optional.none()
      return has_value(v) ? to_json(v.items->front(), depth + 1) : json(nullptr);
    case Kind::kObject:  // cel-go: an authorizer value has no native form
      throw std::runtime_error("type conversion error from '" +
                               std::string(authz_type_name(*v.object)) + "' to 'json'");
  }
  return nullptr;
}

}  // namespace vkube::cel::detail
