// Request and response bodies: JSON or Kubernetes protobuf, chosen by
// Content-Type and Accept. The protobuf side is driven by the type registry
// (vkube/schema), so every built-in kind is covered by its description.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "vkube/common/status.h"
#include "vkube/http/server.h"

namespace vkube::apiserver {

using json = nlohmann::json;

inline bool is_protobuf(std::string_view content_type) {
  return content_type.starts_with("application/vnd.kubernetes.protobuf");
}

// Decodes a request body to a JSON value by its Content-Type: protobuf
// (built-in kinds only; custom resources get 415 as on kube) or JSON.
// With `duplicates`, JSON keys that occur twice are noted in the same pass.
Result<json> decode_request_body(const http::Request& req, bool custom_resource,
                                 std::vector<std::string>* duplicates = nullptr);

// True when the client's first choice is protobuf (client-go sends
// "application/vnd.kubernetes.protobuf,application/json").
bool prefers_protobuf(std::string_view accept);

// True when the client's first choice is YAML ("application/yaml").
bool prefers_yaml(std::string_view accept);

// Re-encodes a complete JSON answer (an object, a list, a Status, a
// discovery document) as YAML, as kube answers a client that prefers YAML.
// Streams, deferred answers and other media types are left as they are.
void encode_yaml_response(http::Response& r);

// The response for an object or list: protobuf when preferred and the kind
// has a description, JSON otherwise.
http::Response body_response(const http::Request& req, int code, const json& obj);
// The same for a client known to prefer protobuf.
http::Response body_response_protobuf(int code, const json& obj);

}  // namespace vkube::apiserver
