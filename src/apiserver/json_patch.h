// RFC 6902 JSON patch as kube-apiserver applies it (evanphx/json-patch v4
// under the apiserver's limits), without letting one request build an
// unbounded value.
#pragma once

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"

namespace vkube::apiserver {

// Applies the operations `ops` to a copy of `target` and returns it.
// Errors, as kube-apiserver answers them:
//   kBadRequest (400): `ops` is not an array of objects;
//   kTooLarge (413): more than api::kMaxJsonPatchOperations operations;
//   kInvalid (422): an operation that does not apply (a missing path, a
//     failed "test", an unknown op), "copy" operations adding more than
//     api::kJsonPatchMaxCopyBytes together, or an operation that would nest
//     the object deeper than api::kMaxNestingDepth.
// `target` itself must nest no deeper than the limit (kInvalid otherwise).
Result<nlohmann::json> apply_json_patch(const nlohmann::json& target, const nlohmann::json& ops);

}  // namespace vkube::apiserver
