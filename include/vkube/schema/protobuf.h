// Kubernetes protobuf (application/vnd.kubernetes.protobuf): the "k8s\0"
// envelope around runtime.Unknown, and the conversion of the wire messages
// described by the type registry to and from the JSON object model.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "vkube/common/status.h"
#include "vkube/schema/schema.h"

namespace vkube::schema {

using json = nlohmann::json;

inline constexpr std::string_view kProtobufMagic{"k8s\0", 4};
inline constexpr std::string_view kProtobufContentType = "application/vnd.kubernetes.protobuf";

// runtime.Unknown: what a protobuf body carries after the magic.
struct Envelope {
  std::string api_version;
  std::string kind;
  std::string raw;  // the object's message bytes
  std::string content_encoding;
  std::string content_type;
};

// Parses "k8s\0" + runtime.Unknown. BadRequest when it is not one.
Result<Envelope> parse_envelope(std::string_view body);
// Writes "k8s\0" + runtime.Unknown around an encoded message.
std::string write_envelope(std::string_view api_version, std::string_view kind, std::string_view raw);

// Decodes message bytes of type `m` to JSON, following the Go JSON rules
// (gogo's "" / 0 / false mean unset unless the field is a pointer; the
// special formats of options.proto). BadRequest on malformed input.
Result<json> decode(const Message& m, std::string_view bytes);
// Encodes a JSON value of type `m` (fields the message does not have are
// skipped; they have no place on the wire).
std::string encode(const Message& m, const json& value);

// A whole protobuf body to a JSON object with apiVersion and kind set:
// the envelope's kind must be in the registry (else 415-worthy BadRequest
// with a clear message).
Result<json> decode_object(std::string_view body);
// A JSON object (with apiVersion/kind) to a protobuf body; NotFound when its
// kind has no message in the registry.
Result<std::string> encode_object(const json& obj);

// Go's time.Duration.String() of `nanos` ("1m30s", "1.5ms", "0s") and back.
std::string format_duration(int64_t nanos);
bool parse_duration(std::string_view s, int64_t& nanos);

}  // namespace vkube::schema
