// Private to the regex engine (re2_regex_parse.cpp, re2_regex.cpp): the pattern tree the parser
// builds, the program the compiler emits from it, and the limits both enforce. Not an interface.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vkube/cel/re2_regex.h"

namespace vkube::cel {
namespace re2_detail {

// Go's limits: {n,m} counts above 1000 and groups nested deeper than 1000 are refused (the latter
// also bounds the parser's and compiler's recursion, which follows the pattern's nesting).
inline constexpr int kMaxRegexRepeat = 1000;
inline constexpr int kMaxRegexNesting = 1000;
// Instructions a program may hold: bounds the per-code-point work of a match.
inline constexpr std::size_t kMaxRegexProgram = 50000;
// Stands for "no character": before the start or past the end of the text, or of the pattern.
inline constexpr char32_t kNoChar = 0xFFFFFFFF;

inline bool is_word_char(char32_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

enum class RegexAssert : uint8_t {
  kBeginLine,
  kEndLine,
  kBeginText,
  kEndText,
  kWordBoundary,
  kNotWordBoundary
};

// A set of code point ranges, sorted and merged; `negated` inverts it.
struct RegexClass {
  std::vector<std::pair<char32_t, char32_t>> ranges;
  bool negated = false;

  void add(char32_t lo, char32_t hi) { ranges.emplace_back(lo, hi); }
  void add_class(const RegexClass& other) {
    if (!other.negated) {
      ranges.insert(ranges.end(), other.ranges.begin(), other.ranges.end());
      return;
    }
    RegexClass sorted = other;
    sorted.normalize();
    char32_t next = 0;
    for (const auto& [lo, hi] : sorted.ranges) {
      if (lo > next) add(next, lo - 1);
      next = hi + 1;
    }
    if (next <= 0x10FFFF) add(next, 0x10FFFF);
  }
  // ASCII case folding, for (?i).
  void fold() {
    std::size_t n = ranges.size();
    for (std::size_t k = 0; k < n; ++k) {
      auto [lo, hi] = ranges[k];
      char32_t a = std::max<char32_t>(lo, 'a');
      char32_t b = std::min<char32_t>(hi, 'z');
      if (a <= b) add(a - 32, b - 32);
      a = std::max<char32_t>(lo, 'A');
      b = std::min<char32_t>(hi, 'Z');
      if (a <= b) add(a + 32, b + 32);
    }
  }
  void normalize() {
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<char32_t, char32_t>> merged;
    for (const auto& r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    ranges = std::move(merged);
  }
  bool contains(char32_t c) const {
    auto it =
        std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(c, char32_t{0x7FFFFFFF}));
    bool in = it != ranges.begin() && std::prev(it)->second >= c;
    return in != negated;
  }
};

enum class RegexOp : uint8_t { kChar, kClass, kAny, kAnyNotNL, kSplit, kJmp, kAssert, kMatch };

struct RegexInst {
  RegexOp op = RegexOp::kMatch;
  char32_t c = 0;
  int x = 0;  // kClass: class index; kSplit/kJmp: preferred target
  int y = 0;  // kSplit: the other target
  RegexAssert assert_kind = RegexAssert::kBeginText;
};

// The parsed pattern.
struct RegexNode {
  enum class Kind : uint8_t {
    kEmpty,
    kChar,
    kClass,
    kAny,
    kAnyNotNL,
    kConcat,
    kAlt,
    kRepeat,
    kAssert
  };
  Kind kind = Kind::kEmpty;
  char32_t c = 0;
  int cls = 0;
  int min = 0;
  int max = 0;  // -1: unbounded
  bool greedy = true;
  RegexAssert assert_kind = RegexAssert::kBeginText;
  std::vector<RegexNode> subs;
};

// Parses `pattern` into `out`, appending its character classes to `classes` (nodes refer to them
// by index). False with Go's error text in `error` when the pattern is invalid.
bool parse_regex(std::string_view pattern, RegexNode* out, std::vector<RegexClass>* classes,
                 std::string* error);

}  // namespace re2_detail

struct Regex::Impl {
  std::vector<re2_detail::RegexInst> prog;
  std::vector<re2_detail::RegexClass> classes;
};

}  // namespace vkube::cel
