#include "patch_engine.h"

#include <algorithm>

namespace vkube::apiserver {

Result<PatchType> patch_type(std::string_view ct) {
  ct = ct.substr(0, ct.find(';'));
  if (ct == "application/json-patch+json") return PatchType::kJson;
  if (ct == "application/merge-patch+json") return PatchType::kMerge;
  if (ct == "application/strategic-merge-patch+json") return PatchType::kStrategic;
  if (ct == "application/apply-patch+yaml") return PatchType::kApply;
  return Status(Code::kUnsupportedMediaType,
                "the server does not support patches of type \"" + std::string(ct) +
                    "\": use application/json-patch+json, application/merge-patch+json, "
                    "application/strategic-merge-patch+json or application/apply-patch+yaml");
}

namespace {

// The merge key of a list field (Go struct tags patchMergeKey), or "" when
// the list is replaced as a whole (atomic) or is a set of primitives.
std::string merge_key(std::string_view field, std::string_view parent, const std::string& kind) {
  if (field == "containers" || field == "initContainers" || field == "ephemeralContainers" ||
      field == "env" || field == "volumes" || field == "imagePullSecrets" ||
      field == "resourceClaims" || field == "schedulingGates")
    return "name";
  if (field == "volumeMounts") return "mountPath";
  if (field == "volumeDevices") return "devicePath";
  if (field == "hostAliases") return "ip";
  if (field == "conditions") return "type";
  if (field == "ownerReferences") return "uid";
  if (field == "topologySpreadConstraints") return "topologyKey";
  if (field == "ports") {
    if (parent == "container") return "containerPort";
    if (kind == "Service" && parent == "spec") return "port";
  }
  return {};
}

// Lists of primitives that merge as sets (patchStrategy:merge).
bool primitive_set(std::string_view field) { return field == "finalizers"; }

Status merge_into(json& target, const json& patch, const std::string& kind, std::string_view ctx);

Status merge_list(json& target, const json& patch, std::string_view field, std::string_view ctx,
                  const std::string& kind, const json* order) {
  std::string key = merge_key(field, ctx, kind);
  if (!target.is_array()) target = json::array();
  if (key.empty()) {
    if (primitive_set(field)) {
      for (const json& v : patch)
        if (std::find(target.begin(), target.end(), v) == target.end()) target.push_back(v);
    } else {
      target = patch;  // atomic list: replaced
      // Directive maps inside atomic lists are not expected; drop them.
    }
    return Status::ok();
  }
  std::string child_ctx = (field == "containers" || field == "initContainers" ||
                           field == "ephemeralContainers") ? "container" : std::string(field);
  for (const json& item : patch) {
    if (!item.is_object() || !item.contains(key)) {
      if (item.is_object() && item.value("$patch", "") == "replace") {
        target = json::array();
        continue;
      }
      return Status::bad_request("strategic merge patch: an element of " + std::string(field) +
                                 " has no merge key \"" + key + "\"");
    }
    auto it = std::find_if(target.begin(), target.end(), [&](const json& t) {
      return t.is_object() && t.contains(key) && t[key] == item[key];
    });
    std::string directive = item.value("$patch", "");
    if (directive == "delete") {
      if (it != target.end()) target.erase(it);
      continue;
    }
    if (directive == "replace") {
      json copy = item;
      copy.erase("$patch");
      if (it != target.end()) *it = copy;
      else target.push_back(copy);
      continue;
    }
    if (it == target.end()) {
      json fresh = json::object();
      VKUBE_RETURN_IF_ERROR(merge_into(fresh, item, kind, child_ctx));
      target.push_back(std::move(fresh));
    } else {
      VKUBE_RETURN_IF_ERROR(merge_into(*it, item, kind, child_ctx));
    }
  }
  if (order && order->is_array()) {
    // $setElementOrder: listed elements first, in that order; others after.
    json sorted = json::array();
    for (const json& o : *order) {
      json k = o.is_object() ? o.value(key, json()) : o;
      auto it = std::find_if(target.begin(), target.end(),
                             [&](const json& t) { return t.is_object() && t.value(key, json()) == k; });
      if (it != target.end()) sorted.push_back(*it);
    }
    for (const json& t : target)
      if (std::find(sorted.begin(), sorted.end(), t) == sorted.end()) sorted.push_back(t);
    target = std::move(sorted);
  }
  return Status::ok();
}

Status merge_into(json& target, const json& patch, const std::string& kind, std::string_view ctx) {
  if (!patch.is_object()) {
    target = patch;
    return Status::ok();
  }
  if (!target.is_object()) target = json::object();
  std::string directive = patch.value("$patch", "");
  if (directive == "replace") {
    target = patch;
    target.erase("$patch");
    return Status::ok();
  }
  if (directive == "delete") {
    target = json::object();
    return Status::ok();
  }
  if (patch.contains("$retainKeys") && patch["$retainKeys"].is_array()) {
    const json& keep = patch["$retainKeys"];
    for (auto it = target.begin(); it != target.end();) {
      if (std::find(keep.begin(), keep.end(), it.key()) == keep.end()) it = target.erase(it);
      else ++it;
    }
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& k = it.key();
    if (k.starts_with("$deleteFromPrimitiveList/")) {
      std::string field = k.substr(25);
      if (target.contains(field) && target[field].is_array() && it.value().is_array()) {
        json& list = target[field];
        for (const json& v : it.value()) list.erase(std::remove(list.begin(), list.end(), v), list.end());
      }
      continue;
    }
    if (k[0] == '$') continue;  // $setElementOrder is applied with its list; $patch, $retainKeys above
    const json& v = it.value();
    if (v.is_null()) {
      target.erase(k);
      continue;
    }
    if (v.is_array()) {
      const json* order = nullptr;
      std::string order_key = "$setElementOrder/" + k;
      if (patch.contains(order_key)) order = &patch[order_key];
      if (!target.contains(k)) target[k] = json::array();
      VKUBE_RETURN_IF_ERROR(merge_list(target[k], v, k, ctx, kind, order));
    } else if (v.is_object()) {
      VKUBE_RETURN_IF_ERROR(merge_into(target[k], v, kind, k));
    } else {
      target[k] = v;
    }
  }
  // An order given for a list the patch did not otherwise touch.
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (!it.key().starts_with("$setElementOrder/")) continue;
    std::string field = it.key().substr(17);
    if (!patch.contains(field) && target.contains(field))
      VKUBE_RETURN_IF_ERROR(merge_list(target[field], json::array(), field, ctx, kind, &it.value()));
  }
  return Status::ok();
}

}  // namespace

Result<json> strategic_merge(const json& target, const json& patch, const std::string& kind) {
  if (!patch.is_object()) return Status::bad_request("a strategic merge patch must be a JSON object");
  json out = target;
  VKUBE_RETURN_IF_ERROR(merge_into(out, patch, kind, ""));
  return out;
}

Result<json> apply_patch(PatchType type, const json& target, std::string_view body,
                         const std::string& kind) {
  json patch = json::parse(body, nullptr, false);
  if (patch.is_discarded())
    return Status::bad_request("the patch is not valid JSON");
  switch (type) {
    case PatchType::kJson: {
      if (!patch.is_array()) return Status::bad_request("a JSON patch must be an array of operations");
      try {
        return target.patch(patch);
      } catch (const json::exception& e) {
        std::string what = e.what();
        if (what.find("unsuccessful") != std::string::npos || what.find("test") != std::string::npos)
          return Status::invalid("the server rejected our request due to an error in our request: " +
                                 what);
        return Status::invalid("the JSON patch could not be applied: " + what);
      }
    }
    case PatchType::kMerge: {
      if (!patch.is_object()) return Status::bad_request("a merge patch must be a JSON object");
      json out = target;
      out.merge_patch(patch);
      return out;
    }
    case PatchType::kStrategic:
      return strategic_merge(target, patch, kind);
    case PatchType::kApply:
      break;
  }
  return Status(Code::kUnsupportedMediaType, "apply patches are not supported yet");
}

}  // namespace vkube::apiserver
