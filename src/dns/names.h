// Names between their presentation form ("a\.b.example.com") and labels as
// raw bytes, and the checks both directions share.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"

namespace vkube::dns {

inline constexpr size_t kMaxLabel = 63;
inline constexpr size_t kMaxName = 255;  // on the wire, with length bytes and the root

// Appends one label's bytes in presentation form (escaping '.', '\' and
// bytes outside printable ASCII) to `out`.
void append_label_text(std::string_view bytes, std::string* out);
// The raw labels of a name in presentation form ("" and "." are the root:
// no labels). kInvalid for an empty label, a bad escape, a label over 63
// bytes or a name over 255.
Result<std::vector<std::string>> split_name(std::string_view text);

}  // namespace vkube::dns
