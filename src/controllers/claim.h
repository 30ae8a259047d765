// The writes of kube's ControllerRefManager, shared by the ReplicaSet,
// ReplicationController and Deployment controllers: a controller adopts the
// orphans its selector matches and releases what it controls but no longer
// matches. Both are merge patches of metadata.ownerReferences with the
// object's resourceVersion as precondition, so a concurrent change of the
// owner references fails with 409 instead of being overwritten.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/controllers/local_client.h"

namespace vkube::controllers {

// A Status for a failed answer: the code's class and the Status message.
Status api_status(const ApiResult& r, std::string_view what);

// Makes `owner` the controller of `obj` (at `path`). The answer holds the
// patched object on success.
ApiResult adopt(LocalClient& client, const std::string& path, const json& obj, const json& owner);

// Removes the ownerReference with `owner_uid` from `obj` (at `path`). 404 (the
// object is gone) counts as success.
ApiResult release(LocalClient& client, const std::string& path, const json& obj,
                  std::string_view owner_uid);

}  // namespace vkube::controllers
