// The limits one request may reach, in one place (docs/api.md, "Limits"),
// and the depth measure they are checked with. kube-apiserver's figures
// where it has them; where vkube is stricter it says why.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkube::api {

// Objects and arrays nested deeper than this are refused, in request bodies
// and in what a write builds from them (a patched, applied or mutated
// object, a CRD's schema). Go's JSON decoder, which kube's use, stops at
// 10,000; vkube's walkers recurse once per level on threads with 8 MiB (or
// 2 MiB) stacks, so 1,000 keeps every walk far inside a stack while no real
// object comes close (the deepest built-in schemas nest ~30 levels).
inline constexpr size_t kMaxNestingDepth = 1000;

// Whole objects as the server builds them may be a little deeper: the
// managedFields entry wraps the trie of a field path in 5 more levels
// (metadata, managedFields, the entry, fieldsV1, the leaf's {}). Checks of
// whole objects (the stored object a write starts from, a patch's target
// and result) use this bound, so that an object written at the request
// limit stays writable; what a request adds is held to kMaxNestingDepth.
inline constexpr size_t kMaxObjectNestingDepth = kMaxNestingDepth + 16;

// A CustomResourceDefinition's openAPIV3Schema may nest no deeper than this
// (kube has no explicit bound; its decoders stop at 10,000). A schema takes
// two JSON levels per object level through properties (properties, then
// the field's schema), so 500 still describes objects 250 fields deep, far
// past any published CRD (under 60 levels), while every recursive schema
// walk (structural checks, pruning, defaulting, validation, CEL rules,
// OpenAPI publishing) stays at half the object limit.
inline constexpr size_t kMaxSchemaNestingDepth = kMaxNestingDepth / 2;

// kube-apiserver's maxJSONPatchOperations: more operations are 413.
inline constexpr size_t kMaxJsonPatchOperations = 10000;

// kube-apiserver's JSONPatchMaxCopyBytes (evanphx/json-patch's
// AccumulatedCopySizeLimit): the serialized size all "copy" operations of
// one patch may add together.
inline constexpr size_t kJsonPatchMaxCopyBytes = 3 * 1024 * 1024;

// The largest object storage keeps (etcd's default request limit, 1.5 MiB).
inline constexpr size_t kMaxObjectBytes = 1572864;

// The nesting depth of `v`: 0 for a scalar, 1 for an object or array of
// scalars (as `{` and `[` count in its text). Iterative, so any value can be
// measured; stops early, returning a value above `limit`, once it is passed.
inline size_t json_depth(const nlohmann::json& v, size_t limit = kMaxNestingDepth) {
  if (!v.is_structured()) return 0;
  using It = nlohmann::json::const_iterator;
  std::vector<std::pair<It, It>> stack;
  stack.emplace_back(v.cbegin(), v.cend());
  size_t deepest = 1;
  while (!stack.empty()) {
    auto& top = stack.back();
    if (top.first == top.second) {
      stack.pop_back();
      continue;
    }
    const nlohmann::json& child = *top.first;
    ++top.first;
    if (!child.is_structured()) continue;
    stack.emplace_back(child.cbegin(), child.cend());  // `top` is not used past here
    if (stack.size() > deepest) deepest = stack.size();
    if (deepest > limit) break;
  }
  return deepest;
}

// `v` (what a request wrote) nests no deeper than kMaxNestingDepth.
inline bool within_nesting_limit(const nlohmann::json& v) {
  return json_depth(v, kMaxNestingDepth) <= kMaxNestingDepth;
}

// `schema` (an openAPIV3Schema) nests no deeper than kMaxSchemaNestingDepth.
inline bool within_schema_limit(const nlohmann::json& schema) {
  return json_depth(schema, kMaxSchemaNestingDepth) <= kMaxSchemaNestingDepth;
}

// `obj` (a whole object, managedFields included) nests no deeper than
// kMaxObjectNestingDepth.
inline bool within_object_limit(const nlohmann::json& obj) {
  return json_depth(obj, kMaxObjectNestingDepth) <= kMaxObjectNestingDepth;
}

}  // namespace vkube::api
