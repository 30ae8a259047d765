// YAML request bodies (server-side apply's application/apply-patch+yaml):
// apply::yaml_to_json must answer a value or a Status for any bytes, never
// throw, and bound what an alias bomb or deep nesting can build.
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "yaml_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = vkube::fuzz::as_text(data, size);
  auto parsed = vkube::apiserver::apply::yaml_to_json(text);
  if (!parsed.is_ok()) {
    FUZZ_CHECK(!parsed.status().message().empty());
    return 0;
  }
  // The result is written back as JSON and read again by the same decoder
  // (JSON is YAML): it must give the same value.
  std::string dumped = parsed->dump();
  // Amplification bound: aliases may add a few MiB to what was sent (the
  // decoder's own limit is 4 MiB of copied scalars and ~400,000 nodes), never
  // the gigabytes an alias bomb expands to.
  FUZZ_CHECK(dumped.size() <= 64 * size + (16u << 20));
  auto again = vkube::apiserver::apply::yaml_to_json(dumped);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(*again == *parsed);
  return 0;
}
