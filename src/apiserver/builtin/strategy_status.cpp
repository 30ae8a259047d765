// Status shapes shared by several kinds' strategies, and a pod's QoS class.
#include "kind_util.h"
#include "strategy.h"
#include "vkube/schema/schema.h"

namespace vkube::apiserver::builtin {

namespace {

json zero_of(schema::Type t) {
  switch (t) {
    case schema::Type::kString:
    case schema::Type::kBytes:
      return "";
    case schema::Type::kBool:
      return false;
    case schema::Type::kDouble:
    case schema::Type::kFloat:
      return 0.0;
    default:
      return 0;
  }
}

}  // namespace

void fill_required_status(json& obj) {
  json* status = util::get_object(obj, "status");
  if (status == nullptr) return;
  // Go's encoder writes a field without omitempty even when it holds its
  // zero value: a new ReplicationController answers {"replicas": 0}, and
  // clients that check required fields (the Python client) refuse {}.
  const std::string api_version = util::get_string(obj, "apiVersion");
  const size_t slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const std::string version =
      slash == std::string::npos ? api_version : api_version.substr(slash + 1);
  const schema::Message* m =
      schema::Registry::get().find_kind(group, version, util::get_string(obj, "kind"));
  const schema::Field* f = m ? m->field("status") : nullptr;
  if (f == nullptr || !f->is_message() || f->message == nullptr) return;
  for (const schema::Field& field : f->message->fields) {
    if (!field.required || field.nullable || field.repeated || field.is_map ||
        field.type == schema::Type::kMessage)
      continue;
    if (util::absent(*status, field.json_name.c_str()))
      (*status)[field.json_name] = zero_of(field.type);
  }
}

std::string pod_qos_class(const json& pod) {
  bool any = false, guaranteed = true;
  auto spec = pod.value("spec", json::object());
  for (const char* list : {"containers", "initContainers"}) {
    for (const json& ctr : spec.value(list, json::array())) {
      json res = ctr.value("resources", json::object());
      json req = res.value("requests", json::object());
      json lim = res.value("limits", json::object());
      for (const char* r : {"cpu", "memory"}) {
        if (req.contains(r) || lim.contains(r)) any = true;
        if (!lim.contains(r) || (req.contains(r) && req[r] != lim[r])) guaranteed = false;
      }
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

}  // namespace vkube::apiserver::builtin
