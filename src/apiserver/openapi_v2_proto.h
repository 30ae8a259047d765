// The Swagger 2.0 document of /openapi/v2 in gnostic's protobuf form (openapi_v2_proto.cpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vkube::apiserver {

using json = nlohmann::json;

// The answer's Content-Type. Clients ask for ".spec.v2@v1.0+protobuf" (kubectl) or
// ".spec.v2.v1.0+protobuf"; kube answers the second, which Go's mime parser accepts ('@' is not
// a token character).
inline constexpr const char* kOpenApiV2Protobuf =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

// `doc` (the JSON document) as an openapi.v2.Document message.
std::string openapi_v2_protobuf(const json& doc);

}  // namespace vkube::apiserver
