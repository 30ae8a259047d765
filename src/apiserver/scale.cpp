#include "scale.h"

#include "definition.h"
#include "jsonpath.h"
#include "object.h"
#include "vkube/api/selector.h"

namespace vkube::apiserver {

namespace {

// What a Scale shows of a workload: its desired and current replicas and
// its selector in the string form ("" when it has none).
struct Replicas {
  int64_t spec = 0, status = 0;
  std::string selector;
};

Replicas builtin_replicas(const builtin::Kind& k, const json& obj) {
  json spec = obj.value("spec", json::object());
  json status = obj.value("status", json::object());
  Replicas out{spec.value("replicas", int64_t{0}), status.value("replicas", int64_t{0}), ""};
  if (!spec.contains("selector")) return out;
  if (k.strategy.map_selector) {
    // An RC's selector is a plain map.
    for (auto it = spec["selector"].begin();
         spec["selector"].is_object() && it != spec["selector"].end(); ++it)
      out.selector +=
          (out.selector.empty() ? "" : ",") + it.key() + "=" + it.value().get<std::string>();
  } else if (auto sel = api::LabelSelector::from_json(spec["selector"]); sel.is_ok()) {
    out.selector = sel->to_string();
  }
  return out;
}

// A custom resource's, at the paths its CRD names.
Replicas custom_replicas(const crd::CustomVersion& v, const json& obj) {
  auto read_int = [&](const std::string& path) -> int64_t {
    const json* x = path.empty() ? nullptr : crd::find_field(obj, path);
    return x != nullptr && x->is_number_integer() ? x->get<int64_t>() : 0;
  };
  Replicas out{read_int(v.spec_replicas_path), read_int(v.status_replicas_path), ""};
  if (!v.label_selector_path.empty())
    if (const json* sel = crd::find_field(obj, v.label_selector_path); sel && sel->is_string())
      out.selector = sel->get<std::string>();
  return out;
}

}  // namespace

json to_scale(const builtin::Kind& k, const json& obj) {
  const json& meta = obj["metadata"];
  json scale_meta = {{"name", meta.value("name", "")},
                     {"uid", meta.value("uid", "")},
                     {"resourceVersion", meta.value("resourceVersion", "")},
                     {"creationTimestamp", meta.value("creationTimestamp", "")}};
  if (meta.contains("namespace")) scale_meta["namespace"] = meta["namespace"];
  Replicas r = k.custom ? custom_replicas(*k.custom, obj) : builtin_replicas(k, obj);
  json s = {{"kind", "Scale"},
            {"apiVersion", "autoscaling/v1"},
            {"metadata", scale_meta},
            {"spec", {{"replicas", r.spec}}},
            {"status", {{"replicas", r.status}}}};
  if (!r.selector.empty()) s["status"]["selector"] = r.selector;
  return s;
}

Status apply_scale(const builtin::Kind& k, const json& scale, json& obj) {
  if (!scale.is_object() || !scale.contains("spec") || !scale["spec"].is_object())
    return Status::bad_request("the body must be an autoscaling/v1 Scale with spec.replicas");
  json replicas = scale["spec"].value("replicas", json());
  if (replicas.is_null()) replicas = 0;
  if (!replicas.is_number_integer()) return Status::bad_request("spec.replicas must be an integer");
  if (replicas.get<int64_t>() < 0)
    return Status::invalid("spec.replicas: Invalid value: " + replicas.dump() +
                           ": must be greater than or equal to 0");
  if (k.custom)
    crd::set_field(obj, k.custom->spec_replicas_path, std::move(replicas));
  else
    obj["spec"]["replicas"] = std::move(replicas);
  return Status::ok();
}

}  // namespace vkube::apiserver
