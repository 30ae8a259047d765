// The Regex API over Debian's libre2, the C++ RE2 that Go's regexp package (and so kube's CEL
// matches() and OpenAPI `pattern`) reimplements: the same syntax and leftmost-first semantics,
// matching in time linear in the input. What this file adds is Go's side of the differences:
// errors worded as Go's regexp.Compile words them, Go's (?<name>...) spelling (RE2 of Debian 12
// knows only (?P<name>...)), and the refusals Go makes and RE2 does not (\C, groups nested more
// than 1000 deep); plus the UTF-8 stepping callers use between matches and the compile cache.
#include "vkube/cel/re2_regex.h"

#include <re2/re2.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "compile_cache.h"

namespace vkube::cel {

char32_t decode_utf8(std::string_view s, std::size_t* i) {
  auto c = static_cast<unsigned char>(s[*i]);
  std::size_t width = c < 0x80    ? 1
                      : c >= 0xF8 ? 0
                      : c >= 0xF0 ? 4
                      : c >= 0xE0 ? 3
                      : c >= 0xC2 ? 2
                                  : 0;
  char32_t r = width == 1 ? c : width == 2 ? (c & 0x1F) : width == 3 ? (c & 0x0F) : (c & 0x07);
  bool ok = width != 0 && *i + width <= s.size();
  for (std::size_t j = 1; ok && j < width; ++j) {
    auto cc = static_cast<unsigned char>(s[*i + j]);
    ok = (cc & 0xC0) == 0x80;
    r = (r << 6) | (cc & 0x3F);
  }
  ok = ok && !(width == 3 && (r < 0x800 || (r >= 0xD800 && r <= 0xDFFF))) &&
       !(width == 4 && (r < 0x10000 || r > 0x10FFFF));
  *i += ok ? width : 1;
  return ok ? r : 0xFFFD;
}

void append_utf8(std::string& out, char32_t c) {
  if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

struct Regex::Impl {
  explicit Impl(const std::string& pattern, const RE2::Options& options) : re(pattern, options) {}
  RE2 re;
};

namespace {

// Go's limit on group nesting (its parser refuses deeper trees; RE2's does not).
constexpr int kMaxNesting = 1000;

std::string go_error(std::string_view code, std::string_view arg) {
  return "error parsing regexp: " + std::string(code) + ": `" + std::string(arg) + "`";
}

// Go's wording of each RE2 error code; the argument RE2 reports is the fragment Go reports.
std::string_view go_code(RE2::ErrorCode code) {
  switch (code) {
    case RE2::ErrorBadEscape:
      return "invalid escape sequence";
    case RE2::ErrorBadCharClass:
      return "invalid character class";
    case RE2::ErrorBadCharRange:
      return "invalid character class range";
    case RE2::ErrorMissingBracket:
      return "missing closing ]";
    case RE2::ErrorMissingParen:
      return "missing closing )";
    case RE2::ErrorUnexpectedParen:
      return "unexpected )";
    case RE2::ErrorTrailingBackslash:
      return "trailing backslash at end of expression";
    case RE2::ErrorRepeatArgument:
      return "missing argument to repetition operator";
    case RE2::ErrorRepeatSize:
      return "invalid repeat count";
    case RE2::ErrorRepeatOp:
      return "invalid nested repetition operator";
    case RE2::ErrorBadPerlOp:
      return "invalid or unsupported Perl syntax";
    case RE2::ErrorBadUTF8:
      return "invalid UTF-8";
    case RE2::ErrorBadNamedCapture:
      return "invalid named capture";
    case RE2::ErrorPatternTooLarge:
      return "expression too large";
    default:
      return "unexpected error";
  }
}

bool is_word(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// One pass over the pattern's syntax (escapes, \Q...\E, classes, groups) for what RE2 alone does
// not give: Go's refusals (the first, in pattern order, in error(); at_ is where it lies in the
// translated pattern) and the pattern with (?<name> respelled (?P<name> in translated().
class Prescan {
 public:
  explicit Prescan(std::string_view p) : p_(p) { out_.reserve(p.size() + 8); }

  bool run() {
    int depth = 0;
    for (std::size_t i = 0; i < p_.size();) {
      char c = p_[i];
      if (c == '\\') {
        if (!escape(i)) return false;
      } else if (c == '[') {
        if (!char_class(i)) return false;
      } else if (c == '(') {
        if (!flags_only(i) && ++depth > kMaxNesting)
          return refuse("expression nests too deeply", p_);
        if (!group(i)) return false;
      } else {
        if (c == ')') --depth;
        out_.push_back(c);
        ++i_;
      }
      i = i_;
    }
    return true;
  }
  const std::string& translated() const { return out_; }
  const std::string& error() const { return error_; }
  // The translated pattern up to the refusal: RE2 may find an earlier error in it.
  std::string_view before_refusal() const { return std::string_view(out_).substr(0, at_); }

 private:
  bool refuse(std::string_view code, std::string_view arg) {
    error_ = go_error(code, arg);
    at_ = out_.size();
    return false;
  }

  // "(?flags)" at p_[i]: flags for the rest of the group, no group of its own.
  bool flags_only(std::size_t i) const {
    if (p_.substr(i, 2) != "(?") return false;
    std::size_t j = i + 2;
    while (j < p_.size() && std::string_view("imsU-").find(p_[j]) != std::string_view::npos) ++j;
    return j > i + 2 && j < p_.size() && p_[j] == ')';
  }

  // The group opening at p_[i]. A named one is checked as Go checks it: the name runs to the
  // next '>' and is made of word characters.
  bool group(std::size_t i) {
    bool p_form = p_.substr(i, 4) == "(?P<" && p_.size() - i > 4;
    bool short_form = p_.substr(i, 3) == "(?<" && p_.size() - i > 3;
    if (!p_form && !short_form) {
      out_.push_back('(');
      i_ = i + 1;
      return true;
    }
    std::size_t name_at = i + (p_form ? 4 : 3);
    std::size_t close = p_.find('>', name_at);
    if (close == std::string_view::npos) return refuse("invalid named capture", p_.substr(i));
    std::string_view name = p_.substr(name_at, close - name_at);
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_word)) {
      return refuse("invalid named capture", p_.substr(i, close + 1 - i));
    }
    out_.append("(?P<").append(name).push_back('>');
    i_ = close + 1;
    return true;
  }

  // The escape at p_[i] == '\\' (outside or inside a class).
  bool escape(std::size_t i) {
    char e = i + 1 < p_.size() ? p_[i + 1] : '\0';
    if (e == 'p' || e == 'P') {
      // RE2 has Unicode classes, but vkube's engine has always refused them (its tests, and the
      // schema's `pattern` skipping such a pattern, expect it): kept when moving to libre2.
      return refuse("Unicode class (not supported by vkube)", p_.substr(i, 3));
    }
    if (e == 'C') return refuse("invalid escape sequence", p_.substr(i, 2));  // RE2's any byte
    std::size_t end = std::min(i + 2, p_.size());
    if (e == 'Q') {  // literal text up to \E (or the end), copied as it is
      std::size_t close = p_.find("\\E", i + 2);
      end = close == std::string_view::npos ? p_.size() : close + 2;
    }
    out_.append(p_.substr(i, end - i));
    i_ = end;
    return true;
  }

  // The class at p_[i] == '[': a ']' right after '[' or '[^' is a literal, "[:alpha:]" a named
  // class; up to its ']' (or the end, where RE2 reports the missing bracket).
  bool char_class(std::size_t i) {
    std::size_t j = i + 1;
    if (j < p_.size() && p_[j] == '^') ++j;
    if (j < p_.size() && p_[j] == ']') ++j;
    out_.append(p_.substr(i, j - i));
    while (j < p_.size() && p_[j] != ']') {
      if (p_[j] == '\\') {
        if (!escape(j)) return false;
        j = i_;
        continue;
      }
      std::size_t next = j + 1;
      if (p_[j] == '[' && j + 1 < p_.size() && p_[j + 1] == ':') {
        std::size_t close = p_.find(":]", j + 2);
        if (close != std::string_view::npos) next = close + 2;
      }
      out_.append(p_.substr(j, next - j));
      j = next;
    }
    if (j < p_.size()) out_.push_back(p_[j++]);
    i_ = j;
    return true;
  }

  std::string_view p_;
  std::size_t i_ = 0;  // where the step just taken ends in p_
  std::string out_;
  std::string error_;
  std::size_t at_ = 0;
};

// RE2's error for `re` (compiled from `translated`, the prescan's form of `pattern`), in Go's
// words, its fragments spelled as the pattern spells them.
std::string re2_error(const RE2& re, std::string_view translated, std::string_view pattern) {
  std::string arg = re.error_arg();
  if (arg == translated) {
    arg = pattern;  // Go quotes the whole pattern for unbalanced parentheses
  } else if (re.error_code() == RE2::ErrorBadNamedCapture && arg.starts_with("(?P<") &&
             pattern.find(arg) == std::string_view::npos) {
    arg.erase(2, 1);  // a (?<name> respelled (?P<name>
  }
  return go_error(go_code(re.error_code()), arg);
}

RE2::Options go_options() {
  RE2::Options options;  // UTF-8, Perl classes and \b, leftmost-first: Go's defaults
  options.set_log_errors(false);
  return options;
}

}  // namespace

Regex::Regex(std::unique_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Regex::~Regex() = default;

std::shared_ptr<const Regex> Regex::compile(std::string_view pattern, std::string* error) {
  Prescan scan(pattern);
  if (!scan.run()) {
    if (error != nullptr) {
      // Go stops at the first error: one RE2 finds before the refusal comes first (an unclosed
      // group or class there is only where the prefix was cut).
      RE2 prefix(re2::StringPiece(scan.before_refusal().data(), scan.before_refusal().size()),
                 go_options());
      RE2::ErrorCode code = prefix.error_code();
      bool earlier = !prefix.ok() && code != RE2::ErrorMissingParen &&
                     code != RE2::ErrorMissingBracket && code != RE2::ErrorPatternTooLarge;
      *error = earlier ? re2_error(prefix, scan.before_refusal(), pattern) : scan.error();
    }
    return nullptr;
  }
  auto impl = std::make_unique<const Impl>(scan.translated(), go_options());
  if (!impl->re.ok()) {
    if (error != nullptr) *error = re2_error(impl->re, scan.translated(), pattern);
    return nullptr;
  }
  if (error != nullptr) error->clear();
  return std::make_shared<const Regex>(std::move(impl));
}

std::shared_ptr<const Regex> Regex::compile_cached(std::string_view pattern, std::string* error) {
  static CompileCache<Regex> cache(1024);
  return cache.get(pattern, error,
                   [](std::string_view p, std::string* e) { return compile(p, e); });
}

bool Regex::find(std::string_view text, std::size_t from, std::size_t* begin, std::size_t* end,
                 std::size_t* scanned) const {
  if (from > text.size()) return false;
  re2::StringPiece match;
  bool found = impl_->re.Match(re2::StringPiece(text.data(), text.size()), from, text.size(),
                               RE2::UNANCHORED, &match, 1);
  if (found) {
    *begin = static_cast<std::size_t>(match.data() - text.data());
    *end = *begin + match.size();
  }
  // RE2 reads up to the match's end (its DFA may look one byte past it), or all the text.
  if (scanned != nullptr) *scanned = (found ? *end : text.size()) - from;
  return found;
}

bool Regex::search(std::string_view text) const {
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), impl_->re);
}

std::size_t Regex::program_size() const {
  return static_cast<std::size_t>(impl_->re.ProgramSize());
}

}  // namespace vkube::cel
