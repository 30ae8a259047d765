// Whether a CRD schema is structural (apiextensions-apiserver's NewStructural and
// ValidateStructural): every specified field typed, value validations (allOf/anyOf/oneOf/not)
// free of structural keywords and only about fields the structure specifies, the root an object
// whose metadata may constrain only name and generateName.
#include <algorithm>
#include <set>

#include "structural_internal.h"

namespace vkube::apiserver::crd::detail {
namespace {

enum class Level { kRoot, kItem, kField };

std::string properties_key(const std::string& p, const std::string& k) {
  return key(p + ".properties", k);
}

bool has_entries(const json* v) {
  return v != nullptr && (v->is_array() || v->is_object()) && !v->empty();
}

// --- NewStructural ------------------------------------------------------------------------

std::string unsupported_field(const json& s) {
  if (!string_keyword(s, "id").empty()) return "OpenAPIV3Schema 'id' is not supported";
  if (!string_keyword(s, "$schema").empty()) return "OpenAPIV3Schema 'schema' is not supported";
  if (!string_keyword(s, "$ref").empty()) return "OpenAPIV3Schema '$ref' is not supported";
  if (has_entries(keyword(s, "patternProperties")))
    return "OpenAPIV3Schema 'patternProperties' is not supported";
  if (has_entries(keyword(s, "dependencies")))
    return "OpenAPIV3Schema 'dependencies' is not supported";
  if (keyword(s, "additionalItems") != nullptr)
    return "OpenAPIV3Schema 'additionalItems' is not supported";
  if (has_entries(keyword(s, "definitions")))
    return "OpenAPIV3Schema 'definitions' is not supported";
  return {};
}

// The first NewStructural error among the schemas of list keyword `k` (allOf, anyOf, oneOf).
std::string list_error(const json& s, const char* k) {
  const json* list = keyword(s, k);
  for (const json& sub : list != nullptr && list->is_array() ? *list : empty_array()) {
    if (std::string e = new_structural_error(sub); !e.empty()) return e;
  }
  return {};
}

// The first NewStructural error among `s`'s child schemas: items, properties,
// additionalProperties.
std::string child_error(const json& s) {
  const json* items = keyword(s, "items");
  if (items != nullptr && items->is_array()) {
    return "OpenAPIV3Schema 'items' must be a schema, but is an array";
  }
  if (std::string e = items != nullptr ? new_structural_error(*items) : ""; !e.empty()) return e;
  const json* props = keyword(s, "properties");
  for (const json& p : props != nullptr && props->is_object() ? *props : empty_object()) {
    if (std::string e = new_structural_error(p); !e.empty()) return e;
  }
  const json* extra = additional_schema(s);
  return extra != nullptr ? new_structural_error(*extra) : "";
}

}  // namespace

std::string new_structural_error(const json& s) {
  if (!s.is_object()) return {};
  if (std::string e = unsupported_field(s); !e.empty()) return e;
  const json* no = keyword(s, "not");
  if (std::string e = no != nullptr ? new_structural_error(*no) : ""; !e.empty()) return e;
  for (const char* k : {"allOf", "anyOf", "oneOf"}) {
    if (std::string e = list_error(s, k); !e.empty()) return e;
  }
  const json* preserve = keyword(s, "x-kubernetes-preserve-unknown-fields");
  if (preserve != nullptr && preserve->is_boolean() && !preserve->get<bool>()) {
    return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined";
  }
  return child_error(s);
}

namespace {

// --- Value validations ----------------------------------------------------------------------

void nested_value_validation(const json& v, bool skip_any_of, bool skip_all_of_any_of, Level lvl,
                             const std::string& p, FieldErrors& errs);

// anyOf: [{type: integer}, {type: string}], the one place a value validation may name types.
bool is_int_or_string_any_of(const json* any_of) {
  if (any_of == nullptr || !any_of->is_array() || any_of->size() != 2) return false;
  auto only_type = [](const json& e, std::string_view t) {
    if (!e.is_object() || string_keyword(e, "type") != t) return false;
    return std::all_of(e.begin(), e.end(),
                       [&](const json& v) { return v.is_null() || &v == &e.at("type"); });
  };
  return only_type((*any_of)[0], "integer") && only_type((*any_of)[1], "string");
}

bool is_int_or_string_all_of(const json& s) {
  const json* all_of = keyword(s, "allOf");
  return all_of != nullptr && all_of->is_array() && !all_of->empty() &&
         is_int_or_string_any_of(keyword((*all_of)[0], "anyOf"));
}

void value_validation(const json& s, bool skip_any_of, bool skip_first_all_of_any_of, Level lvl,
                      const std::string& p, FieldErrors& errs) {
  auto each = [&](const char* k, auto&& fn) {
    const json* list = keyword(s, k);
    if (list == nullptr || !list->is_array()) return;
    for (std::size_t i = 0; i < list->size(); ++i) fn((*list)[i], index(p + "." + k, i), i);
  };
  if (!skip_any_of) {
    each("anyOf", [&](const json& v, const std::string& vp, std::size_t) {
      nested_value_validation(v, false, false, lvl, vp, errs);
    });
  }
  each("allOf", [&](const json& v, const std::string& vp, std::size_t i) {
    nested_value_validation(v, skip_first_all_of_any_of && i == 0, false, lvl, vp, errs);
  });
  each("oneOf", [&](const json& v, const std::string& vp, std::size_t) {
    nested_value_validation(v, false, false, lvl, vp, errs);
  });
  if (const json* no = keyword(s, "not"))
    nested_value_validation(*no, false, false, lvl, p + ".not", errs);
  std::string_view pattern = string_keyword(s, "pattern");
  if (!pattern.empty()) {
    const std::string& error = pattern_error(compile_pattern(std::string(pattern)));
    if (!error.empty()) {
      invalid(errs, p + ".pattern", std::string(pattern),
              "must be a valid regular expression, but isn't: " + error);
    }
  }
}

// Structural keywords have no place inside allOf/anyOf/oneOf/not.
void forbidden_in_value_validation(const json& v, const std::string& p, FieldErrors& errs) {
  struct Rule {
    const char* key;
    const char* detail;
    bool (*set)(const json&);
  };
  static const auto non_empty_string = [](const json& x) {
    return x.is_string() && !x.get_ref<const std::string&>().empty();
  };
  static const auto is_true = [](const json& x) { return x.is_boolean() && x.get<bool>(); };
  static const auto present = [](const json&) { return true; };
  static const auto non_empty = [](const json& x) {
    return !(x.is_array() || x.is_object()) || !x.empty();
  };
  static const auto schema_or_true = [](const json& x) {
    return x.is_object() || (x.is_boolean() && x.get<bool>());
  };
  static const Rule kRules[] = {
      {"type", "must be empty to be structural", +non_empty_string},
      {"additionalProperties", "must be undefined to be structural", +schema_or_true},
      {"default", "must be undefined to be structural", +present},
      {"title", "must be empty to be structural", +non_empty_string},
      {"description", "must be empty to be structural", +non_empty_string},
      {"nullable", "must be false to be structural", +is_true},
      {"x-kubernetes-preserve-unknown-fields", "must be false to be structural", +is_true},
      {"x-kubernetes-embedded-resource", "must be false to be structural", +is_true},
      {"x-kubernetes-int-or-string", "must be false to be structural", +is_true},
      {"x-kubernetes-list-map-keys", "must be empty to be structural", +non_empty},
      {"x-kubernetes-list-type", "must be undefined to be structural", +present},
      {"x-kubernetes-map-type", "must be undefined to be structural", +present},
      {"x-kubernetes-validations", "must be empty to be structural", +non_empty},
  };
  for (const Rule& r : kRules) {
    const json* x = keyword(v, r.key);
    if (x != nullptr && r.set(*x)) forbidden(errs, p + "." + r.key, r.detail);
  }
  if (property(v, "metadata") != nullptr) {
    forbidden(errs, properties_key(p, "metadata"), "must not be specified in a nested context");
  }
}

void nested_value_validation(const json& v, bool skip_any_of, bool skip_all_of_any_of, Level lvl,
                             const std::string& p, FieldErrors& errs) {
  if (!v.is_object()) return;
  value_validation(v, skip_any_of, skip_all_of_any_of, lvl, p, errs);
  if (const json* items = items_schema(v))
    nested_value_validation(*items, false, false, lvl, p + ".items", errs);
  if (const json* props = keyword(v, "properties"); props != nullptr && props->is_object()) {
    for (auto it = props->begin(); it != props->end(); ++it) {
      nested_value_validation(*it, false, false, Level::kField, properties_key(p, it.key()), errs);
    }
  }
  forbidden_in_value_validation(v, p, errs);
}

// --- Root metadata --------------------------------------------------------------------------

// The keywords JSONSchemaProps decodes (Go drops the others silently).
bool is_schema_keyword(std::string_view k) {
  static const std::set<std::string_view> kKnown = {"id",
                                                    "$schema",
                                                    "$ref",
                                                    "description",
                                                    "type",
                                                    "format",
                                                    "title",
                                                    "default",
                                                    "maximum",
                                                    "exclusiveMaximum",
                                                    "minimum",
                                                    "exclusiveMinimum",
                                                    "maxLength",
                                                    "minLength",
                                                    "pattern",
                                                    "maxItems",
                                                    "minItems",
                                                    "uniqueItems",
                                                    "multipleOf",
                                                    "enum",
                                                    "maxProperties",
                                                    "minProperties",
                                                    "required",
                                                    "items",
                                                    "allOf",
                                                    "oneOf",
                                                    "anyOf",
                                                    "not",
                                                    "properties",
                                                    "additionalProperties",
                                                    "patternProperties",
                                                    "dependencies",
                                                    "additionalItems",
                                                    "definitions",
                                                    "externalDocs",
                                                    "example",
                                                    "nullable",
                                                    "x-kubernetes-preserve-unknown-fields",
                                                    "x-kubernetes-embedded-resource",
                                                    "x-kubernetes-int-or-string",
                                                    "x-kubernetes-list-map-keys",
                                                    "x-kubernetes-list-type",
                                                    "x-kubernetes-map-type",
                                                    "x-kubernetes-validations"};
  return kKnown.count(k) != 0;
}

// Whether keyword `k` of root metadata counts as specified once Go has decoded it: zero
// strings and bools do not, nor empty enum/allOf/anyOf/oneOf lists; pointers and slices do.
bool metadata_keyword_set(const std::string& k, const json& v) {
  if (v.is_null() || !is_schema_keyword(k)) return false;
  bool pointer = k == "x-kubernetes-list-type" || k == "x-kubernetes-map-type" ||
                 k == "x-kubernetes-preserve-unknown-fields";
  if (v.is_string() && !pointer) return !v.get_ref<const std::string&>().empty();
  if (v.is_boolean() && !pointer) return v.get<bool>();
  if (v.is_array() && (k == "enum" || k == "allOf" || k == "anyOf" || k == "oneOf")) {
    return !v.empty();
  }
  return true;
}

void metadata_invariants(const json& m, bool check_metadata, Level lvl, const std::string& p,
                         FieldErrors& errs) {
  std::string_view type = string_keyword(m, "type");
  if (check_metadata && type != "object")
    invalid(errs, p + ".type", std::string(type), "must be object");
  if (lvl != Level::kRoot) return;
  bool only_names = true;
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (it.key() == "type" || it.key() == "default") continue;
    if (it.key() == "properties" && it->is_object()) {
      bool name = it->contains("name"), generate = it->contains("generateName");
      std::size_t n = it->size();
      only_names =
          only_names && (n == 0 || (name && generate && n == 2) || ((name || generate) && n == 1));
      continue;
    }
    only_names = only_names && !metadata_keyword_set(it.key(), *it);
  }
  if (!only_names) {
    forbidden(errs, p,
              "must not specify anything other than name and generateName, but metadata is "
              "implicitly specified");
  }
}

// --- Structural invariants ------------------------------------------------------------------

void type_invariants(const json& s, Level lvl, const std::string& p, FieldErrors& errs) {
  std::string_view type = string_keyword(s, "type");
  bool embedded = flag(s, "x-kubernetes-embedded-resource");
  if (embedded && type != "object") {
    const char* why = "must be object if x-kubernetes-embedded-resource is true";
    if (type.empty())
      required(errs, p + ".type", why);
    else
      invalid(errs, p + ".type", std::string(type), why);
  } else if (type.empty() && !flag(s, "x-kubernetes-int-or-string") &&
             !flag(s, "x-kubernetes-preserve-unknown-fields")) {
    required(errs, p + ".type",
             lvl == Level::kRoot   ? "must not be empty at the root"
             : lvl == Level::kItem ? "must not be empty for specified array items"
                                   : "must not be empty for specified object fields");
  }
  if (embedded && keyword(s, "additionalProperties") != nullptr) {
    forbidden(errs, p + ".additionalProperties",
              "must not be used if x-kubernetes-embedded-resource is set");
  }
  if (lvl == Level::kRoot && !type.empty() && type != "object") {
    invalid(errs, p + ".type", std::string(type), "must be object at the root");
  }
}

void meta_property_invariants(const json& s, Level lvl, const std::string& p, FieldErrors& errs) {
  bool check_metadata = lvl == Level::kRoot || flag(s, "x-kubernetes-embedded-resource");
  for (const char* k : {"kind", "apiVersion"}) {
    const json* prop = property(s, k);
    std::string_view type = prop != nullptr ? string_keyword(*prop, "type") : "";
    if (check_metadata && prop != nullptr && type != "string") {
      invalid(errs, properties_key(p, k) + ".type", std::string(type), "must be string");
    }
  }
  if (const json* meta = property(s, "metadata")) {
    metadata_invariants(*meta, check_metadata, lvl, properties_key(p, "metadata"), errs);
  }
  const json* props = keyword(s, "properties");
  if (flag(s, "x-kubernetes-embedded-resource") &&
      !flag(s, "x-kubernetes-preserve-unknown-fields") && !has_entries(props)) {
    required(errs, p + ".properties",
             "must not be empty if x-kubernetes-embedded-resource is true without "
             "x-kubernetes-preserve-unknown-fields");
  }
}

void invariants(const json& s, Level lvl, const std::string& p, FieldErrors& errs) {
  if (!s.is_object()) return;
  const json* items = items_schema(s);
  if (string_keyword(s, "type") == "array" && items == nullptr)
    required(errs, p + ".items", "must be specified");
  if (items != nullptr) invariants(*items, Level::kItem, p + ".items", errs);
  if (const json* props = keyword(s, "properties"); props != nullptr && props->is_object()) {
    for (auto it = props->begin(); it != props->end(); ++it) {
      invariants(*it, Level::kField, properties_key(p, it.key()), errs);
    }
  }
  if (keyword(s, "additionalProperties") != nullptr) {
    if (lvl == Level::kRoot)
      forbidden(errs, p + ".additionalProperties", "must not be used at the root");
    if (const json* extra = additional_schema(s))
      invariants(*extra, Level::kField, p + ".additionalProperties", errs);
  }
  if (flag(s, "x-kubernetes-int-or-string")) {
    const char* why = "must be false if x-kubernetes-int-or-string is true";
    if (flag(s, "x-kubernetes-preserve-unknown-fields"))
      invalid(errs, p + ".x-kubernetes-preserve-unknown-fields", true, why);
    if (flag(s, "x-kubernetes-embedded-resource"))
      invalid(errs, p + ".x-kubernetes-embedded-resource", true, why);
  }
  value_validation(s, is_int_or_string_any_of(keyword(s, "anyOf")), is_int_or_string_all_of(s), lvl,
                   p, errs);
  type_invariants(s, lvl, p, errs);
  meta_property_invariants(s, lvl, p, errs);
}

// --- Completeness -----------------------------------------------------------------------------

void nested_completeness(const json& v, const json* s, const std::string& sp, const std::string& vp,
                         FieldErrors& errs);

// Every field a value validation constrains must be specified by the structure beside it.
void completeness(const json& v, const json& s, const std::string& sp, const std::string& vp,
                  FieldErrors& errs) {
  if (const json* no = keyword(v, "not")) nested_completeness(*no, &s, sp, vp + ".not", errs);
  for (const char* k : {"allOf", "anyOf", "oneOf"}) {
    const json* list = keyword(v, k);
    for (std::size_t i = 0; list != nullptr && list->is_array() && i < list->size(); ++i) {
      nested_completeness((*list)[i], &s, sp, index(vp + "." + k, i), errs);
    }
  }
}

void nested_completeness(const json& v, const json* s, const std::string& sp, const std::string& vp,
                         FieldErrors& errs) {
  if (!v.is_object()) return;
  if (s == nullptr) return required(errs, sp, "because it is defined in " + vp);
  completeness(v, *s, sp, vp, errs);
  if (const json* items = items_schema(v)) {
    nested_completeness(*items, items_schema(*s), sp + ".items", vp + ".items", errs);
  }
  const json* props = keyword(v, "properties");
  for (auto it = props != nullptr && props->is_object() ? props->begin() : v.end();
       props != nullptr && props->is_object() && it != props->end(); ++it) {
    std::string fp = properties_key(sp, it.key()), vfp = properties_key(vp, it.key());
    const json* structural = property(*s, it.key());
    if (structural == nullptr)
      required(errs, fp, "because it is defined in " + vfp);
    else
      nested_completeness(*it, structural, fp, vfp, errs);
  }
}

}  // namespace

void check_structural(const json& schema, const std::string& path, FieldErrors& errs) {
  FieldErrors found;
  invariants(schema, Level::kRoot, path, found);
  completeness(schema, schema, path, path, found);
  // kube sorts these by their text
  std::stable_sort(found.begin(), found.end(), [](const FieldError& a, const FieldError& b) {
    return a.to_string() < b.to_string();
  });
  errs.insert(errs.end(), found.begin(), found.end());
}

}  // namespace vkube::apiserver::crd::detail
