#include "vkube/common/json_scan.h"

#include <cstring>

namespace vkube::json_scan {
namespace detail {

size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size() &&
         (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\r' || text[pos] == '\t'))
    ++pos;
  return pos;
}

}  // namespace detail

size_t string_end(std::string_view text, size_t pos) {
  // Jump from quote to quote; a quote preceded by an odd run of
  // backslashes is escaped.
  size_t i = pos + 1;
  for (;;) {
    const void* hit = std::memchr(text.data() + i, '"', text.size() - i);
    if (hit == nullptr) return npos;
    size_t q = static_cast<const char*>(hit) - text.data();
    size_t slashes = 0;
    while (q - slashes > pos + 1 && text[q - slashes - 1] == '\\') ++slashes;
    if (slashes % 2 == 0) return q + 1;
    i = q + 1;
  }
}

size_t skip_value(std::string_view text, size_t pos) {
  size_t i = detail::skip_space(text, pos);
  if (i >= text.size()) return npos;
  char first = text[i];
  if (first == '"') return string_end(text, i);
  if (first != '{' && first != '[') {
    // A number, true, false or null: up to the next delimiter.
    size_t start = i;
    while (i < text.size() && text[i] != ',' && text[i] != '}' && text[i] != ']' &&
           text[i] != ' ' && text[i] != '\n' && text[i] != '\r' && text[i] != '\t' &&
           text[i] != ':' && text[i] != '"' && text[i] != '{' && text[i] != '[')
      ++i;
    return i == start ? npos : i;
  }
  // An object or array: count brackets outside strings. Mismatched kinds
  // ('{' closed by ']') are left for the parser of the result to refuse.
  size_t depth = 0;
  while (i < text.size()) {
    char ch = text[i];
    if (ch == '"') {
      i = string_end(text, i);
      if (i == npos) return npos;
      continue;
    }
    if (ch == '{' || ch == '[') {
      ++depth;
    } else if (ch == '}' || ch == ']') {
      if (--depth == 0) return i + 1;
    }
    ++i;
  }
  return npos;
}

}  // namespace vkube::json_scan
