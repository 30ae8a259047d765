// Base64 (RFC 4648), standard and URL-safe alphabets.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace vkube {

std::string base64_encode(std::string_view in, bool url_safe = false, bool pad = true);
// Accepts either alphabet, with or without padding; nullopt on bad input.
std::optional<std::string> base64_decode(std::string_view in);

}  // namespace vkube
