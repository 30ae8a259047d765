#include "go_format.h"

#include <algorithm>
#include <charconv>

namespace vkube::api::go {
namespace {

constexpr char32_t kRuneError = 0xFFFD;

bool is_continuation(unsigned char c) {
  return c >= 0x80 && c <= 0xBF;
}

// Non-printable code points above ASCII per unicode.IsPrint: C1 controls,
// spaces other than U+0020, format characters, private use, non-characters.
bool is_printable_non_ascii(char32_t r) {
  struct Range {
    char32_t lo, hi;
  };
  static constexpr Range kNotPrintable[] = {
      {0x80, 0xA0},       {0xAD, 0xAD},       {0x600, 0x605},      {0x61C, 0x61C},
      {0x6DD, 0x6DD},     {0x70F, 0x70F},     {0x1680, 0x1680},    {0x180E, 0x180E},
      {0x2000, 0x200F},   {0x2028, 0x202F},   {0x205F, 0x206F},    {0x3000, 0x3000},
      {0xE000, 0xF8FF},   {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},    {0xFFFE, 0xFFFF},
      {0xE0001, 0xE0001}, {0xE0020, 0xE007F}, {0xF0000, 0x10FFFF},
  };
  for (const Range& range : kNotPrintable) {
    if (r >= range.lo && r <= range.hi) return false;
  }
  return true;
}

void append_hex(std::string& out, std::uint32_t v, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += kHex[(v >> shift) & 0xF];
}

}  // namespace

Rune decode_rune(std::string_view s) {
  auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return {b0, 1};
  std::size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  char32_t value;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
    value = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    value = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    value = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return {kRuneError, 1};
  }
  if (s.size() < need) return {kRuneError, 1};
  auto b1 = static_cast<unsigned char>(s[1]);
  if (b1 < lo || b1 > hi) return {kRuneError, 1};
  value = (value << 6) | (b1 & 0x3F);
  for (std::size_t i = 2; i < need; ++i) {
    auto b = static_cast<unsigned char>(s[i]);
    if (!is_continuation(b)) return {kRuneError, 1};
    value = (value << 6) | (b & 0x3F);
  }
  return {value, need};
}

void append_utf8(std::string& out, char32_t r) {
  if (r < 0x80) {
    out += static_cast<char>(r);
  } else if (r < 0x800) {
    out += static_cast<char>(0xC0 | (r >> 6));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else if (r < 0x10000) {
    out += static_cast<char>(0xE0 | (r >> 12));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (r >> 18));
    out += static_cast<char>(0x80 | ((r >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  }
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  while (!s.empty()) {
    Rune r = decode_rune(s);
    std::string_view raw = s.substr(0, r.width);
    s.remove_prefix(r.width);
    if (r.value == kRuneError && r.width == 1) {
      out += "\\x";
      append_hex(out, static_cast<unsigned char>(raw[0]), 2);
      continue;
    }
    switch (r.value) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\a':
        out += "\\a";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\v':
        out += "\\v";
        continue;
      default:
        break;
    }
    if (r.value < 0x80) {
      if (r.value < ' ' || r.value == 0x7F) {
        out += "\\x";
        append_hex(out, r.value, 2);
      } else {
        out += raw;
      }
    } else if (is_printable_non_ascii(r.value)) {
      out += raw;
    } else if (r.value < 0x10000) {
      out += "\\u";
      append_hex(out, r.value, 4);
    } else {
      out += "\\U";
      append_hex(out, r.value, 8);
    }
  }
  out += '"';
  return out;
}

bool parse_int64(std::string_view s, std::int64_t* out) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  // Parse the magnitude as unsigned so that INT64_MIN is representable.
  std::uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), magnitude);
  if (ec != std::errc() || end != s.data() + s.size()) return false;
  constexpr std::uint64_t kMax = static_cast<std::uint64_t>(INT64_MAX);
  if (magnitude > kMax + (negative ? 1 : 0)) return false;
  *out = negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
  return true;
}

std::string invalid_value(std::string_view path, std::string_view value, std::string_view detail) {
  std::string out(path);
  out += ": Invalid value: ";
  out += quote(value);
  if (!detail.empty()) {
    out += ": ";
    out += detail;
  }
  return out;
}

std::string aggregate(const std::vector<std::string>& errs) {
  std::vector<const std::string*> unique;
  for (const std::string& e : errs) {
    bool seen =
        std::any_of(unique.begin(), unique.end(), [&](const std::string* u) { return *u == e; });
    if (!seen) unique.push_back(&e);
  }
  if (unique.size() == 1) return *unique[0];
  std::string out = "[";
  for (std::size_t i = 0; i < unique.size(); ++i) {
    if (i > 0) out += ", ";
    out += *unique[i];
  }
  out += "]";
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

}  // namespace vkube::api::go
