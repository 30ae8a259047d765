// Text helpers that reproduce how Kubernetes (Go) renders errors, so that
// vkube's messages read byte for byte as kube-apiserver's: Go's %q quoting,
// UTF-8 decoding that turns each bad byte into U+FFFD, and field.Error /
// utilerrors.Aggregate formatting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vkube::api::go {

// One decoded code point as Go's utf8.DecodeRuneInString sees it: an invalid
// or truncated sequence is U+FFFD of width 1. `s` must not be empty.
struct Rune {
  char32_t value;
  std::size_t width;
};
Rune decode_rune(std::string_view s);
void append_utf8(std::string& out, char32_t r);

// strconv.Quote (fmt's %q) for a string: double quotes, Go escapes, invalid
// UTF-8 bytes as \xNN. Non-ASCII printability follows unicode.IsPrint for
// the common cases (controls, spaces, format characters, private use);
// unassigned code points print as themselves.
std::string quote(std::string_view s);

// strconv.ParseInt(s, 10, 64): optional sign, decimal digits, no overflow.
bool parse_int64(std::string_view s, std::int64_t* out);

// field.Invalid(path, value, detail).Error():
//   <path>: Invalid value: "<value>": <detail>
std::string invalid_value(std::string_view path, std::string_view value, std::string_view detail);

// utilerrors.NewAggregate(errs).Error() after field.ErrorList.ToAggregate():
// duplicates dropped, one message alone, several as "[a, b]". `errs` must
// not be empty.
std::string aggregate(const std::vector<std::string>& errs);

std::string join(const std::vector<std::string>& parts, std::string_view sep);

}  // namespace vkube::api::go
