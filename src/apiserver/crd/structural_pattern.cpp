// `pattern` support: Go RE2 patterns run on std::wregex (ECMAScript over code points, so `.`
// and `{n}` count characters as Go does), compiled once per thread and cached. RE2 constructs
// ECMAScript lacks are translated ((?i), (?s), \A, \z, named groups); a pattern that still does
// not compile matches everything rather than refusing resources kube would accept. The CRD check
// reports only the syntax errors RE2 itself reports, worded as Go's regexp package words them.
#include <cctype>
#include <memory>
#include <regex>
#include <unordered_map>

#include "structural_internal.h"

namespace vkube::apiserver::crd::detail {

struct CompiledPattern {
  std::optional<std::wregex> re;  // empty when the pattern did not compile here
  std::string error;              // Go's syntax error, "" when RE2 would accept the pattern
};

namespace {

constexpr std::size_t kMaxCachedPatterns = 4096;

// UTF-8 to code points; each invalid byte becomes U+FFFD as in Go.
std::wstring widen(std::string_view s) {
  std::wstring out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t width = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    char32_t r = width == 1 ? c : width == 2 ? (c & 0x1F) : width == 3 ? (c & 0x0F) : (c & 0x07);
    bool ok = width != 0 && i + width <= s.size();
    for (std::size_t j = 1; ok && j < width; ++j) {
      auto cc = static_cast<unsigned char>(s[i + j]);
      ok = (cc & 0xC0) == 0x80;
      r = (r << 6) | (cc & 0x3F);
    }
    out += ok ? static_cast<wchar_t>(r) : static_cast<wchar_t>(0xFFFD);
    i += ok ? width : 1;
  }
  return out;
}

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

// Consumes a leading flag group, "(?i)" or "(?s)" (also after a leading '^'), which RE2 applies
// to the whole pattern.
void leading_flags(std::string_view& p, std::string& out, bool& icase, bool& dotall) {
  if (p.substr(0, 3) == "^(?") {
    out += '^';
    p.remove_prefix(1);
  }
  if (p.substr(0, 2) != "(?") return;
  std::size_t end = p.find(')');
  std::string_view flags = p.substr(2, end == std::string_view::npos ? 0 : end - 2);
  if (flags.empty() || flags.find_first_not_of("is") != std::string_view::npos) return;
  icase = flags.find('i') != std::string_view::npos;
  dotall = flags.find('s') != std::string_view::npos;
  p.remove_prefix(end + 1);
}

// Copies a character class; a ']' first in it is a literal in RE2 but ends it in ECMAScript.
std::size_t copy_class(std::string_view p, std::size_t i, std::string& out) {
  out += '[';
  if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
  if (i + 1 < p.size() && p[i + 1] == ']') {
    out += "\\]";
    ++i;
  }
  return i;
}

// Rewrites the RE2 constructs ECMAScript spells differently. Returns false for constructs with
// no ECMAScript equivalent here (\p classes, \Q..\E, inline flags after the start).
bool translate(std::string_view p, std::string& out, bool& icase) {
  bool dotall = false;
  leading_flags(p, out, icase, dotall);
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[++i];
      if (e == 'p' || e == 'P' || e == 'Q' || e == 'E' || e == 'C') return false;
      if (!in_class && (e == 'A' || e == 'z')) {
        out += e == 'A' ? '^' : '$';
      } else {
        (out += '\\') += e;
      }
    } else if (in_class) {
      in_class = c != ']';
      out += c;
    } else if (c == '[') {
      i = copy_class(p, i, out);
      in_class = true;
    } else if (c == '(' && p.substr(i, 2) == "(?") {
      std::string_view rest = p.substr(i);
      if (rest.substr(0, 3) == "(?:") {
        out += c;
        continue;
      }
      std::size_t close = rest.find('>');
      bool named = rest.substr(0, 4) == "(?P<" || rest.substr(0, 3) == "(?<";
      if (!named || close == std::string_view::npos) return false;
      out += '(';  // ECMAScript's std::regex has no named groups
      i += close;
    } else {
      out += c == '.' && dotall ? "[\\s\\S]" : std::string(1, c);
    }
  }
  return true;
}

std::unique_ptr<CompiledPattern> build(const std::string& pattern) {
  auto p = std::make_unique<CompiledPattern>();
  p->error = go_syntax_error(pattern);
  std::string ecma;
  bool icase = false;
  if (!p->error.empty() || !translate(pattern, ecma, icase)) return p;
  auto flags = std::regex_constants::ECMAScript;
  if (icase) flags |= std::regex_constants::icase;
#ifdef __GLIBCXX__
  // libstdc++'s default executor backtracks recursively per input character: the breadth-first
  // one keeps long or hostile input from exhausting the stack (RE2 has no backreferences).
  flags |= std::regex_constants::__polynomial;
#endif
  try {
    p->re.emplace(widen(ecma), flags);
  } catch (const std::regex_error&) {
    p->re.reset();
  }
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
  if (!p.re) return true;
  try {
    return std::regex_search(widen(s), *p.re);
  } catch (const std::regex_error&) {
    return true;  // the engine gave up (complexity); do not refuse on that account
  }
}

}  // namespace vkube::apiserver::crd::detail
