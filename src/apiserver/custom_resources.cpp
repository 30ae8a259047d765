#include "custom_resources.h"

#include "admission.h"
#include "cel_rules.h"
#include "custom_conversion.h"
#include "definition.h"
#include "jsonpath.h"
#include "object.h"
#include "server_impl.h"
#include "structural.h"
#include "vkube/api/selector.h"
#include "vkube/common/log.h"

namespace vkube::apiserver {

namespace {

// The CRD kind itself: its writes define the custom kinds.
bool is_crd(const Kind& k) { return k.strategy.defines_kinds; }

const json* schema_of(const Kind& k) {
  if (!k.custom || !k.custom->schema.is_object()) return nullptr;
  return &k.custom->schema;
}

}  // namespace

void apply_kind_defaults(const Kind& k, json& obj) {
  if (!k.resource.is_custom) {
    builtin::apply_defaults(k.resource, obj);
    if (is_crd(k)) crd::apply_definition_defaults(obj);
    return;
  }
  if (const json* s = schema_of(k)) crd::apply_defaults(*s, obj);
}

void validate_kind(const Kind& k, const json& obj, const json* old, FieldErrors& errs) {
  if (!k.resource.is_custom) {
    builtin::validate(k.resource, obj, old, errs);
    if (is_crd(k)) crd::validate_definition(obj, old, errs);
    if (k.resource.gv.group == "admissionregistration.k8s.io")
      admission::check_expressions(k.resource.kind, obj, old, &errs, nullptr);
    return;
  }
  const json* s = schema_of(k);
  if (s == nullptr) return;
  crd::validate(*s, obj, errs);
  // Rules run only on a value that passed the schema, as kube does.
  if (errs.empty()) crd::cel::validate_rules(*s, obj, old, errs);
}

std::vector<std::string> prune_custom(const Kind& k, json& obj) {
  if (const json* s = schema_of(k)) return crd::prune(*s, obj);
  return {};
}

std::vector<std::string> kind_warnings(const Kind& k, const json& obj) {
  if (is_crd(k)) return crd::definition_warnings(obj);
  std::vector<std::string> warnings;
  if (k.resource.gv.group == "admissionregistration.k8s.io")
    admission::check_expressions(k.resource.kind, obj, nullptr, nullptr, &warnings);
  return warnings;
}

Status to_storage_version(Server& s, const Kind& k, json& obj) {
  if (!k.custom) {
    if (k.strategy.convert) builtin::convert_to(k.strategy, obj, k.strategy.storage_version);
    return Status::ok();
  }
  return convert_custom(s, k, obj, crd::storage_api_version(k.resource, *k.custom));
}

std::optional<ApiError> admit_custom_create(const Kind& k) {
  if (!k.custom || !k.custom->terminating) return std::nullopt;
  return ApiError(Status(Code::kMethodNotAllowed,
                         "create not allowed while custom resource definition is terminating"));
}

namespace {

json cell(const crd::PrinterColumn& c, const json& obj, int64_t now) {
  std::string error;
  auto path = crd::JsonPath::parse(c.json_path, &error);
  if (!path) return nullptr;
  std::vector<const json*> found = path->find(obj);
  if (found.empty() || found[0]->is_null()) return nullptr;
  const json& v = *found[0];
  if (c.type == "date") {
    auto t = v.is_string() ? parse_rfc3339(v.get<std::string>()) : std::nullopt;
    if (!t) return v.is_string() ? v : json(v.dump());
    return builtin::human_duration(now - *t);
  }
  if (c.type == "integer" && v.is_number()) return v.get<int64_t>();
  if (c.type == "number" && v.is_number()) return v;
  if (c.type == "boolean" && v.is_boolean()) return v;
  if (found.size() > 1) {  // kube prints every match, comma separated
    std::string joined;
    for (const json* f : found)
      joined += (joined.empty() ? "" : ",") + (f->is_string() ? f->get<std::string>() : f->dump());
    return joined;
  }
  return v.is_string() ? v : json(v.dump());
}

}  // namespace

json custom_table_cells(const Kind& k, const json& obj, int64_t now) {
  json cells = json::array({str_at(obj, "metadata", "name")});
  if (!k.custom) return cells;
  for (const crd::PrinterColumn& c : k.custom->columns) cells.push_back(cell(c, obj, now));
  return cells;
}

namespace {

constexpr std::string_view kCrdPrefix = "/registry/apiextensions.k8s.io/customresourcedefinitions/";

std::vector<json> stored_crds(Server& s) {
  std::vector<json> out;
  storage::ListOptions opts;
  opts.prefix = std::string(kCrdPrefix);
  auto listed = s.backend().list(opts);
  if (!listed.is_ok()) return out;
  for (const auto& kv : listed->items)
    if (auto obj = decode_stored(kv); obj.is_ok()) out.push_back(std::move(obj).value());
  return out;
}

// What conflict checks read of a CRD: its group and naming status.
json names_of(const json& crd) {
  json status = crd.value("status", json::object());
  json conditions = json::array();
  for (const json& c : status.value("conditions", json::array()))
    if (c.value("type", "") == "NamesAccepted") conditions.push_back(c);
  return {{"spec", {{"group", str_at(crd, "spec", "group")}}},
          {"status",
           {{"acceptedNames", status.value("acceptedNames", json::object())},
            {"conditions", std::move(conditions)}}}};
}

bool names_accepted(const json& crd) {
  for (const json& c : crd["status"].value("conditions", json::array()))
    if (c.value("type", "") == "NamesAccepted") return c.value("status", "") == "True";
  return false;
}

// One CRD's status and registry entry; false when it should be retried.
bool sync_one(Server& s, const std::string& name) {
  const std::string key = std::string(kCrdPrefix) + name;
  auto kv = s.backend().get(key);
  if (!kv.is_ok()) {
    if (kv.status().code() == Code::kNotFound) {
      s.registry().set_custom(name, {});
      s.crd_names().erase(name);
    }
    return true;
  }
  auto decoded = decode_stored(*kv);
  if (!decoded.is_ok()) return true;
  json crd = std::move(decoded).value();
  const std::string group = str_at(crd, "spec", "group");
  std::vector<json> others;
  for (const auto& [other, names] : s.crd_names())
    if (other != name && str_at(names, "spec", "group") == group) others.push_back(names);
  json status = crd::compute_status(crd, others, now_rfc3339());
  if (status != crd.value("status", json())) {
    crd["status"] = std::move(status);
    auto written = s.backend().update(key, encode_for_storage(crd), kv->mod_revision);
    if (!written.is_ok()) return written.status().code() != Code::kConflict;
  }
  s.registry().set_custom(name, crd::kinds_of(crd));
  s.crd_names()[name] = names_of(crd);
  return true;
}

}  // namespace

void sync_crd(Server& s, const std::string& name) {
  std::lock_guard lock(s.crd_mutex());
  for (int attempt = 0; attempt < 8 && !sync_one(s, name); ++attempt) {
  }
  // A CRD that lost a name conflict may win now (the other changed or went).
  std::vector<std::string> losers;
  for (const auto& [other, names] : s.crd_names())
    if (other != name && !names_accepted(names)) losers.push_back(other);
  for (const std::string& other : losers) sync_one(s, other);
}

void load_crds(Server& s) {
  std::vector<json> crds = stored_crds(s);
  {
    // Every CRD's stored names first, so each one's check sees the others.
    std::lock_guard lock(s.crd_mutex());
    std::map<std::string, json> names;
    for (const json& c : crds) names[name_of(c)] = names_of(c);
    for (const auto& [gone, unused] : s.crd_names())
      if (!names.contains(gone)) s.registry().set_custom(gone, {});
    s.crd_names() = std::move(names);
  }
  for (const json& c : crds) sync_crd(s, name_of(c));
  if (!crds.empty()) VKUBE_LOG(info, "custom resource definitions loaded", {"count", crds.size()});
}

}  // namespace vkube::apiserver
