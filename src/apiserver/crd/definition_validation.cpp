// Validation of CustomResourceDefinitions, worded as kube-apiserver's
// (k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation).
#include <algorithm>
#include <set>

#include "cel_rules.h"
#include "definition.h"
#include "jsonpath.h"
#include "structural.h"
#include "vkube/api/limits.h"
#include "vkube/api/validation.h"

namespace vkube::apiserver::crd {

namespace {

using Type = FieldError::Type;

const json kNone;

const json& at(const json& obj, const char* key) {
  if (!obj.is_object()) return kNone;
  auto it = obj.find(key);
  return it == obj.end() ? kNone : *it;
}

std::string str(const json& obj, const char* key) {
  const json& v = at(obj, key);
  return v.is_string() ? v.get<std::string>() : "";
}

// Groups the built-in resources are served in: a CRD there would shadow them.
bool builtin_group(const std::string& g) {
  for (const builtin::Kind& k : builtin::builtin_kinds())
    if (k.resource.gv.group == g) return true;
  return false;
}

bool protected_group(const std::string& g) {
  for (const std::string suffix : {"k8s.io", "kubernetes.io"})
    if (g == suffix || (g.size() > suffix.size() && g.ends_with("." + suffix))) return true;
  return false;
}

void check_group(const json& crd, FieldErrors& errs) {
  std::string group = str(at(crd, "spec"), "group");
  if (group.empty()) {
    errs.push_back({Type::kRequired, "spec.group", "", {}});
    return;
  }
  for (auto& p : api::validate_dns1123_subdomain(group))
    errs.push_back({Type::kInvalid, "spec.group", p, group});
  if (group.find('.') == std::string::npos)
    errs.push_back(
        {Type::kInvalid, "spec.group", "should be a domain with at least one dot", group});
  if (builtin_group(group))
    errs.push_back({Type::kInvalid, "spec.group",
                    "is served by a built-in API group; choose another group", group});
  const json& ann = at(at(crd, "metadata"), "annotations");
  if (protected_group(group) && !at(ann, "api-approved.kubernetes.io").is_string())
    errs.push_back(
        {Type::kRequired,
         "metadata.annotations[api-approved.kubernetes.io]",
         "protected groups must have approval annotation \"api-approved.kubernetes.io\", "
         "see https://github.com/kubernetes/enhancements/pull/1111",
         {}});
}

void check_names(const json& crd, FieldErrors& errs) {
  const json& names = at(at(crd, "spec"), "names");
  std::string plural = str(names, "plural");
  if (plural.empty()) errs.push_back({Type::kRequired, "spec.names.plural", "", {}});
  for (const char* key : {"plural", "singular"}) {
    std::string v = str(names, key);
    if (v.empty()) continue;
    for (auto& p : api::validate_dns1035_label(v))
      errs.push_back({Type::kInvalid, std::string("spec.names.") + key, p, v});
  }
  if (str(names, "kind").empty()) errs.push_back({Type::kRequired, "spec.names.kind", "", {}});
  if (str(names, "kind") == str(names, "listKind") && !str(names, "kind").empty())
    errs.push_back({Type::kInvalid, "spec.names.listKind", "kind and listKind may not be the same",
                    str(names, "listKind")});
  const json& shorts = at(names, "shortNames");
  for (size_t i = 0; shorts.is_array() && i < shorts.size(); ++i)
    if (shorts[i].is_string())
      for (auto& p : api::validate_dns1035_label(shorts[i].get<std::string>()))
        errs.push_back(
            {Type::kInvalid, "spec.names.shortNames[" + std::to_string(i) + "]", p, shorts[i]});
  std::string expected = plural + "." + str(at(crd, "spec"), "group");
  std::string name = str(at(crd, "metadata"), "name");
  if (!plural.empty() && name != expected)
    errs.push_back(
        {Type::kInvalid, "metadata.name", "must be spec.names.plural+\".\"+spec.group", name});
}

void check_columns(const json& cols, const std::string& path, FieldErrors& errs) {
  static const std::vector<std::string> kTypes = {"boolean", "date", "integer", "number", "string"};
  for (size_t i = 0; cols.is_array() && i < cols.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    if (str(cols[i], "name").empty()) errs.push_back({Type::kRequired, p + ".name", "", {}});
    std::string type = str(cols[i], "type");
    if (std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end())
      errs.push_back(
          {Type::kNotSupported, p + ".type",
           "supported values: \"boolean\", \"date\", \"integer\", \"number\", \"string\"", type});
    std::string jp = str(cols[i], "jsonPath"), error;
    if (jp.empty())
      errs.push_back({Type::kRequired, p + ".jsonPath", "", {}});
    else if (!JsonPath::parse(jp, &error))
      errs.push_back({Type::kInvalid, p + ".jsonPath", "must be a simple json path: " + error, jp});
  }
}

void check_scale(const json& scale, const std::string& path, FieldErrors& errs) {
  for (const char* key : {"specReplicasPath", "statusReplicasPath", "labelSelectorPath"}) {
    std::string v = str(scale, key), error;
    if (v.empty()) {
      if (std::string(key) != "labelSelectorPath")
        errs.push_back({Type::kRequired, path + "." + key, "", {}});
      continue;
    }
    auto jp = JsonPath::parse(v, &error);
    if (!jp || !jp->is_simple_field())
      errs.push_back(
          {Type::kInvalid, path + "." + key, "should be a json path under .spec or .status", v});
  }
}

void check_versions(const json& crd, FieldErrors& errs) {
  const json& versions = at(at(crd, "spec"), "versions");
  if (!versions.is_array() || versions.empty()) {
    errs.push_back({Type::kRequired,
                    "spec.versions",
                    "must have exactly one version marked as storage version",
                    {}});
    return;
  }
  std::set<std::string> seen;
  int storage = 0;
  for (size_t i = 0; i < versions.size(); ++i) {
    const json& v = versions[i];
    std::string p = "spec.versions[" + std::to_string(i) + "]";
    std::string name = str(v, "name");
    if (name.empty()) errs.push_back({Type::kRequired, p + ".name", "", {}});
    for (auto& e : api::validate_dns1035_label(name))
      if (!name.empty()) errs.push_back({Type::kInvalid, p + ".name", e, name});
    if (!name.empty() && !seen.insert(name).second)
      errs.push_back({Type::kDuplicate, "spec.versions", "", name});
    if (at(v, "storage").is_boolean() && v["storage"].get<bool>()) ++storage;
    const json& schema = at(at(v, "schema"), "openAPIV3Schema");
    if (!schema.is_object())
      errs.push_back({Type::kRequired, p + ".schema.openAPIV3Schema", "schemas are required", {}});
    else if (!api::within_schema_limit(schema))  // before anything recurses into it
      errs.push_back({Type::kForbidden,
                      p + ".schema.openAPIV3Schema",
                      "must not nest objects or arrays deeper than " +
                          std::to_string(api::kMaxSchemaNestingDepth) + " levels",
                      {}});
    else
      check_schema(schema, p + ".schema.openAPIV3Schema", errs);
    check_columns(at(v, "additionalPrinterColumns"), p + ".additionalPrinterColumns", errs);
    const json& subs = at(v, "subresources");
    if (at(subs, "scale").is_object()) check_scale(subs["scale"], p + ".subresources.scale", errs);
  }
  if (storage != 1)
    errs.push_back({Type::kInvalid, "spec.versions",
                    "must have exactly one version marked as storage version",
                    std::to_string(storage) + " storage versions"});
}

}  // namespace

void validate_definition(const json& crd, const json* old, FieldErrors& errs) {
  check_group(crd, errs);
  check_names(crd, errs);
  std::string scope = str(at(crd, "spec"), "scope");
  if (scope != "Namespaced" && scope != "Cluster")
    errs.push_back({scope.empty() ? Type::kRequired : Type::kNotSupported, "spec.scope",
                    scope.empty() ? "" : "supported values: \"Cluster\", \"Namespaced\"",
                    scope.empty() ? json() : json(scope)});
  check_versions(crd, errs);
  validate_conversion(crd, errs);
  if (old != nullptr) {
    for (const char* key : {"group", "scope"}) {
      std::string was = str(at(*old, "spec"), key), now = str(at(crd, "spec"), key);
      if (was != now)
        errs.push_back({Type::kInvalid, std::string("spec.") + key, "field is immutable", now});
    }
  }
}

std::vector<std::string> definition_warnings(const json& crd) {
  std::vector<std::string> out;
  const json& versions = at(at(crd, "spec"), "versions");
  for (size_t i = 0; versions.is_array() && i < versions.size(); ++i) {
    const json& schema = at(at(versions[i], "schema"), "openAPIV3Schema");
    if (!schema.is_object() || !api::within_schema_limit(schema)) continue;
    std::string p = "spec.versions[" + std::to_string(i) + "].schema.openAPIV3Schema";
    for (std::string& w : cel::check_rules(schema, p))
      out.push_back("x-kubernetes-validations rule not enforced by vkube: " + w);
  }
  return out;
}

}  // namespace vkube::apiserver::crd
