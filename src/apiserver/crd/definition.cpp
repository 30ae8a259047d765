// A CRD's served kinds and status (kube's naming and establishing
// controllers, done at write time so a new kind is served at once).
#include "definition.h"

#include <algorithm>
#include <cctype>

#include "jsonpath.h"
#include "vkube/api/limits.h"

namespace vkube::apiserver::crd {

namespace {

const json kEmpty = json::object();

const json& at(const json& obj, const char* key) {
  if (!obj.is_object()) return kEmpty;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? kEmpty : *it;
}

std::string str(const json& obj, const char* key) {
  const json& v = at(obj, key);
  return v.is_string() ? v.get<std::string>() : "";
}

std::vector<std::string> strings(const json& v) {
  std::vector<std::string> out;
  if (v.is_array())
    for (const json& s : v)
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "v1beta2" -> {major 1, stage beta (1), minor 2}; kube-like versions only.
struct VersionKey {
  bool kube_like = false;
  int major = 0, stage = 2, minor = 0;  // stage: 2 GA, 1 beta, 0 alpha
};

VersionKey parse_version(const std::string& v) {
  VersionKey k;
  if (v.size() < 2 || v[0] != 'v' || !std::isdigit(static_cast<unsigned char>(v[1]))) return k;
  size_t i = 1;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])))
    k.major = k.major * 10 + (v[i++] - '0');
  if (i == v.size()) {
    k.kube_like = true;
    return k;
  }
  std::string rest = v.substr(i);
  size_t digits;
  if (rest.starts_with("alpha"))
    k.stage = 0, digits = 5;
  else if (rest.starts_with("beta"))
    k.stage = 1, digits = 4;
  else
    return k;
  if (digits == rest.size()) return k;  // "v1beta" is not kube-like
  for (size_t j = digits; j < rest.size(); ++j) {
    if (!std::isdigit(static_cast<unsigned char>(rest[j]))) return k;
    k.minor = k.minor * 10 + (rest[j] - '0');
  }
  k.kube_like = true;
  return k;
}

bool has_condition(const json& crd, const char* type, const char* status) {
  for (const json& c : at(at(crd, "status"), "conditions").is_array()
                           ? at(at(crd, "status"), "conditions")
                           : json::array())
    if (str(c, "type") == type && str(c, "status") == status) return true;
  return false;
}

PrinterColumn column_of(const json& c) {
  PrinterColumn p;
  p.name = str(c, "name");
  p.type = str(c, "type");
  p.format = str(c, "format");
  p.description = str(c, "description");
  p.json_path = str(c, "jsonPath");
  if (at(c, "priority").is_number_integer()) p.priority = at(c, "priority").get<int>();
  return p;
}

api::Column table_column(const PrinterColumn& p) {
  // kube's table convertor names columns as the CRD spells them; kubectl
  // upper-cases them when printing.
  return {p.name, p.type == "date" ? "date" : p.type, p.format, p.description, p.priority};
}

builtin::Kind kind_of(const json& crd, const json& names, const json& version,
                      const std::string& storage_version) {
  const json& spec = at(crd, "spec");
  builtin::Kind k;
  api::Resource& r = k.resource;
  r.gv = {str(spec, "group"), str(version, "name")};
  r.kind = str(names, "kind");
  r.plural = str(names, "plural");
  r.singular = str(names, "singular").empty() ? lowercase(r.kind) : str(names, "singular");
  r.namespaced = str(spec, "scope") != "Cluster";
  r.short_names = strings(at(names, "shortNames"));
  r.categories = strings(at(names, "categories"));
  const json& subs = at(version, "subresources");
  r.status_subresource = at(subs, "status").is_object() && subs.contains("status");
  r.scale_subresource = subs.is_object() && subs.contains("scale") && subs["scale"].is_object();
  r.storage_of = r.gv.group + "/" + r.plural;
  r.is_custom = true;
  for (const json& f : at(version, "selectableFields").is_array() ? at(version, "selectableFields")
                                                                  : json::array()) {
    std::string p = str(f, "jsonPath");
    if (!p.empty()) r.selectable_fields.push_back(p[0] == '.' ? p.substr(1) : p);
  }
  k.has_generation = true;
  k.name_rule = builtin::NameRule::kSubdomain;

  auto v = std::make_shared<CustomVersion>();
  v->crd_name = str(at(crd, "metadata"), "name");
  v->storage_version = storage_version;
  v->schema = at(at(version, "schema"), "openAPIV3Schema");
  if (v->schema.empty()) v->schema = nullptr;
  const json& cols = at(version, "additionalPrinterColumns");
  if (cols.is_array() && !cols.empty()) {
    for (const json& c : cols) v->columns.push_back(column_of(c));
  } else {
    v->columns.push_back({"Age", "date", "", "", ".metadata.creationTimestamp", 0});
  }
  r.columns.push_back({"Name", "string", "name", "Name must be unique within a namespace.", 0});
  for (const PrinterColumn& p : v->columns) r.columns.push_back(table_column(p));
  if (r.scale_subresource) {
    const json& scale = subs["scale"];
    v->spec_replicas_path = str(scale, "specReplicasPath");
    v->status_replicas_path = str(scale, "statusReplicasPath");
    v->label_selector_path = str(scale, "labelSelectorPath");
  }
  v->terminating = at(crd, "metadata").contains("deletionTimestamp");
  const json& conversion = at(spec, "conversion");
  if (str(conversion, "strategy") == "Webhook") v->conversion_webhook = at(conversion, "webhook");
  if (at(version, "deprecated").is_boolean() && at(version, "deprecated").get<bool>()) {
    v->deprecation_warning = str(version, "deprecationWarning");
    if (v->deprecation_warning.empty())
      v->deprecation_warning = r.gv.api_version() + " " + r.kind + " is deprecated";
  }
  k.custom = std::move(v);
  return k;
}

json condition(const char* type, bool status, const char* reason, const std::string& message,
               const json& old_conditions, const std::string& now) {
  json c = {{"type", type},
            {"status", status ? "True" : "False"},
            {"reason", reason},
            {"message", message},
            {"lastTransitionTime", now}};
  if (old_conditions.is_array())
    for (const json& o : old_conditions)
      if (str(o, "type") == type && str(o, "status") == c["status"] &&
          o.contains("lastTransitionTime"))
        c["lastTransitionTime"] = o["lastTransitionTime"];
  return c;
}

// The first name of `names` another CRD of the group already accepted.
std::pair<const char*, std::string> conflict(const json& names, const std::vector<json>& others) {
  for (const json& o : others) {
    const json& taken = at(at(o, "status"), "acceptedNames");
    if (!str(names, "plural").empty() && str(names, "plural") == str(taken, "plural"))
      return {"PluralConflict", "\"" + str(names, "plural") + "\" is already in use"};
    if (!str(names, "singular").empty() && str(names, "singular") == str(taken, "singular"))
      return {"SingularConflict", "\"" + str(names, "singular") + "\" is already in use"};
    for (const std::string& s : strings(at(names, "shortNames")))
      for (const std::string& t : strings(at(taken, "shortNames")))
        if (s == t) return {"ShortNamesConflict", "\"" + s + "\" is already in use"};
    if (!str(names, "kind").empty() && str(names, "kind") == str(taken, "kind"))
      return {"KindConflict", "\"" + str(names, "kind") + "\" is already in use"};
    if (!str(names, "listKind").empty() && str(names, "listKind") == str(taken, "listKind"))
      return {"ListKindConflict", "\"" + str(names, "listKind") + "\" is already in use"};
  }
  return {nullptr, ""};
}

}  // namespace

std::string storage_api_version(const api::Resource& r, const CustomVersion& v) {
  return r.gv.group + "/" + v.storage_version;
}

bool version_before(const std::string& a, const std::string& b) {
  VersionKey x = parse_version(a), y = parse_version(b);
  if (x.kube_like != y.kube_like) return x.kube_like;
  if (!x.kube_like) return a < b;
  if (x.stage != y.stage) return x.stage > y.stage;
  if (x.major != y.major) return x.major > y.major;
  return x.minor > y.minor;
}

std::vector<builtin::Kind> kinds_of(const json& crd) {
  std::vector<builtin::Kind> out;
  if (!has_condition(crd, "Established", "True")) return out;
  const json& names = at(at(crd, "status"), "acceptedNames");
  if (str(names, "plural").empty() || str(names, "kind").empty()) return out;
  const json& versions = at(at(crd, "spec"), "versions");
  if (!versions.is_array()) return out;
  std::string storage;
  for (const json& v : versions)
    if (at(v, "storage").is_boolean() && v["storage"].get<bool>()) storage = str(v, "name");
  for (const json& v : versions) {
    // A schema too deep to walk (stored before the limit) is not served:
    // serving it without its schema would skip its validation.
    const json& schema = at(at(v, "schema"), "openAPIV3Schema");
    if (at(v, "served").is_boolean() && v["served"].get<bool>() && api::within_schema_limit(schema))
      out.push_back(kind_of(crd, names, v, storage));
  }
  std::stable_sort(out.begin(), out.end(), [](const builtin::Kind& a, const builtin::Kind& b) {
    return version_before(a.resource.gv.version, b.resource.gv.version);
  });
  return out;
}

json compute_status(const json& crd, const std::vector<json>& others, const std::string& now) {
  const json& old = at(crd, "status");
  const json& old_conditions = at(old, "conditions");
  json names = at(at(crd, "spec"), "names");
  json status = {{"acceptedNames", at(old, "acceptedNames")}};
  json conditions = json::array();
  auto [reason, message] = conflict(names, others);
  if (reason == nullptr) {
    status["acceptedNames"] = names;
    conditions.push_back(
        condition("NamesAccepted", true, "NoConflicts", "no conflicts found", old_conditions, now));
  } else {
    conditions.push_back(condition("NamesAccepted", false, reason, message, old_conditions, now));
  }
  const bool established = reason == nullptr || !str(status["acceptedNames"], "plural").empty();
  if (established)
    conditions.push_back(condition("Established", true, "InitialNamesAccepted",
                                   "the initial names have been accepted", old_conditions, now));
  else
    conditions.push_back(condition("Established", false, "NotAccepted",
                                   "not all names are accepted", old_conditions, now));
  if (at(crd, "metadata").contains("deletionTimestamp"))
    conditions.push_back(condition("Terminating", true, "InstanceDeletionInProgress",
                                   "CustomResource deletion is in progress", old_conditions, now));
  status["conditions"] = std::move(conditions);
  std::vector<std::string> stored = strings(at(old, "storedVersions"));
  for (const json& v :
       at(at(crd, "spec"), "versions").is_array() ? crd["spec"]["versions"] : json::array())
    if (at(v, "storage").is_boolean() && v["storage"].get<bool>() &&
        std::find(stored.begin(), stored.end(), str(v, "name")) == stored.end())
      stored.push_back(str(v, "name"));
  status["storedVersions"] = stored;
  return status;
}

void apply_definition_defaults(json& crd) {
  if (!crd.is_object() || !crd["spec"].is_object()) return;
  json& spec = crd["spec"];
  if (!spec["conversion"].is_object()) spec["conversion"] = json::object();
  if (!spec["conversion"]["strategy"].is_string()) spec["conversion"]["strategy"] = "None";
  // The v1 default of a conversion webhook's Service port.
  json& webhook = spec["conversion"]["webhook"];
  if (webhook.is_object() && webhook["clientConfig"].is_object() &&
      webhook["clientConfig"]["service"].is_object() &&
      !webhook["clientConfig"]["service"]["port"].is_number())
    webhook["clientConfig"]["service"]["port"] = 443;
  if (webhook.is_null()) spec["conversion"].erase("webhook");
  json& names = spec["names"];
  if (!names.is_object()) return;
  std::string kind = str(names, "kind");
  if (kind.empty()) return;
  if (str(names, "singular").empty()) names["singular"] = lowercase(kind);
  if (str(names, "listKind").empty()) names["listKind"] = kind + "List";
}

}  // namespace vkube::apiserver::crd
