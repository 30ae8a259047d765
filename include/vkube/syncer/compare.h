// Does the host object already say what the syncer wants it to say? The
// answer decides whether a reconcile writes at all, which is what makes a
// restart converge with zero writes. Pure functions, unit-tested.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace vkube::syncer {

// The tenant annotation keys the syncer put on a host object (comma-joined,
// sorted), so that an annotation the tenant removes is removed on the host
// too while annotations the host adds (its scheduler's, its webhooks') stay.
inline constexpr std::string_view kManagedAnnotations = "vkube.io/managed-annotations";
// The same for labels: the syncer's set and removes them; the host's stay.
inline constexpr std::string_view kManagedLabels = "vkube.io/managed-labels";

// Whether `have` says everything `want` says: every key of an object
// (recursively), arrays of the same length element by element, scalars equal
// (in resource maps, quantities by value: the host may write "500m" as
// "0.5"; elsewhere "1.10" and "1.1" differ). Keys only in
// `have` (the host's defaults) do not matter.
bool covers(const nlohmann::json& have, const nlohmann::json& want);

// Records the label and annotation keys of `want` (a desired host object)
// in kManagedLabels and kManagedAnnotations.
void record_managed_annotations(nlohmann::json& want);

// A JSON merge patch of metadata bringing `have` to `want`: labels and
// annotations `want`'s plus the host's own (keys the syncer set before and
// `want` lacks become null), ownerReferences `want`'s. null when nothing
// differs.
nlohmann::json metadata_patch(const nlohmann::json& have, const nlohmann::json& want);

// `want` as the body of a PUT over `have`: metadata from `want` plus `have`'s
// resourceVersion, uid, creationTimestamp, finalizers and the annotations the
// host added.
nlohmann::json replacement(const nlohmann::json& have, const nlohmann::json& want);

}  // namespace vkube::syncer
