// Durations as Go's time.ParseDuration reads them (metav1.Duration fields of
// tenant objects, CEL's duration()): parse, print with Go's String(), parse
// again to the same number of nanoseconds.
#include <string>

#include "fuzz_util.h"
#include "vkube/schema/protobuf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = vkube::fuzz::as_text(data, size);
  int64_t nanos = 0;
  if (!vkube::schema::parse_duration(text, nanos)) return 0;
  std::string printed = vkube::schema::format_duration(nanos);
  int64_t again = 0;
  FUZZ_CHECK(vkube::schema::parse_duration(printed, again));
  FUZZ_CHECK(again == nanos);
  return 0;
}
