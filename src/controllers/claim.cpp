#include "claim.h"

#include "util.h"

namespace vkube::controllers {

Status api_status(const ApiResult& r, std::string_view what) {
  std::string msg = r.body.is_object() ? r.body.value("message", "") : std::string();
  if (msg.empty()) msg = std::string(what) + ": HTTP " + std::to_string(r.code);
  switch (r.code) {
    case 404:
      return Status::not_found(msg);
    case 409:
      return Status::conflict(msg);
    case 422:
      return Status::invalid(msg);
    case 400:
      return Status::bad_request(msg);
    case 403:
      return Status(Code::kForbidden, msg);
    case 429:
      return Status(Code::kTooManyRequests, msg);
    default:
      return Status::internal(msg);
  }
}

namespace {

json owner_refs(const json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return json::array();
  auto refs = m->find("ownerReferences");
  return refs != m->end() && refs->is_array() ? *refs : json::array();
}

ApiResult patch_refs(LocalClient& client, const std::string& path, const json& obj, json refs) {
  json patch = {{"metadata",
                 {{"ownerReferences", std::move(refs)},
                  {"resourceVersion", meta(obj, "resourceVersion")},
                  {"uid", meta(obj, "uid")}}}};
  return client.call("PATCH", path, patch, "application/merge-patch+json");
}

}  // namespace

ApiResult adopt(LocalClient& client, const std::string& path, const json& obj, const json& owner) {
  json refs = owner_refs(obj);
  std::string uid = meta(owner, "uid");
  // A plain (non-controller) reference to the same owner becomes the controller one.
  json kept = json::array();
  for (const json& r : refs)
    if (!r.is_object() || r.value("uid", "") != uid) kept.push_back(r);
  kept.push_back(controller_owner_ref(owner));
  return patch_refs(client, path, obj, std::move(kept));
}

ApiResult release(LocalClient& client, const std::string& path, const json& obj,
                  std::string_view owner_uid) {
  json kept = json::array();
  for (const json& r : owner_refs(obj))
    if (!r.is_object() || r.value("uid", "") != owner_uid) kept.push_back(r);
  ApiResult res = patch_refs(client, path, obj, kept.empty() ? json(nullptr) : std::move(kept));
  if (res.code == 404) res.code = 200;
  return res;
}

}  // namespace vkube::controllers
