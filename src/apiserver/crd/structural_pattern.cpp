// `pattern` support: Go RE2 patterns run on the RE2 engine CEL uses (vkube/cel/re2_regex.h), so
// no pattern can hang validation and no value, however long, can exhaust the stack (std::regex
// could do both). Compiled patterns are cached per thread. A pattern the engine does not support
// (Unicode classes such as \p{L}) matches everything rather than refusing resources kube would
// accept. The CRD check reports only the syntax errors RE2 itself reports, worded as Go's regexp
// package words them, found by a scan independent of the engine so that no engine limitation can
// refuse a CRD kube accepts.
#include <cctype>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "structural_internal.h"
#include "vkube/cel/re2_regex.h"

namespace vkube::apiserver::crd::detail {

using vkube::cel::Regex;

struct CompiledPattern {
  std::shared_ptr<const Regex> re;  // null when the pattern is invalid or unsupported here
  std::string error;                // Go's syntax error, "" when RE2 would accept the pattern
};

namespace {

constexpr std::size_t kMaxCachedPatterns = 4096;

bool is_repeat(char c) {
  return c == '*' || c == '+' || c == '?';
}

// Escapes RE2 accepts after a backslash: these letters and digits, and any non-alphanumeric.
bool valid_escape(char c) {
  static constexpr std::string_view kLetters = "afntrvdDsSwWbBAzpPQEx01234567";
  return kLetters.find(c) != std::string_view::npos || !std::isalnum(static_cast<unsigned char>(c));
}

std::string go_error(std::string_view what, std::string_view fragment) {
  return "error parsing regexp: " + std::string(what) + ": `" + std::string(fragment) + "`";
}

// Skips a character class starting at p[i] == '['; returns the index of its closing ']' or
// npos. A ']' right after '[' or '[^' is a literal in RE2, as are "[:alpha:]" inside.
std::size_t class_end(std::string_view p, std::size_t i) {
  std::size_t j = i + 1;
  if (j < p.size() && p[j] == '^') ++j;
  if (j < p.size() && p[j] == ']') ++j;
  while (j < p.size() && p[j] != ']') {
    if (p[j] == '\\') {
      ++j;
    } else if (p[j] == '[' && j + 1 < p.size() && p[j + 1] == ':') {
      std::size_t close = p.find(":]", j + 2);
      if (close != std::string_view::npos) j = close + 1;
    }
    ++j;
  }
  return j < p.size() ? j : std::string_view::npos;
}

// The errors Go's regexp.Compile reports that are unambiguous to detect by scanning: unbalanced
// groups and classes, bad escapes, repetitions without an argument or of a repetition.
std::string go_syntax_error(std::string_view p) {
  int depth = 0;
  bool operand = false;  // something a repetition can apply to precedes
  int repeats = 0;       // 1 after a repetition, 2 after its lazy '?'
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (is_repeat(c)) {
      if (!operand) return go_error("missing argument to repetition operator", p.substr(i, 1));
      if (repeats == 2 || (repeats == 1 && c != '?')) {
        return go_error("invalid nested repetition operator", p.substr(i - 1, 2));
      }
      ++repeats;
      continue;
    }
    repeats = 0;
    operand = true;
    if (c == '\\') {
      if (i + 1 == p.size()) return go_error("trailing backslash at end of expression", "");
      if (!valid_escape(p[i + 1])) return go_error("invalid escape sequence", p.substr(i, 2));
      ++i;
    } else if (c == '[') {
      std::size_t end = class_end(p, i);
      if (end == std::string_view::npos) return go_error("missing closing ]", p.substr(i));
      i = end;
    } else if (c == '(') {
      operand = false;
      std::size_t end = p[i + 1 < p.size() ? i + 1 : i] == '?' ? p.find_first_of(":)>", i) : i;
      if (end == std::string_view::npos) return go_error("missing closing )", p);
      if (p[end] != ')') ++depth;  // "(?i)" sets flags and opens nothing
      i = end;
    } else if (c == ')') {
      if (--depth < 0) return go_error("unexpected )", p);
    } else if (c == '|') {
      operand = false;
    }
  }
  if (depth > 0) return go_error("missing closing )", p);
  return {};
}

std::unique_ptr<CompiledPattern> build(const std::string& pattern) {
  auto p = std::make_unique<CompiledPattern>();
  p->error = go_syntax_error(pattern);
  if (!p->error.empty()) return p;
  std::string unsupported;  // the engine's reason; not shown, the pattern matches everything
  p->re = Regex::compile_cached(pattern, &unsupported);
  return p;
}

}  // namespace

const CompiledPattern& compile_pattern(const std::string& pattern) {
  thread_local std::unordered_map<std::string, std::unique_ptr<CompiledPattern>> cache;
  auto it = cache.find(pattern);
  if (it != cache.end()) return *it->second;
  if (cache.size() >= kMaxCachedPatterns) cache.clear();
  return *cache.emplace(pattern, build(pattern)).first->second;
}

const std::string& pattern_error(const CompiledPattern& p) {
  return p.error;
}

bool pattern_matches(const CompiledPattern& p, std::string_view s) {
  return p.re == nullptr || p.re->search(s);
}

}  // namespace vkube::apiserver::crd::detail
