// The custom resource checks that follow schema validation in kube's CR strategy:
// x-kubernetes-embedded-resource objects need a well-formed apiVersion, kind and metadata
// (objectmeta.Validate), and x-kubernetes-list-type set/map arrays must not repeat an item or a
// key (listtype.ValidateListSetsAndMaps). Fields are named as field.Path names them
// ("spec.labels[foo]", "spec.items[1]").
#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>

#include "structural.h"
#include "structural_internal.h"
#include "vkube/api/validation.h"

namespace vkube::apiserver::crd {
namespace {

using namespace detail;

// Go's encoding/json name for the JSON type of a value it failed to decode.
std::string json_type_name(const json& v) {
  if (v.is_string()) return "string";
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "bool";
  if (v.is_array()) return "array";
  return "object";
}

// Decoding `meta` into metav1.ObjectMeta: its first type error in encoding/json's words.
std::string object_meta_decode_error(const json& meta) {
  if (!meta.is_object()) {
    return "json: cannot unmarshal " + json_type_name(meta) +
           " into Go value of type v1.ObjectMeta";
  }
  static const std::set<std::string_view, std::less<>> kStrings = {
      "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion"};
  for (auto it = meta.begin(); it != meta.end(); ++it) {
    const json& v = *it;
    std::string field = "Go struct field ObjectMeta." + it.key();
    if (kStrings.count(it.key()) && !v.is_string() && !v.is_null()) {
      return "json: cannot unmarshal " + json_type_name(v) + " into " + field + " of type string";
    }
    if (it.key() != "labels" && it.key() != "annotations") continue;
    if (!v.is_object() && !v.is_null()) {
      return "json: cannot unmarshal " + json_type_name(v) + " into " + field +
             " of type map[string]string";
    }
    for (const json& entry : v.is_object() ? v : empty_object()) {
      if (!entry.is_string() && !entry.is_null()) {
        return "json: cannot unmarshal " + json_type_name(entry) + " into " + field +
               " of type string";
      }
    }
  }
  return {};
}

void add_messages(FieldErrors& errs, const std::string& field, const std::string& value,
                  const std::vector<std::string>& messages) {
  for (const std::string& m : messages) invalid(errs, field, value, m);
}

// ValidateObjectMeta's checks on an embedded resource's metadata that need no cluster state:
// name as a path segment, namespace as a DNS label, label keys and values.
void validate_object_meta(const json& meta, const std::string& path, FieldErrors& errs) {
  std::string name(string_keyword(meta, "name"));
  if (!name.empty()) {
    add_messages(errs, child(path, "name"), name, api::validate_path_segment_name(name));
  }
  std::string ns(string_keyword(meta, "namespace"));
  if (!ns.empty())
    add_messages(errs, child(path, "namespace"), ns, api::validate_dns1123_label(ns));
  auto labels = meta.find("labels");
  if (labels == meta.end() || !labels->is_object()) return;
  std::string field = child(path, "labels");
  for (auto it = labels->begin(); it != labels->end(); ++it) {
    add_messages(errs, field, it.key(), api::validate_qualified_name(it.key()));
    std::string value = it->is_string() ? it->get<std::string>() : "";
    add_messages(errs, field, value, api::validate_label_value(value));
  }
}

void validate_api_version(const json& v, const std::string& field, FieldErrors& errs) {
  if (!v.is_string()) return invalid(errs, field, v, "must be a string");
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty()) return invalid(errs, field, s, "must not be empty");
  if (s != "/" && std::count(s.begin(), s.end(), '/') > 1) {
    invalid(errs, field, s, "unexpected GroupVersion string: " + s);
  }
}

void validate_kind(const json& v, const std::string& field, FieldErrors& errs) {
  if (!v.is_string()) return invalid(errs, field, v, "must be a string");
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty()) return invalid(errs, field, s, "must not be empty");
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::vector<std::string> problems = api::validate_dns1035_label(lower);
  if (problems.empty()) return;
  std::string joined;
  for (const std::string& p : problems) joined += (joined.empty() ? "" : ",") + p;
  invalid(errs, field, s, "may have mixed case, but should otherwise match: " + joined);
}

void validate_embedded_resource(const json& x, const std::string& path, FieldErrors& errs) {
  if (!x.contains("apiVersion")) required(errs, child(path, "apiVersion"));
  if (!x.contains("kind")) required(errs, child(path, "kind"));
  for (auto it = x.begin(); it != x.end(); ++it) {
    std::string field = child(path, it.key());
    if (it.key() == "apiVersion") validate_api_version(*it, field, errs);
    if (it.key() == "kind") validate_kind(*it, field, errs);
    if (it.key() != "metadata" || it->is_null()) continue;
    std::string error = object_meta_decode_error(*it);
    if (!error.empty())
      invalid(errs, field, *it, error);
    else
      validate_object_meta(*it, field, errs);
  }
}

void walk_embedded(const json& x, const json* s, const std::string& path, bool root,
                   FieldErrors& errs) {
  if (s == nullptr || !s->is_object()) return;
  if (x.is_object()) {
    if (root || flag(*s, "x-kubernetes-embedded-resource"))
      validate_embedded_resource(x, path, errs);
    for (auto it = x.begin(); it != x.end(); ++it) {
      if (const json* prop = property(*s, it.key())) {
        walk_embedded(*it, prop, child(path, it.key()), false, errs);
      } else if (const json* extra = additional_schema(*s)) {
        walk_embedded(*it, extra, key(path, it.key()), false, errs);
      }
    }
  } else if (x.is_array()) {
    const json* items = items_schema(*s);
    for (std::size_t i = 0; i < x.size(); ++i)
      walk_embedded(x[i], items, index(path, i), false, errs);
  }
}

// --- x-kubernetes-list-type -------------------------------------------------------------------

// The indices of second occurrences, as listtype reports each repeated value once.
std::vector<std::size_t> repeated(const std::vector<std::string>& keys) {
  std::vector<std::size_t> out;
  std::unordered_map<std::string, int> seen;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (++seen[keys[i]] == 2) out.push_back(i);
  }
  return out;
}

void validate_set(const json& x, const std::string& path, FieldErrors& errs) {
  std::vector<std::string> keys;
  for (const json& item : x) keys.push_back(dump(item));
  for (std::size_t i : repeated(keys)) duplicate(errs, index(path, i), x[i]);
}

void validate_map_list(const json& x, const json& s, const std::string& path, FieldErrors& errs) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!x[i].is_object() && !x[i].is_null()) {
      return invalid(errs, index(path, i), x[i], "must be an object for an array of list-type map");
    }
  }
  const json* names = keyword(s, "x-kubernetes-list-map-keys");
  std::vector<json> key_values;
  std::vector<std::string> keys;
  for (const json& item : x) {
    json k = json::object();
    for (const json& name : names != nullptr && names->is_array() ? *names : empty_array()) {
      if (!name.is_string() || !item.is_object()) continue;
      auto it = item.find(name.get_ref<const std::string&>());
      if (it != item.end()) k[name.get<std::string>()] = *it;
    }
    keys.push_back(dump(k));
    key_values.push_back(std::move(k));
  }
  for (std::size_t i : repeated(keys)) duplicate(errs, index(path, i), key_values[i]);
}

void walk_lists(const json& x, const json* s, const std::string& path, FieldErrors& errs);

void walk_list_object(const json& x, const json& s, const std::string& path, FieldErrors& errs) {
  if (const json* extra = additional_schema(s)) {
    for (auto it = x.begin(); it != x.end(); ++it)
      walk_lists(*it, extra, key(path, it.key()), errs);
  }
  for (auto it = x.begin(); it != x.end(); ++it) {
    if (const json* prop = property(s, it.key()))
      walk_lists(*it, prop, child(path, it.key()), errs);
  }
}

void walk_lists(const json& x, const json* s, const std::string& path, FieldErrors& errs) {
  if (s == nullptr || !s->is_object()) return;
  if (x.is_object()) return walk_list_object(x, *s, path, errs);
  if (!x.is_array()) return;
  std::string_view type = string_keyword(*s, "x-kubernetes-list-type");
  if (type == "set" && x.size() > 1) validate_set(x, path, errs);
  if (type == "map") validate_map_list(x, *s, path, errs);
  const json* items = items_schema(*s);
  for (std::size_t i = 0; i < x.size(); ++i) walk_lists(x[i], items, index(path, i), errs);
}

}  // namespace

namespace detail {

void validate_embedded(const json& schema, const json& value, const std::string& path,
                       bool resource_root, FieldErrors& errs) {
  walk_embedded(value, &schema, path, resource_root, errs);
}

}  // namespace detail

void validate(const json& schema, const json& value, FieldErrors& errs) {
  openapi_validate(schema, value, "", errs);
  walk_embedded(value, &schema, "", false, errs);
  if (value.is_object()) walk_list_object(value, schema, "", errs);
}

}  // namespace vkube::apiserver::crd
