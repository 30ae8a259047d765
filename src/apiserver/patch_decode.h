// Whether a patched object decodes into kube's Go types, and kube's words
// when it does not (patch_engine.cpp checks every patch result with it).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "patch_engine.h"
#include "vkube/common/status.h"
#include "vkube/schema/schema.h"

namespace vkube::apiserver {

// fmt's %v of a value read from JSON (map[k:v ...], [a b], <nil>), as kube's
// patch errors print the maps they were given.
std::string go_value(const nlohmann::json& v);

// OK when `out`, the result of patching `target` with `patch`, fits message
// `m` (nullptr: not checked) as kube's decoders read it, or when the
// mismatch was already in `target`. Else kInvalid, worded as kube words a
// patch that does not decode: the unstructured converter's error for a
// strategic merge patch ("cannot restore map from string"), encoding/json's
// for the others ("json: cannot unmarshal string into Go struct field
// ObjectMeta.metadata.labels of type map[string]string").
Status check_decodes(PatchType type, const nlohmann::json& target, const nlohmann::json& patch,
                     const nlohmann::json& out, const schema::Message* m);

// OK when `obj`, a create or update body of kind `kind` read as API version
// `version`, fits message `m` (nullptr: not checked) as kube's JSON decoder
// reads it. Else kBadRequest in kube's words (transformDecodeError around
// encoding/json's UnmarshalTypeError): "ConfigMap in version \"v1\" cannot be
// handled as a ConfigMap: json: cannot unmarshal number into Go struct field
// ConfigMap.data of type string".
Status check_body_decodes(const nlohmann::json& obj, const schema::Message* m,
                          const std::string& kind, const std::string& version);

}  // namespace vkube::apiserver
