// The nesting depth of a JSON value, measured without recursion (the values
// under test may be deeper than the stack allows a recursive walk to go).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkube::fuzz {

inline size_t json_depth(const nlohmann::json& root) {
  size_t deepest = 0;
  std::vector<std::pair<const nlohmann::json*, size_t>> todo{{&root, 1}};
  while (!todo.empty()) {
    auto [v, d] = todo.back();
    todo.pop_back();
    if (d > deepest) deepest = d;
    if (v->is_structured())
      for (const auto& child : *v) todo.emplace_back(&child, d + 1);
  }
  return deepest;
}

// What kube's JSON decoder accepts (its maximum nesting depth): a patched or
// applied result deeper than this is one the server could not read back.
inline constexpr size_t kMaxResultDepth = 10000;

}  // namespace vkube::fuzz
