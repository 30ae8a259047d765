#include "codec.h"

#include "errors.h"
#include "vkube/schema/protobuf.h"
#include "vkube/schema/validation.h"

namespace vkube::apiserver {

namespace {

constexpr std::string_view kUnknownFormat =
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf";

}  // namespace

Result<json> decode_request_body(const http::Request& req, bool custom_resource,
                                 std::vector<std::string>* duplicates) {
  std::string_view ct = req.header("Content-Type");
  if (is_protobuf(ct)) {
    if (custom_resource)
      return Status(Code::kUnsupportedMediaType,
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json, application/yaml");
    auto obj = schema::decode_object(req.body);
    if (!obj.is_ok())
      return Status::bad_request("the protobuf body could not be decoded: " + obj.status().message());
    return obj;
  }
  json v = schema::parse_json(req.body, duplicates);
  if (v.is_discarded()) return Status::bad_request(std::string(kUnknownFormat));
  return v;
}

bool prefers_protobuf(std::string_view accept) {
  size_t comma = accept.find(',');
  std::string_view first = accept.substr(0, comma);
  while (!first.empty() && first.front() == ' ') first.remove_prefix(1);
  return is_protobuf(first) && first.find("as=") == std::string_view::npos &&
         first.find("stream=") == std::string_view::npos;
}

http::Response body_response(const http::Request& req, int code, const json& obj) {
  if (prefers_protobuf(req.header("Accept"))) {
    auto body = schema::encode_object(obj);
    if (body.is_ok()) {
      http::Response r;
      r.status = code;
      r.set_header("Content-Type", std::string(schema::kProtobufContentType));
      r.body = std::move(*body);
      return r;
    }
  }
  return json_response(code, obj);
}

}  // namespace vkube::apiserver
