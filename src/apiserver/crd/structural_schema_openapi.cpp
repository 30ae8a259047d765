// CRD schema validation beyond structure (ValidateCustomResourceDefinitionOpenAPISchema and
// ValidateDefaults): unsupported keywords, defaults where kube forbids them, defaults that would
// be pruned or fail their own schema, x-kubernetes-list-type / list-map-keys / map-type
// consistency. check_schema() runs the whole sequence in kube's order.
#include <algorithm>
#include <set>

#include "structural.h"
#include "structural_internal.h"

namespace vkube::apiserver::crd {
namespace {

using namespace detail;

bool is_meta_field(std::string_view k) {
  return k == "apiVersion" || k == "kind" || k == "metadata";
}

std::string properties_key(const std::string& p, const std::string& k) {
  return key(p + ".properties", k);
}

// What the schema-walking checks know about where they are (specStandardValidatorV3).
struct Context {
  bool allow_defaults = true;
  std::string disallow_reason;
  bool inside_resource_meta = false;

  Context forbid_defaults(std::string reason) const {
    Context c = *this;
    c.allow_defaults = false;
    c.disallow_reason = std::move(reason);
    return c;
  }
};

void unsupported_keywords(const json& s, const std::string& p, const Context& ctx,
                          FieldErrors& errs) {
  std::string_view type = string_keyword(s, "type");
  static const std::vector<std::string> kTypes = {"array",  "boolean", "integer",
                                                  "number", "object",  "string"};
  if (!type.empty() && std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end()) {
    not_supported(errs, p + ".type", std::string(type), kTypes);
  }
  if (default_value(s) != nullptr && !ctx.allow_defaults) {
    forbidden(errs, p + ".default",
              "must not be set" + (ctx.disallow_reason.empty() ? "" : " " + ctx.disallow_reason));
  }
  auto non_empty = [&](const char* k) {
    const json* v = keyword(s, k);
    return v != nullptr && !((v->is_object() || v->is_array() || v->is_string()) && v->empty());
  };
  if (!string_keyword(s, "id").empty()) forbidden(errs, p + ".id", "id is not supported");
  if (keyword(s, "additionalItems"))
    forbidden(errs, p + ".additionalItems", "additionalItems is not supported");
  if (non_empty("patternProperties"))
    forbidden(errs, p + ".patternProperties", "patternProperties is not supported");
  if (non_empty("definitions")) forbidden(errs, p + ".definitions", "definitions is not supported");
  if (keyword(s, "dependencies"))
    forbidden(errs, p + ".dependencies", "dependencies is not supported");
  if (keyword(s, "$ref")) forbidden(errs, p + ".$ref", "$ref is not supported");
  if (type == "null")
    forbidden(errs, p + ".type", "type cannot be set to null, use nullable as an alternative");
  const json* items = keyword(s, "items");
  if (items != nullptr && items->is_array() && !items->empty()) {
    forbidden(errs, p + ".items", "items must be a schema object and not an array");
  }
  if (ctx.inside_resource_meta && flag(s, "x-kubernetes-embedded-resource")) {
    forbidden(errs, p + ".x-kubernetes-embedded-resource",
              "must not be used inside of resource meta");
  }
}

void openapi_schema(const json& s, const std::string& p, const Context& ctx, bool root,
                    FieldErrors& errs);

void children(const json& s, const std::string& p, const Context& ctx, bool root,
              FieldErrors& errs) {
  if (const json* extra = additional_schema(s)) {
    Context sub =
        ctx.inside_resource_meta
            ? ctx.forbid_defaults("inside additionalProperties applying to object metadata")
            : ctx;
    openapi_schema(*extra, p + ".additionalProperties", sub, false, errs);
  }
  if (const json* props = keyword(s, "properties"); props != nullptr && props->is_object()) {
    for (auto it = props->begin(); it != props->end(); ++it) {
      Context sub = ctx;
      if ((root || flag(s, "x-kubernetes-embedded-resource")) && is_meta_field(it.key())) {
        sub.inside_resource_meta = true;
        if (root) sub = sub.forbid_defaults("in top-level " + it.key());
      }
      openapi_schema(*it, properties_key(p, it.key()), sub, false, errs);
    }
  }
  if (const json* no = keyword(s, "not")) openapi_schema(*no, p + ".not", ctx, false, errs);
  for (const char* k : {"allOf", "oneOf", "anyOf"}) {
    const json* list = keyword(s, k);
    for (std::size_t i = 0; list != nullptr && list->is_array() && i < list->size(); ++i) {
      openapi_schema((*list)[i], index(p + "." + k, i), ctx, false, errs);
    }
  }
  for (const char* k : {"definitions", "dependencies"}) {
    const json* map = keyword(s, k);
    for (auto it = map != nullptr && map->is_object() ? map->begin() : s.end();
         map != nullptr && map->is_object() && it != map->end(); ++it) {
      openapi_schema(*it, key(p + "." + k, it.key()), ctx, false, errs);
    }
  }
  if (const json* items = keyword(s, "items")) {
    if (items->is_object()) openapi_schema(*items, p + ".items", ctx, false, errs);
    for (std::size_t i = 0; items->is_array() && i < items->size(); ++i) {
      openapi_schema((*items)[i], index(p + ".items", i), ctx, false, errs);
    }
  }
}

void require_type(const json& s, const std::string& p, std::string_view want,
                  const std::string& why, FieldErrors& errs) {
  std::string_view type = string_keyword(s, "type");
  if (type == want) return;
  if (type.empty())
    required(errs, p + ".type", why);
  else
    invalid(errs, p + ".type", std::string(type), why);
}

void set_items_atomic(const json& s, const std::string& p, FieldErrors& errs) {
  const json* items = items_schema(s);
  if (items == nullptr) return;
  std::string_view type = string_keyword(*items, "type");
  const char* why = "must be atomic as item of a list with x-kubernetes-list-type=set";
  const json* list_type = keyword(*items, "x-kubernetes-list-type");
  if (type == "array" && list_type != nullptr &&
      string_keyword(*items, "x-kubernetes-list-type") != "atomic") {
    invalid(errs, p + ".items.x-kubernetes-list-type", *list_type, why);
  }
  if (type == "object" && string_keyword(*items, "x-kubernetes-map-type") != "atomic") {
    invalid(errs, p + ".items.x-kubernetes-map-type", list_type != nullptr ? *list_type : json(),
            why);
  }
}

void map_list_items(const json& s, const json& keys, const std::string& p, FieldErrors& errs) {
  const json* items = keyword(s, "items");
  if (items == nullptr)
    return required(errs, p + ".items", "must have a schema if x-kubernetes-list-type is map");
  if (!items->is_object())
    return invalid(errs, p + ".items", *items,
                   "must only have a single schema if x-kubernetes-list-type is map");
  std::string_view type = string_keyword(*items, "type");
  if (type != "object") {
    return invalid(errs, p + ".items.type", std::string(type),
                   "must be object if parent array's x-kubernetes-list-type is map");
  }
  std::set<std::string> seen;
  for (const json& k : keys.is_array() ? keys : empty_array()) {
    std::string name = k.is_string() ? k.get<std::string>() : dump(k);
    if (const json* prop = property(*items, name)) {
      std::string_view ptype = string_keyword(*prop, "type");
      if (ptype == "array" || ptype == "object") {
        invalid(errs, properties_key(p + ".items", name) + ".type", std::string(type),
                "must be a scalar type if parent array's x-kubernetes-list-type is map");
      }
    } else {
      invalid(errs, p + ".x-kubernetes-list-map-keys", keys,
              "entries must all be names of item properties");
    }
    if (!seen.insert(name).second)
      invalid(errs, p + ".x-kubernetes-list-map-keys", keys, "must not contain duplicate entries");
  }
}

void list_type_rules(const json& s, const std::string& p, FieldErrors& errs) {
  const json* list_type = keyword(s, "x-kubernetes-list-type");
  std::string_view lt = string_keyword(s, "x-kubernetes-list-type");
  if (list_type != nullptr && string_keyword(s, "type") != "array") {
    require_type(s, p, "array", "must be array if x-kubernetes-list-type is specified", errs);
  } else if (lt == "set") {
    set_items_atomic(s, p, errs);
  }
  if (list_type != nullptr && lt != "atomic" && lt != "set" && lt != "map") {
    not_supported(errs, p + ".x-kubernetes-list-type", *list_type, {"atomic", "set", "map"});
  }
  const json* keys = keyword(s, "x-kubernetes-list-map-keys");
  bool has_keys = keys != nullptr && keys->is_array() && !keys->empty();
  if (has_keys && list_type == nullptr) {
    required(errs, p + ".x-kubernetes-list-type",
             "must be map if x-kubernetes-list-map-keys is non-empty");
  } else if (has_keys && lt != "map") {
    invalid(errs, p + ".x-kubernetes-list-type", *list_type,
            "must be map if x-kubernetes-list-map-keys is non-empty");
  }
  if (lt == "map") {
    if (!has_keys)
      required(errs, p + ".x-kubernetes-list-map-keys",
               "must not be empty if x-kubernetes-list-type is map");
    map_list_items(s, keys != nullptr ? *keys : empty_array(), p, errs);
  }
}

// validateMapListKeysMapSet: items of sets and maps are never null; map keys never missing.
void map_set_items(const json& s, const std::string& p, FieldErrors& errs) {
  const json* items = items_schema(s);
  std::string lt(string_keyword(s, "x-kubernetes-list-type"));
  if (items == nullptr || (lt != "set" && lt != "map")) return;
  if (flag(*items, "nullable"))
    forbidden(errs, p + ".items.nullable",
              "cannot be nullable when x-kubernetes-list-type is " + lt);
  if (lt != "map") return;
  const json* required_names = keyword(*items, "required");
  const json* keys = keyword(s, "x-kubernetes-list-map-keys");
  for (const json& k : keys != nullptr && keys->is_array() ? *keys : empty_array()) {
    if (!k.is_string()) continue;
    const json* prop = property(*items, k.get_ref<const std::string&>());
    if (prop == nullptr) continue;
    std::string base = properties_key(p + ".items", k.get<std::string>());
    bool is_required =
        required_names != nullptr && required_names->is_array() &&
        std::find(required_names->begin(), required_names->end(), k) != required_names->end();
    if (!is_required && default_value(*prop) == nullptr) {
      required(errs, base + ".default",
               "this property is in x-kubernetes-list-map-keys, so it must have a default or be a "
               "required property");
    }
    if (flag(*prop, "nullable"))
      forbidden(errs, base + ".nullable",
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable");
  }
}

void extension_rules(const json& s, const std::string& p, FieldErrors& errs) {
  const json* preserve = keyword(s, "x-kubernetes-preserve-unknown-fields");
  if (preserve != nullptr && preserve->is_boolean() && !preserve->get<bool>()) {
    invalid(errs, p + ".x-kubernetes-preserve-unknown-fields", false, "must be true or undefined");
  }
  if (const json* map_type = keyword(s, "x-kubernetes-map-type")) {
    require_type(s, p, "object", "must be object if x-kubernetes-map-type is specified", errs);
    std::string_view mt = string_keyword(s, "x-kubernetes-map-type");
    if (mt != "atomic" && mt != "granular") {
      not_supported(errs, p + ".x-kubernetes-map-type", *map_type, {"atomic", "granular"});
    }
  }
  list_type_rules(s, p, errs);
  map_set_items(s, p, errs);
}

void openapi_schema(const json& s, const std::string& p, const Context& ctx, bool root,
                    FieldErrors& errs) {
  if (!s.is_object()) return;
  unsupported_keywords(s, p, ctx, errs);
  if (flag(s, "uniqueItems")) {
    forbidden(errs, p + ".uniqueItems",
              "uniqueItems cannot be set to true since the runtime complexity becomes quadratic");
  }
  const json* extra = keyword(s, "additionalProperties");
  const json* props = keyword(s, "properties");
  bool has_props = props != nullptr && props->is_object() && !props->empty();
  if (extra != nullptr && has_props && !(extra->is_boolean() && extra->get<bool>())) {
    forbidden(errs, p + ".additionalProperties",
              "additionalProperties and properties are mutual exclusive");
  }
  children(s, p, ctx, root, errs);
  extension_rules(s, p, errs);
}

// --- Defaults -------------------------------------------------------------------------------

void check_default(const json& s, const json& d, bool embedded, const std::string& p,
                   FieldErrors& errs) {
  json pruned = d;
  prune_fields(pruned, s, embedded, nullptr);
  if (pruned != d) invalid(errs, p + ".default", d, "must not have unknown fields");
  FieldErrors meta;
  validate_embedded(s, d, p + ".default", embedded, meta);
  if (!meta.empty()) {
    errs.insert(errs.end(), meta.begin(), meta.end());
    return;
  }
  openapi_validate(s, d, p + ".default", errs);
}

// ValidateDefaults: every default (outside additionalProperties) pruned and valid. Defaults of
// an embedded resource's apiVersion/kind/metadata are validated against their own schema only.
void check_defaults(const json& s, const std::string& p, bool inside_meta, bool root,
                    FieldErrors& errs) {
  if (!s.is_object()) return;
  bool embedded = root || flag(s, "x-kubernetes-embedded-resource");
  if (embedded) inside_meta = false;
  if (const json* d = default_value(s)) {
    if (inside_meta)
      openapi_validate(s, *d, p + ".default", errs);
    else
      check_default(s, *d, embedded, p, errs);
  }
  if (const json* items = items_schema(s))
    check_defaults(*items, p + ".items", inside_meta, false, errs);
  if (const json* props = keyword(s, "properties"); props != nullptr && props->is_object()) {
    for (auto it = props->begin(); it != props->end(); ++it) {
      bool sub = inside_meta || (embedded && is_meta_field(it.key()));
      check_defaults(*it, properties_key(p, it.key()), sub, false, errs);
    }
  }
}

}  // namespace

void check_schema(const json& schema, const std::string& path, FieldErrors& errs) {
  if (!schema.is_object()) return;
  std::size_t start = errs.size();
  if (flag(schema, "nullable"))
    forbidden(errs, path + ".nullable", "nullable cannot be true at the root");
  std::string init_error = new_structural_error(schema);
  if (init_error.empty()) {
    std::size_t before = errs.size();
    check_structural(schema, path, errs);
    if (errs.size() == before) check_defaults(schema, path, false, true, errs);
  }
  openapi_schema(schema, path, Context{}, true, errs);
  // NewStructural's errors repeat what the checks above say, so kube shows them only alone.
  if (errs.size() == start && !init_error.empty()) invalid(errs, path, "", init_error);
}

}  // namespace vkube::apiserver::crd
