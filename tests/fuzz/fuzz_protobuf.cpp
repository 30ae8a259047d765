// Protobuf request bodies (application/vnd.kubernetes.protobuf): the "k8s\0"
// envelope and the registry-driven decoder. Two entry points per input: the
// whole body as decode_request_body hands it over, and the bytes after the
// first as a message of one registered kind (chosen by the first byte), so
// mutations reach every message's fields without first rebuilding an envelope.
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "vkube/schema/protobuf.h"
#include "vkube/schema/schema.h"

namespace {

using vkube::schema::Message;

// Decoded once, encoded, decoded again: the server answers protobuf clients
// with what it decoded, so that must read back. One step may normalize (as in
// Go, a MicroTime of the Unix epoch encodes as an empty Timestamp, which
// reads as the zero time: null); after it, the value is stable.
void check_round_trip(const Message& m, const nlohmann::json& value) {
  std::string bytes = vkube::schema::encode(m, value);
  auto again = vkube::schema::decode(m, bytes);
  FUZZ_CHECK(again.is_ok());
  std::string normalized = vkube::schema::encode(m, *again);
  auto third = vkube::schema::decode(m, normalized);
  FUZZ_CHECK(third.is_ok());
  FUZZ_CHECK(*third == *again);
  FUZZ_CHECK(vkube::schema::encode(m, *third) == normalized);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body = vkube::fuzz::as_text(data, size);
  auto obj = vkube::schema::decode_object(body);
  if (obj.is_ok()) {
    FUZZ_CHECK(obj->is_object());
    auto encoded = vkube::schema::encode_object(*obj);
    FUZZ_CHECK(encoded.is_ok());
    FUZZ_CHECK(vkube::schema::decode_object(*encoded).is_ok());
  }
  if (size == 0) return 0;
  const auto& kinds = vkube::schema::Registry::get().kinds();
  if (kinds.empty()) return 0;
  const Message& m = *kinds[data[0] % kinds.size()];
  auto value = vkube::schema::decode(m, body.substr(1));
  if (value.is_ok()) check_round_trip(m, *value);
  return 0;
}
