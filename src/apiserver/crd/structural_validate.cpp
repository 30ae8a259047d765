// Value validation against a CRD schema as kube-openapi's SchemaValidator performs it for
// kube-apiserver, including its validator order (type, allOf/anyOf/oneOf/not, string, format,
// number, array, enum, object), its paths ("spec.items[0].name", "spec.labels.foo") and its
// messages ("spec.replicas in body should be less than or equal to 10"), converted to field
// errors as apiextensions-apiserver converts them. The schema is read in place, one pass over
// each node's keys; nothing is copied per node.
#include <unordered_map>

#include "structural_validator.h"

namespace vkube::apiserver::crd::detail {
namespace {

Kw keyword_id(std::string_view name) {
  // In the order of Kw.
  // clang-format off
  static constexpr std::string_view kNames[kKeywordCount] = {
      "type", "format", "nullable", "x-kubernetes-int-or-string", "enum", "pattern", "minLength",
      "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
      "minItems", "maxItems", "uniqueItems", "items", "properties", "additionalProperties",
      "required", "minProperties", "maxProperties", "allOf", "anyOf", "oneOf", "not"};
  // clang-format on
  static const auto kIds = [] {
    std::unordered_map<std::string_view, Kw> ids;
    for (int i = 0; i < kKeywordCount; ++i) ids.emplace(kNames[i], static_cast<Kw>(i));
    return ids;
  }();
  auto it = kIds.find(name);
  return it == kIds.end() ? kKeywordCount : it->second;
}

unsigned type_bit(std::string_view t) {
  if (t == "object") return kTObject;
  if (t == "array") return kTArray;
  if (t == "string") return kTString;
  if (t == "integer") return kTInteger;
  if (t == "number") return kTNumber;
  if (t == "boolean") return kTBoolean;
  if (t == "null") return kTNull;
  return 0;
}

// The JSON type and Go format kube-openapi infers for a decoded value.
struct DataType {
  std::string_view name;
  std::string_view format;
  unsigned bit;
};

DataType data_type(Kind k) {
  switch (k) {
    case Kind::kBool:
      return {"boolean", "", kTBoolean};
    case Kind::kString:
      return {"string", "", kTString};
    case Kind::kInt:
      return {"integer", "int64", kTInteger};
    case Kind::kFloat:
      return {"number", "float64", kTNumber};
    case Kind::kArray:
      return {"array", "", kTArray};
    default:
      return {"object", "", kTObject};
  }
}

}  // namespace

Keywords::Keywords(const json& s) {
  for (auto it = s.begin(); it != s.end(); ++it) {
    Kw id = keyword_id(it.key());
    if (id != kKeywordCount && !it->is_null()) kw_[id] = &*it;
  }
}

SchemaType schema_type(const Keywords& kw) {
  SchemaType t;
  t.int_or_string = kw.is_true(kIntOrString);
  if (t.int_or_string) {
    t.bits = kTInteger | kTString;
  } else {
    t.single = kw.str(kType);
    t.bits = type_bit(t.single);
  }
  return t;
}

void Validator::validate(const json& s, const json& v, FieldErrors& out) {
  if (!s.is_object()) return;
  Keywords kw(s);
  Kind k = kind_of(v);
  check_type(kw, v, k, out);
  if (k != Kind::kNull) {
    check_combinators(kw, v, out);
    if (k == Kind::kString) check_string(kw, v, out);
    if (k == Kind::kInt || k == Kind::kFloat) check_number(kw, v, k, out);
    if (k == Kind::kArray) check_array(kw, v, out);
  }
  check_enum(kw, v, out);
  if (k == Kind::kObject) check_object(kw, v, out);
}

std::string Validator::field_of(std::string_view name) const {
  if (name.empty() || name == ".") return nil_field();
  if (name[0] == '.') name.remove_prefix(1);
  return base_.empty() ? std::string(name) : base_ + "." + std::string(name);
}

void Validator::value_error(FieldErrors& out, json value, const std::string& what) const {
  invalid(out, field_of(path_), std::move(value), path_ + " in body " + what);
}

void Validator::type_error(FieldErrors& out, std::string_view type, std::string_view got) const {
  value_error(out, std::string(got), "must be of type " + std::string(type) + ": " + go_quote(got));
}

void Validator::composite(FieldErrors& out, std::string message) const {
  invalid(out, nil_field(), "", std::move(message));
}

void Validator::check_type(const Keywords& kw, const json& v, Kind k, FieldErrors& out) const {
  SchemaType t = schema_type(kw);
  std::string_view format = effective_format(kw.str(kFormat), t.single, t.int_or_string);
  if (!t.present() && format.empty()) return;
  if (k == Kind::kNull) {
    if (t.present() && (t.bits & kTNull) == 0 && !kw.is_true(kNullable)) {
      type_error(out, t.joined(), "null");
    }
    return;
  }
  DataType d = data_type(k);
  bool contains = (t.bits & d.bit) != 0;
  bool float_int = k == Kind::kFloat && is_json_integer(as_double(v)) && (t.bits & kTInteger);
  bool int_float = k == Kind::kInt && (t.bits & kTNumber);
  bool string_or_array = k == Kind::kString || k == Kind::kArray;
  if (!string_or_array && !format.empty() &&
      !(contains || d.format == format || float_int || int_float)) {
    return type_error(out, format, d.format);
  }
  // kube-openapi lets any string or array through a non-numeric node that has a format.
  if ((t.bits & (kTNumber | kTInteger)) == 0 && !format.empty() && string_or_array) return;
  if (!(contains || float_int || int_float)) type_error(out, t.joined(), d.name);
}

void Validator::check_any_of(const json& any, const json& v, FieldErrors& out) {
  std::optional<FieldErrors> best;  // the closest failure, reported with the anyOf error
  for (const json& sub : any) {
    FieldErrors r;
    validate(sub, v, r);
    if (r.empty()) return;
    if (!best || r.size() < best->size()) best = std::move(r);
  }
  composite(out, go_quote(path_) + " must validate at least one schema (anyOf)");
  out.insert(out.end(), best->begin(), best->end());
}

void Validator::check_one_of(const json& one, const json& v, FieldErrors& out) {
  std::size_t valid = 0;
  std::optional<FieldErrors> best;  // reported only when no alternative validates
  for (const json& sub : one) {
    FieldErrors r;
    validate(sub, v, r);
    if (r.empty()) {
      ++valid;
    } else if (valid == 0 && (!best || r.size() < best->size())) {
      best = std::move(r);
    }
  }
  if (valid == 1) return;
  std::string why =
      valid == 0 ? "Found none valid" : "Found " + std::to_string(valid) + " valid alternatives";
  composite(out, go_quote(path_) + " must validate one and only one schema (oneOf). " + why);
  if (valid == 0 && best) out.insert(out.end(), best->begin(), best->end());
}

void Validator::check_all_of(const json& all, const json& v, FieldErrors& out) {
  std::size_t valid = 0;
  for (const json& sub : all) {
    std::size_t before = out.size();
    validate(sub, v, out);
    valid += out.size() == before ? 1 : 0;
  }
  if (valid == all.size()) return;
  composite(out, go_quote(path_) + " must validate all the schemas (allOf)" +
                     (valid == 0 ? ". None validated" : ""));
}

void Validator::check_combinators(const Keywords& kw, const json& v, FieldErrors& out) {
  const json* any = kw.of(kAnyOf, json::value_t::array);
  if (any != nullptr && !any->empty()) check_any_of(*any, v, out);
  const json* one = kw.of(kOneOf, json::value_t::array);
  if (one != nullptr && !one->empty()) check_one_of(*one, v, out);
  const json* all = kw.of(kAllOf, json::value_t::array);
  if (all != nullptr && !all->empty()) check_all_of(*all, v, out);
  if (const json* no = kw.of(kNot, json::value_t::object)) {
    FieldErrors r;
    validate(*no, v, r);
    if (r.empty()) composite(out, go_quote(path_) + " must not validate the schema (not)");
  }
}

void Validator::check_string(const Keywords& kw, const json& v, FieldErrors& out) const {
  const std::string& s = v.get_ref<const std::string&>();
  std::optional<std::int64_t> max = int_keyword(kw[kMaxLength]);
  std::optional<std::int64_t> min = int_keyword(kw[kMinLength]);
  if (max || min) {
    auto runes = static_cast<std::int64_t>(rune_count(s));
    if (max && runes > *max) return too_long(out, field_of(path_), *max);
    if (min && runes < *min) {
      return value_error(out, v, "should be at least " + std::to_string(*min) + " chars long");
    }
  }
  std::string_view pattern = kw.str(kPattern);
  if (!pattern.empty()) {
    const CompiledPattern& p = compile_pattern(std::string(pattern));
    const std::string& error = pattern_error(p);
    if (!error.empty()) {
      value_error(
          out, v,
          "should match '" + std::string(pattern) + ", but pattern is invalid: " + error + "'");
    } else if (!pattern_matches(p, s)) {
      value_error(out, v, "should match '" + std::string(pattern) + "'");
    }
  }
  SchemaType t = schema_type(kw);
  std::string_view format = effective_format(kw.str(kFormat), t.single, t.int_or_string);
  if (!format.empty() && is_string_format(format) && !format_accepts(format, s)) {
    value_error(out, v, "must be of type " + std::string(format) + ": " + go_quote(s));
  }
}

void Validator::check_array(const Keywords& kw, const json& v, FieldErrors& out) {
  if (const json* items = kw.of(kItems, json::value_t::object)) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      Scope scope(path_);
      path_ += '[' + std::to_string(i) + ']';
      validate(*items, v[i], out);
    }
  }
  auto size = static_cast<std::int64_t>(v.size());
  if (auto min = int_keyword(kw[kMinItems]); min && size < *min) {
    value_error(out, size, "should have at least " + std::to_string(*min) + " items");
  }
  if (auto max = int_keyword(kw[kMaxItems]); max && size > *max) {
    too_many(out, field_of(path_), size, *max);
  }
  if (kw.is_true(kUniqueItems)) {
    for (std::size_t i = 1; i < v.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (v[i] == v[j]) return value_error(out, "", "shouldn't contain duplicates");
      }
    }
  }
}

void Validator::check_enum(const Keywords& kw, const json& v, FieldErrors& out) const {
  const json* values = kw.of(kEnum, json::value_t::array);
  if (values == nullptr || values->empty()) return;
  // kube-openapi never matches a null value, even against a null enum entry.
  for (const json& e : *values) {
    if (!v.is_null() && v == e) return;
  }
  std::vector<std::string> supported;
  for (const json& e : *values) supported.push_back(enum_text(e));
  not_supported(out, field_of(path_), v, supported);
}

void Validator::check_object(const Keywords& kw, const json& v, FieldErrors& out) {
  auto size = static_cast<std::int64_t>(v.size());
  if (auto min = int_keyword(kw[kMinProperties]); min && size < *min) {
    value_error(out, size, "should have at least " + std::to_string(*min) + " properties");
  }
  if (auto max = int_keyword(kw[kMaxProperties]); max && size > *max) {
    too_many(out, field_of(path_), size, *max);
  }
  check_properties(kw, v, out);
  if (const json* req = kw.of(kRequired, json::value_t::array)) {
    for (const json& name : *req) {
      if (name.is_string() && !v.contains(name.get_ref<const std::string&>())) {
        required(out, field_of(path_ + "." + name.get<std::string>()));
      }
    }
  }
}

void Validator::check_properties(const Keywords& kw, const json& v, FieldErrors& out) {
  const json* props = kw.of(kProperties, json::value_t::object);
  const json* extra = kw[kAdditionalProperties];
  bool closed = extra != nullptr && extra->is_boolean() && !extra->get<bool>();
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (props != nullptr && props->contains(it.key())) continue;
    if (closed) {
      invalid(out, field_of(path_), it.key(),
              path_ + "." + it.key() + " in body is a forbidden property");
    } else if (extra != nullptr && extra->is_object()) {
      Scope scope(path_);
      (path_ += '.') += it.key();
      validate(*extra, *it, out);
    }
  }
  if (props == nullptr) return;
  for (auto p = props->begin(); p != props->end(); ++p) {
    auto it = v.find(p.key());
    if (it == v.end()) continue;
    Scope scope(path_);
    if (!path_.empty()) path_ += '.';
    path_ += p.key();
    validate(*p, *it, out);
  }
}

void openapi_validate(const json& schema, const json& value, const std::string& base,
                      FieldErrors& errs) {
  Validator(base).validate(schema, value, errs);
}

}  // namespace vkube::apiserver::crd::detail
