#include "vkube/schema/openapi.h"

#include <set>

namespace vkube::schema {

namespace {

using json = nlohmann::json;

json scalar_schema(Type t, const std::string& format) {
  json s;
  switch (t) {
    case Type::kString: s = {{"type", "string"}}; break;
    case Type::kBytes: s = {{"type", "string"}, {"format", "byte"}}; break;
    case Type::kBool: s = {{"type", "boolean"}}; break;
    case Type::kInt32:
    case Type::kUint32: s = {{"type", "integer"}, {"format", "int32"}}; break;
    case Type::kInt64:
    case Type::kUint64: s = {{"type", "integer"}, {"format", "int64"}}; break;
    case Type::kDouble:
    case Type::kFloat: s = {{"type", "number"}, {"format", "double"}}; break;
    case Type::kMessage: s = json::object(); break;
  }
  if (!format.empty()) s["format"] = format;
  return s;
}

json ref_schema(const Message& m) {
  return {{"allOf", json::array({{{"$ref", openapi_ref(m)}}})}, {"default", json::object()}};
}

// The schema of one value of field `f` (an element, for lists).
json value_schema(const Field& f, Type t) {
  if (t == Type::kMessage) return ref_schema(*f.message);
  json s = scalar_schema(t, f.format);
  if (t == Type::kString) s["default"] = "";
  return s;
}

void add_properties(const Message& m, json& props, json& required) {
  for (const Field& f : m.fields) {
    if (f.inline_ && f.is_message() && !f.repeated) {
      add_properties(*f.message, props, required);  // an embedded struct's fields are ours
      continue;
    }
    json p;
    if (f.is_map) {
      p = {{"type", "object"}, {"additionalProperties", value_schema(f, f.map_value)}};
      if (!f.map_type.empty()) p["x-kubernetes-map-type"] = f.map_type;
    } else if (f.repeated) {
      p = {{"type", "array"}, {"items", value_schema(f, f.type)}};
      if (!f.list_type.empty()) p["x-kubernetes-list-type"] = f.list_type;
      if (!f.list_map_keys.empty()) p["x-kubernetes-list-map-keys"] = f.list_map_keys;
    } else if (f.type == Type::kMessage) {
      p = ref_schema(*f.message);
      if (!f.map_type.empty() && f.map_type != "granular") p["x-kubernetes-map-type"] = f.map_type;
    } else {
      p = scalar_schema(f.type, f.format);
    }
    if (!f.patch_strategy.empty()) p["x-kubernetes-patch-strategy"] = f.patch_strategy;
    if (!f.patch_merge_key.empty()) p["x-kubernetes-patch-merge-key"] = f.patch_merge_key;
    props[f.json_name] = std::move(p);
    if (f.required) required.push_back(f.json_name);
  }
}

json message_schema(const Message& m, const std::string& list_of) {
  switch (m.json_format) {
    case JsonFormat::kQuantity:
      return {{"description", "A fixed-point number with a unit suffix: 100m, 2Gi, 1.5."},
              {"oneOf", json::array({{{"type", "string"}}, {{"type", "number"}}})}};
    case JsonFormat::kIntOrString:
      return {{"description", "An int32 or a string."},
              {"format", "int-or-string"},
              {"oneOf", json::array({{{"type", "integer"}}, {{"type", "string"}}})}};
    case JsonFormat::kTime:
      return {{"description", "An RFC 3339 date and time, in seconds."},
              {"type", "string"},
              {"format", "date-time"}};
    case JsonFormat::kMicroTime:
      return {{"description", "An RFC 3339 date and time, in microseconds."},
              {"type", "string"},
              {"format", "date-time"}};
    case JsonFormat::kDuration:
      return {{"description", "A duration such as 1m30s."}, {"type", "string"}};
    case JsonFormat::kRawExtension:
      return {{"description", "An embedded object."}, {"type", "object"}};
    case JsonFormat::kFieldsV1:
      return {{"description", "A set of fields, in the fieldsV1 format."}, {"type", "object"}};
    case JsonFormat::kJson:
      return {{"description", "Any JSON value."}, {"x-kubernetes-preserve-unknown-fields", true}};
    case JsonFormat::kStringList:
      return {{"type", "array"}, {"items", {{"type", "string"}, {"default", ""}}}};
    case JsonFormat::kSchemaOrArray:
    case JsonFormat::kSchemaOrBool:
    case JsonFormat::kSchemaOrStringArray:
      return {{"description", "A schema, or its " +
                                  std::string(m.json_format == JsonFormat::kSchemaOrBool ? "boolean"
                                                                                         : "array") +
                                  " alternative."},
              {"x-kubernetes-preserve-unknown-fields", true}};
    case JsonFormat::kObject: break;
  }
  json props = json::object();
  json required = json::array();
  const bool typed = !m.kind.empty() || !list_of.empty();
  if (typed) {
    props["apiVersion"] = {{"type", "string"},
                           {"description", "The versioned schema of this object: group/version."}};
    props["kind"] = {{"type", "string"}, {"description", "The REST resource this object represents."}};
  }
  add_properties(m, props, required);
  json s = {{"type", "object"}, {"properties", std::move(props)}};
  if (!required.empty()) s["required"] = std::move(required);
  if (!m.kind.empty()) s["description"] = m.kind + " (" + (m.group.empty() ? "" : m.group + "/") + m.version + ")";
  if (typed)
    s["x-kubernetes-group-version-kind"] =
        json::array({{{"group", m.group}, {"version", m.version}, {"kind", m.kind.empty() ? m.name : m.kind}}});
  return s;
}

void visit(const Message& m, std::set<const Message*>& seen, std::vector<const Message*>& order) {
  if (!seen.insert(&m).second) return;
  order.push_back(&m);
  for (const Field& f : m.fields)
    if (f.message != nullptr) visit(*f.message, seen, order);
}

}  // namespace

std::string openapi_ref(const Message& m) { return "#/components/schemas/" + m.openapi_name(); }

json openapi_components(const std::vector<const Message*>& roots) {
  std::set<const Message*> seen;
  std::vector<const Message*> order;
  for (const Message* m : roots) visit(*m, seen, order);
  // Lists of served kinds are typed too.
  std::set<const Message*> lists;
  for (const Message* m : roots)
    if (!m->kind.empty())
      if (const Message* l = Registry::get().find(m->package + "." + m->kind + "List")) lists.insert(l);
  json out = json::object();
  for (const Message* m : order) out[m->openapi_name()] = message_schema(*m, lists.count(m) ? m->name : "");
  return out;
}

}  // namespace vkube::schema
