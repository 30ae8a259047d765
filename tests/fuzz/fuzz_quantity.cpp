// Resource quantities ("100m", "1Gi", "1.5e3") as tenants write them in
// requests, limits, quotas and CEL's quantity(): the parsers never crash, and
// the three readings agree on what parses.
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "vkube/api/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = vkube::fuzz::as_text(data, size);
  nlohmann::json as_string = std::string(text);
  auto number = vkube::api::quantity_number(as_string);
  auto milli = vkube::api::quantity_milli(text);
  auto value = vkube::api::quantity_value(as_string);
  // Malformed text is malformed to every reader.
  if (!number) FUZZ_CHECK(!milli && !value);
  // Both round up, so a quantity's units are never more than its thousandths.
  if (milli && value && *value >= 0 && *milli >= 0) FUZZ_CHECK(*value <= *milli || *milli == 0);
  // The same text as a JSON number, where it is one.
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  if (!parsed.is_discarded()) {
    (void)vkube::api::quantity_number(parsed);
    (void)vkube::api::quantity_milli(parsed);
    (void)vkube::api::quantity_value(parsed);
  }
  return 0;
}
