#include "scale.h"

#include "custom_resources.h"
#include "object.h"
#include "vkube/api/selector.h"

namespace vkube::apiserver {

json to_scale(const builtin::Kind& k, const json& obj) {
  if (k.custom) return custom_to_scale(k, obj);
  const api::Resource& r = k.resource;
  const json& meta = obj["metadata"];
  json scale_meta = {{"name", meta.value("name", "")},
                     {"uid", meta.value("uid", "")},
                     {"resourceVersion", meta.value("resourceVersion", "")},
                     {"creationTimestamp", meta.value("creationTimestamp", "")}};
  if (meta.contains("namespace")) scale_meta["namespace"] = meta["namespace"];
  json spec = obj.value("spec", json::object());
  json status = obj.value("status", json::object());
  std::string selector;
  if (spec.contains("selector")) {
    if (r.plural == "replicationcontrollers") {
      // An RC's selector is a plain map.
      for (auto it = spec["selector"].begin(); spec["selector"].is_object() && it != spec["selector"].end(); ++it)
        selector += (selector.empty() ? "" : ",") + it.key() + "=" + it.value().get<std::string>();
    } else if (auto sel = api::LabelSelector::from_json(spec["selector"]); sel.is_ok()) {
      selector = sel->to_string();
    }
  }
  json s = {{"kind", "Scale"},
            {"apiVersion", "autoscaling/v1"},
            {"metadata", scale_meta},
            {"spec", {{"replicas", spec.value("replicas", 0)}}},
            {"status", {{"replicas", status.value("replicas", 0)}}}};
  if (!selector.empty()) s["status"]["selector"] = selector;
  return s;
}

Status apply_scale(const builtin::Kind& k, const json& scale, json& obj) {
  if (k.custom) return custom_apply_scale(k, scale, obj);
  if (!scale.is_object() || !scale.contains("spec") || !scale["spec"].is_object())
    return Status::bad_request("the body must be an autoscaling/v1 Scale with spec.replicas");
  const json& replicas = scale["spec"].value("replicas", json());
  if (replicas.is_null()) {
    obj["spec"]["replicas"] = 0;
    return Status::ok();
  }
  if (!replicas.is_number_integer())
    return Status::bad_request("spec.replicas must be an integer");
  if (replicas.get<int64_t>() < 0)
    return Status::invalid("spec.replicas: Invalid value: " + replicas.dump() +
                           ": must be greater than or equal to 0");
  obj["spec"]["replicas"] = replicas;
  return Status::ok();
}

}  // namespace vkube::apiserver
