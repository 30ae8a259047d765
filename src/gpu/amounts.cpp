#include "amounts.h"

#include "vkube/api/quantity.h"

namespace vkube::gpu {

std::optional<int64_t> whole_number(std::string_view s) {
  if (s.empty() || s.size() > 15) return std::nullopt;
  int64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return std::nullopt;
    v = v * 10 + (ch - '0');
  }
  return v;
}

std::optional<int64_t> gpu_amount_milli(std::string_view s) {
  if (s.empty()) return std::nullopt;
  auto milli = api::quantity_milli(s);
  if (!milli || *milli < 0) return std::nullopt;
  return milli;
}

}  // namespace vkube::gpu
