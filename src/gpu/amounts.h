// How the GPU flags (--gpu-quota, --gpu-share) read their numbers, so that
// both take the same forms and say the same thing about a bad one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace vkube::gpu {

// A whole number, 0 or more (at most 15 digits); nullopt otherwise.
std::optional<int64_t> whole_number(std::string_view s);

// An amount of GPUs as a kube quantity ("8", "1.5", "1500m"), 0 or more, in
// thousandths; nullopt for anything else (empty, negative, not a quantity).
std::optional<int64_t> gpu_amount_milli(std::string_view s);

}  // namespace vkube::gpu
