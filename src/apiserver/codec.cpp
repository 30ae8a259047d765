#include "codec.h"

#include <algorithm>
#include <cctype>

#include "errors.h"
#include "vkube/schema/protobuf.h"
#include "vkube/schema/validation.h"
#include "yaml_encode.h"
#include "yaml_json.h"

namespace vkube::apiserver {

namespace {

constexpr std::string_view kUnknownFormat =
    "the body of the request was in an unknown format - accepted media types include: ";

// The media type of a Content-Type value, as Go's mime.ParseMediaType gives
// it: before any parameter, without surrounding space, in lower case.
std::string media_type(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  std::string out(type);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

Result<json> decode_request_body(const http::Request& req, bool custom_resource,
                                 std::vector<std::string>* duplicates) {
  // kube's NegotiateInputSerializer: no Content-Type is JSON, the first
  // type served; a type nobody serves is 415 listing the ones served (a
  // custom resource has no protobuf).
  const std::string type = media_type(req.header("Content-Type"));
  if (type == "application/vnd.kubernetes.protobuf" && !custom_resource) {
    auto obj = schema::decode_object(req.body);
    if (!obj.is_ok())
      return Status::bad_request("the protobuf body could not be decoded: " +
                                 obj.status().message());
    return obj;
  }
  if (type == "application/yaml") {
    // The one YAML converter, with its bounds on aliases and depth.
    auto obj = apply::yaml_to_json(req.body);
    if (!obj.is_ok()) return obj.status();
    return obj;
  }
  if (!type.empty() && type != "application/json") {
    return Status(
        Code::kUnsupportedMediaType,
        std::string(kUnknownFormat) + (custom_resource ? "application/json, application/yaml"
                                                       : "application/json, application/yaml, "
                                                         "application/vnd.kubernetes.protobuf"));
  }
  json v = schema::parse_json(req.body, duplicates);
  if (v.is_discarded())
    return Status::bad_request(std::string(kUnknownFormat) +
                               "application/json, application/yaml, "
                               "application/vnd.kubernetes.protobuf");
  return v;
}

bool prefers_protobuf(std::string_view accept) {
  size_t comma = accept.find(',');
  std::string_view first = accept.substr(0, comma);
  while (!first.empty() && first.front() == ' ') first.remove_prefix(1);
  return is_protobuf(first) && first.find("as=") == std::string_view::npos &&
         first.find("stream=") == std::string_view::npos;
}

bool prefers_yaml(std::string_view accept) {
  return media_type(accept.substr(0, accept.find(','))) == "application/yaml";
}

void encode_yaml_response(http::Response& r) {
  if (r.stream || r.deferred || r.upgrade) return;
  auto type = std::find_if(r.headers.begin(), r.headers.end(), [](const http::Header& h) {
    return h.name.size() == 12 &&
           std::equal(h.name.begin(), h.name.end(), "Content-Type", [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) ==
                    std::tolower(static_cast<unsigned char>(b));
           });
  });
  if (type == r.headers.end() || type->value != "application/json") return;
  json v = json::parse(r.body, nullptr, false);
  if (v.is_discarded()) return;
  r.body = json_to_yaml(v);
  r.set_header("Content-Type", "application/yaml");
}

http::Response body_response_protobuf(int code, const json& obj) {
  auto body = schema::encode_object(obj);
  if (!body.is_ok()) return json_response(code, obj);
  http::Response r;
  r.status = code;
  r.set_header("Content-Type", std::string(schema::kProtobufContentType));
  r.body = std::move(*body);
  return r;
}

http::Response body_response(const http::Request& req, int code, const json& obj) {
  if (prefers_protobuf(req.header("Accept"))) return body_response_protobuf(code, obj);
  return json_response(code, obj);
}

}  // namespace vkube::apiserver
