// Patch engines: RFC 6902 JSON patch and RFC 7386 merge patch (nlohmann's),
// and Kubernetes strategic merge patch.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/schema/schema.h"

namespace vkube::apiserver {

using json = nlohmann::json;

enum class PatchType { kJson, kMerge, kStrategic, kApply };

// From a PATCH Content-Type; kUnsupportedMediaType for others.
Result<PatchType> patch_type(std::string_view content_type);

// Applies the parsed `patch` to `target`, an object of message `m` (nullptr
// when the kind has no description: custom resources). kBadRequest (400) for
// a patch of the wrong shape, kInvalid (422) for a JSON patch that does not apply or a
// failed `test` operation, and for a target, patch or result nested deeper than
// api::kMaxNestingDepth; JSON patches also get apply_json_patch's limits (413
// past 10,000 operations, 422 past 3 MiB of copies).
Result<json> apply_patch(PatchType type, const json& target, const json& patch,
                         const schema::Message* m);
// apply_patch of a target the caller gives up (merged in place, no copy):
// `original` is the object as it was read, which the decode check compares
// the result with (a mismatch it already had is no error of the patch).
Result<json> patch_object(PatchType type, json target, const json& original, const json& patch,
                          const schema::Message* m);

// Strategic merge patch of `patch` into `target`, following the patch
// strategies and merge keys the type registry gives each list field (lists
// without "merge" are replaced), with the directives $patch (replace,
// delete, merge), $setElementOrder/<list>, $retainKeys and
// $deleteFromPrimitiveList/<list>.
Result<json> strategic_merge(const json& target, const json& patch, const schema::Message* m);
// The same, merged into `target` in place (left half-merged on an error).
Status strategic_merge_into(json& target, const json& patch, const schema::Message* m);

}  // namespace vkube::apiserver
