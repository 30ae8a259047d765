// Finding the members of a JSON object in its text without building a tree:
// for hot paths that need a few top-level fields of a large stored object
// (an informer reads metadata, not a ConfigMap's data). The scan checks the
// structure only as far as it walks; parse what it returns to be sure.
#pragma once

#include <cstddef>
#include <string_view>

namespace vkube::json_scan {

constexpr size_t npos = std::string_view::npos;

// The end (one past the closing quote) of the JSON string whose opening
// quote is at `pos`; npos when it does not end.
size_t string_end(std::string_view text, size_t pos);

// The end (one past the last byte) of the JSON value that starts at `pos`,
// skipping leading whitespace; npos when the text ends first or no value
// starts there.
size_t skip_value(std::string_view text, size_t pos);

// Calls fn(key, value) for every member of the object `text` holds, in
// order: `key` is the raw key between its quotes (escapes left as they are),
// `value` the member's text. fn returns false to stop early. Returns false
// when `text` is not an object the scan can walk (fn may have seen some
// members by then).
template <typename Fn>
bool for_each_member(std::string_view text, Fn&& fn);

// Calls fn(value) for every element of the array `text` holds, in order.
// Returns false when `text` is not an array the scan can walk.
template <typename Fn>
bool for_each_element(std::string_view text, Fn&& fn);

namespace detail {
size_t skip_space(std::string_view text, size_t pos);
}  // namespace detail

template <typename Fn>
bool for_each_member(std::string_view text, Fn&& fn) {
  size_t i = detail::skip_space(text, 0);
  if (i >= text.size() || text[i] != '{') return false;
  i = detail::skip_space(text, i + 1);
  if (i < text.size() && text[i] == '}') return detail::skip_space(text, i + 1) == text.size();
  for (;;) {
    if (i >= text.size() || text[i] != '"') return false;
    size_t key_end = string_end(text, i);
    if (key_end == npos) return false;
    std::string_view key = text.substr(i + 1, key_end - i - 2);
    i = detail::skip_space(text, key_end);
    if (i >= text.size() || text[i] != ':') return false;
    size_t value_start = detail::skip_space(text, i + 1);
    size_t value_end = skip_value(text, value_start);
    if (value_end == npos) return false;
    if (!fn(key, text.substr(value_start, value_end - value_start))) return true;
    i = detail::skip_space(text, value_end);
    if (i >= text.size()) return false;
    if (text[i] == '}') return detail::skip_space(text, i + 1) == text.size();
    if (text[i] != ',') return false;
    i = detail::skip_space(text, i + 1);
  }
}

template <typename Fn>
bool for_each_element(std::string_view text, Fn&& fn) {
  size_t i = detail::skip_space(text, 0);
  if (i >= text.size() || text[i] != '[') return false;
  i = detail::skip_space(text, i + 1);
  if (i < text.size() && text[i] == ']') return detail::skip_space(text, i + 1) == text.size();
  for (;;) {
    size_t end = skip_value(text, i);
    if (end == npos) return false;
    fn(text.substr(i, end - i));
    i = detail::skip_space(text, end);
    if (i >= text.size()) return false;
    if (text[i] == ']') return detail::skip_space(text, i + 1) == text.size();
    if (text[i] != ',') return false;
    i = detail::skip_space(text, i + 1);
  }
}

}  // namespace vkube::json_scan
