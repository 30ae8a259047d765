// The regex engine's front end: RE2 pattern syntax, as Go's regexp/syntax parses it, to a tree of
// RegexNodes (classes collected aside), with Go's error wording ("error parsing regexp: missing
// closing ): `(abc`"). Recursion follows the pattern's nesting only, bounded by kMaxRegexNesting.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "re2_regex_internal.h"

namespace vkube::cel::re2_detail {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

RegexClass perl_class(char32_t letter) {
  RegexClass cls;
  switch (letter | 0x20) {
    case 'd':
      cls.add('0', '9');
      break;
    case 's':
      cls.add('\t', '\n');
      cls.add('\f', '\r');
      cls.add(' ', ' ');
      break;
    default:
      cls.add('0', '9');
      cls.add('A', 'Z');
      cls.add('a', 'z');
      cls.add('_', '_');
      break;
  }
  cls.negated = letter >= 'A' && letter <= 'Z';
  return cls;
}

bool posix_class(std::string_view name, RegexClass* out) {
  struct Posix {
    std::string_view name;
    std::vector<std::pair<char32_t, char32_t>> ranges;
  };
  static const Posix kPosix[] = {
      {"alnum", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}}},
      {"alpha", {{'A', 'Z'}, {'a', 'z'}}},
      {"ascii", {{0, 0x7F}}},
      {"blank", {{'\t', '\t'}, {' ', ' '}}},
      {"cntrl", {{0, 0x1F}, {0x7F, 0x7F}}},
      {"digit", {{'0', '9'}}},
      {"graph", {{'!', '~'}}},
      {"lower", {{'a', 'z'}}},
      {"print", {{' ', '~'}}},
      {"punct", {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}}},
      {"space", {{'\t', '\r'}, {' ', ' '}}},
      {"upper", {{'A', 'Z'}}},
      {"word", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'_', '_'}}},
      {"xdigit", {{'0', '9'}, {'A', 'F'}, {'a', 'f'}}},
  };
  for (const auto& p : kPosix) {
    if (p.name == name) {
      out->ranges = p.ranges;
      return true;
    }
  }
  return false;
}

class RegexParser {
 public:
  RegexParser(std::string_view pattern, std::vector<RegexClass>* classes)
      : source_(pattern), classes_(classes) {
    for (std::size_t i = 0; i < pattern.size();) pat_.push_back(decode_utf8(pattern, &i));
  }

  bool parse(RegexNode* out, std::string* error) {
    Flags flags;
    bool ok = alternation(out, flags, 0);
    if (ok && pos_ < pat_.size()) ok = fail("unexpected )", std::string(source_));
    if (!ok) *error = error_;
    return ok;
  }

 private:
  struct Flags {
    bool fold = false;       // i
    bool multiline = false;  // m
    bool dot_nl = false;     // s
    bool ungreedy = false;   // U
  };

  bool fail(std::string_view code, std::string arg) {
    if (error_.empty()) error_ = "error parsing regexp: " + std::string(code) + ": `" + arg + "`";
    return false;
  }
  bool at_end() const { return pos_ >= pat_.size(); }
  char32_t peek(std::size_t k = 0) const {
    return pos_ + k < pat_.size() ? pat_[pos_ + k] : kNoChar;
  }
  std::string text(std::size_t from, std::size_t to) const {
    std::string out;
    for (std::size_t i = from; i < to && i < pat_.size(); ++i) append_utf8(out, pat_[i]);
    return out;
  }

  bool alternation(RegexNode* out, Flags& flags, int depth) {
    if (depth > kMaxRegexNesting) return fail("expression nests too deeply", std::string(source_));
    RegexNode alt;
    alt.kind = RegexNode::Kind::kAlt;
    for (;;) {
      RegexNode seq;
      if (!concat(&seq, flags, depth)) return false;
      alt.subs.push_back(std::move(seq));
      if (peek() != '|') break;
      ++pos_;
    }
    *out = alt.subs.size() == 1 ? std::move(alt.subs[0]) : std::move(alt);
    return true;
  }

  bool concat(RegexNode* out, Flags& flags, int depth) {
    out->kind = RegexNode::Kind::kConcat;
    while (!at_end() && peek() != '|' && peek() != ')') {
      std::size_t start = pos_;
      char32_t c = peek();
      if (c == '*' || c == '+' || c == '?' || (c == '{' && repeat_ahead())) {
        if (out->subs.empty() || last_was_repeat_) {
          std::size_t end = pos_ + 1;
          if (c == '{') end = pat_.size();
          if (last_was_repeat_)
            return fail("invalid nested repetition operator", text(repeat_start_, end));
          return fail("missing argument to repetition operator", text(start, end));
        }
        if (!repetition(&out->subs.back(), flags)) return false;
        continue;
      }
      last_was_repeat_ = false;
      RegexNode atom_node;
      bool flags_only = false;
      if (!atom(&atom_node, flags, depth, &flags_only)) return false;
      if (!flags_only) out->subs.push_back(std::move(atom_node));
    }
    last_was_repeat_ = false;
    return true;
  }

  // {n}, {n,} or {n,m} at pos_ (anything else makes '{' a literal, as in Go).
  bool repeat_ahead(int* lo = nullptr, int* hi = nullptr, std::size_t* len = nullptr) const {
    std::size_t i = pos_ + 1;
    auto number = [&](int* v) {
      std::size_t start = i;
      long n = 0;
      while (i < pat_.size() && pat_[i] >= '0' && pat_[i] <= '9') {
        n = std::min<long>(n * 10 + (pat_[i] - '0'), 100000);
        ++i;
      }
      *v = static_cast<int>(n);
      return i > start;
    };
    int a = 0;
    int b = 0;
    if (!number(&a)) return false;
    b = a;
    if (i < pat_.size() && pat_[i] == ',') {
      ++i;
      if (!number(&b)) b = -1;
    }
    if (i >= pat_.size() || pat_[i] != '}') return false;
    if (lo != nullptr) *lo = a;
    if (hi != nullptr) *hi = b;
    if (len != nullptr) *len = i + 1 - pos_;
    return true;
  }

  bool repetition(RegexNode* target, const Flags& flags) {
    repeat_start_ = pos_;
    RegexNode rep;
    rep.kind = RegexNode::Kind::kRepeat;
    char32_t c = pat_[pos_];
    if (c == '{') {
      std::size_t len = 0;
      repeat_ahead(&rep.min, &rep.max, &len);
      if (rep.min > kMaxRegexRepeat || rep.max > kMaxRegexRepeat ||
          (rep.max >= 0 && rep.max < rep.min)) {
        return fail("invalid repeat count", text(pos_, pos_ + len));
      }
      pos_ += len;
    } else {
      rep.min = c == '+' ? 1 : 0;
      rep.max = c == '?' ? 1 : -1;
      ++pos_;
    }
    rep.greedy = true;
    if (peek() == '?') {
      rep.greedy = false;
      ++pos_;
    }
    if (flags.ungreedy) rep.greedy = !rep.greedy;
    rep.subs.push_back(std::move(*target));
    *target = std::move(rep);
    last_was_repeat_ = true;
    return true;
  }

  RegexNode char_node(char32_t c, const Flags& flags) {
    RegexNode n;
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (flags.fold && letter) {
      RegexClass cls;
      cls.add(c, c);
      cls.fold();
      return class_node(std::move(cls), flags);
    }
    n.kind = RegexNode::Kind::kChar;
    n.c = c;
    return n;
  }

  RegexNode class_node(RegexClass cls, const Flags& flags) {
    if (flags.fold) cls.fold();
    cls.normalize();
    classes_->push_back(std::move(cls));
    RegexNode n;
    n.kind = RegexNode::Kind::kClass;
    n.cls = static_cast<int>(classes_->size()) - 1;
    return n;
  }

  RegexNode assert_node(RegexAssert a) {
    RegexNode n;
    n.kind = RegexNode::Kind::kAssert;
    n.assert_kind = a;
    return n;
  }

  bool atom(RegexNode* out, Flags& flags, int depth, bool* flags_only) {
    char32_t c = pat_[pos_++];
    switch (c) {
      case '(':
        return group(out, flags, depth, flags_only);
      case '[':
        return char_class(out, flags);
      case '.':
        out->kind = flags.dot_nl ? RegexNode::Kind::kAny : RegexNode::Kind::kAnyNotNL;
        return true;
      case '^':
        *out = assert_node(flags.multiline ? RegexAssert::kBeginLine : RegexAssert::kBeginText);
        return true;
      case '$':
        *out = assert_node(flags.multiline ? RegexAssert::kEndLine : RegexAssert::kEndText);
        return true;
      case '\\':
        return escape(out, flags);
      default:
        *out = char_node(c, flags);
        return true;
    }
  }

  bool parse_flags(Flags* flags, std::size_t start) {
    bool negate = false;
    for (;;) {
      char32_t c = peek();
      ++pos_;
      switch (c) {
        case 'i':
          flags->fold = !negate;
          break;
        case 'm':
          flags->multiline = !negate;
          break;
        case 's':
          flags->dot_nl = !negate;
          break;
        case 'U':
          flags->ungreedy = !negate;
          break;
        case '-':
          if (negate) return fail("invalid or unsupported Perl syntax", text(start, pos_));
          negate = true;
          break;
        case ':':
        case ')':
          --pos_;
          return true;
        default:
          return fail("invalid or unsupported Perl syntax", text(start, pos_));
      }
    }
  }

  bool group(RegexNode* out, Flags& flags, int depth, bool* flags_only) {
    std::size_t start = pos_ - 1;
    Flags inner = flags;
    if (peek() == '?') {
      ++pos_;
      if (peek() == 'P' || peek() == '<') {
        if (!skip_group_name(start)) return false;
      } else if (peek() == ':') {
        ++pos_;
      } else {
        if (!parse_flags(&inner, start)) return false;
        if (peek() == ')') {  // (?i): the flags hold for the rest of the enclosing group
          ++pos_;
          flags = inner;
          *flags_only = true;
          return true;
        }
        ++pos_;  // ':'
      }
    }
    if (!alternation(out, inner, depth + 1)) return false;
    if (peek() != ')') return fail("missing closing )", std::string(source_));
    ++pos_;
    return true;
  }

  bool skip_group_name(std::size_t start) {
    if (peek() == 'P') ++pos_;
    if (peek() != '<') return fail("invalid or unsupported Perl syntax", text(start, pos_ + 1));
    ++pos_;
    std::size_t name_start = pos_;
    while (!at_end() && peek() != '>') {
      if (!is_word_char(peek())) return fail("invalid named capture", text(start, pos_ + 1));
      ++pos_;
    }
    if (at_end() || pos_ == name_start) return fail("invalid named capture", text(start, pos_));
    ++pos_;
    return true;
  }

  // One escape after '\' (pos_ at the escaped character); a literal code point in *lit, or a
  // class in *cls (returns via `is_class`).
  bool escape_char(char32_t* lit, RegexClass* cls, bool* is_class, bool in_class) {
    std::size_t start = pos_ - 1;
    if (at_end()) return fail("trailing backslash at end of expression", "");
    char32_t c = pat_[pos_++];
    *is_class = false;
    switch (c) {
      case 'd':
      case 'D':
      case 's':
      case 'S':
      case 'w':
      case 'W':
        *cls = perl_class(c);
        *is_class = true;
        return true;
      case 'a':
        *lit = '\a';
        return true;
      case 'f':
        *lit = '\f';
        return true;
      case 't':
        *lit = '\t';
        return true;
      case 'n':
        *lit = '\n';
        return true;
      case 'r':
        *lit = '\r';
        return true;
      case 'v':
        *lit = '\v';
        return true;
      case 'x':
        return hex_escape(lit, start);
      case 'p':
      case 'P':
        return fail("Unicode class (not supported by vkube)", text(start, pos_ + 1));
      default:
        break;
    }
    if (c == '0') {
      *lit = 0;
      for (int k = 0; k < 2 && peek() >= '0' && peek() <= '7'; ++k)
        *lit = *lit * 8 + (pat_[pos_++] - '0');
      return true;
    }
    bool punct = c < 0x80 && !is_word_char(c);
    if (punct || (in_class && c == '-')) {
      *lit = c;
      return true;
    }
    return fail("invalid escape sequence", text(start, pos_));
  }

  bool hex_escape(char32_t* lit, std::size_t start) {
    uint32_t v = 0;
    if (peek() == '{') {
      ++pos_;
      std::size_t digits = 0;
      while (!at_end() && peek() != '}') {
        int h = peek() < 0x80 ? hex_value(static_cast<char>(peek())) : -1;
        if (h < 0 || ++digits > 8) return fail("invalid escape sequence", text(start, pos_ + 1));
        v = v * 16 + static_cast<uint32_t>(h);
        ++pos_;
      }
      if (at_end() || digits == 0 || v > 0x10FFFF)
        return fail("invalid escape sequence", text(start, pos_));
      ++pos_;
    } else {
      for (int k = 0; k < 2; ++k) {
        int h = peek() < 0x80 ? hex_value(static_cast<char>(peek())) : -1;
        if (h < 0) return fail("invalid escape sequence", text(start, pos_ + 1));
        v = v * 16 + static_cast<uint32_t>(h);
        ++pos_;
      }
    }
    *lit = v;
    return true;
  }

  bool escape(RegexNode* out, const Flags& flags) {
    char32_t c = peek();
    if (c == 'b' || c == 'B' || c == 'A' || c == 'z') {
      ++pos_;
      *out = assert_node(c == 'b'   ? RegexAssert::kWordBoundary
                         : c == 'B' ? RegexAssert::kNotWordBoundary
                         : c == 'A' ? RegexAssert::kBeginText
                                    : RegexAssert::kEndText);
      return true;
    }
    if (c == 'Q') return quoted(out, flags);
    char32_t lit = 0;
    RegexClass cls;
    bool is_class = false;
    if (!escape_char(&lit, &cls, &is_class, false)) return false;
    *out = is_class ? class_node(std::move(cls), flags) : char_node(lit, flags);
    return true;
  }

  // \Q...\E: literal text.
  bool quoted(RegexNode* out, const Flags& flags) {
    ++pos_;
    out->kind = RegexNode::Kind::kConcat;
    while (!at_end() && !(peek() == '\\' && peek(1) == 'E'))
      out->subs.push_back(char_node(pat_[pos_++], flags));
    if (!at_end()) pos_ += 2;
    return true;
  }

  bool char_class(RegexNode* out, const Flags& flags) {
    std::size_t start = pos_ - 1;
    RegexClass cls;
    if (peek() == '^') {
      cls.negated = true;
      ++pos_;
    }
    bool first = true;
    for (;;) {
      if (at_end()) return fail("missing closing ]", text(start, pat_.size()));
      if (peek() == ']' && !first) break;
      first = false;
      if (!class_item(&cls)) return false;
    }
    ++pos_;
    *out = class_node(std::move(cls), flags);
    return true;
  }

  bool class_item(RegexClass* cls) {
    if (peek() == '[' && peek(1) == ':') {
      std::size_t close = pos_ + 2;
      while (close + 1 < pat_.size() && !(pat_[close] == ':' && pat_[close + 1] == ']')) ++close;
      if (close + 1 < pat_.size()) {
        std::string name = text(pos_ + 2, close);
        bool negate = !name.empty() && name[0] == '^';
        RegexClass posix;
        if (!posix_class(negate ? std::string_view(name).substr(1) : name, &posix)) {
          return fail("invalid character class range", text(pos_, close + 2));
        }
        posix.negated = negate;
        cls->add_class(posix);
        pos_ = close + 2;
        return true;
      }
    }
    std::size_t item_start = pos_;
    char32_t lo = 0;
    bool is_class = false;
    if (!class_char(&lo, cls, &is_class)) return false;
    if (is_class) return true;
    char32_t hi = lo;
    if (peek() == '-' && peek(1) != ']' && peek(1) != kNoChar) {
      ++pos_;
      if (!class_char(&hi, cls, &is_class)) return false;
      if (is_class || hi < lo) return fail("invalid character class range", text(item_start, pos_));
    }
    cls->add(lo, hi);
    return true;
  }

  // One class member character (or a \d-style class, added to `cls` directly).
  bool class_char(char32_t* c, RegexClass* cls, bool* is_class) {
    *is_class = false;
    char32_t ch = pat_[pos_++];
    if (ch != '\\') {
      *c = ch;
      return true;
    }
    RegexClass perl;
    if (!escape_char(c, &perl, is_class, true)) return false;
    if (*is_class) cls->add_class(perl);
    return true;
  }

  std::string_view source_;
  std::vector<char32_t> pat_;
  std::size_t pos_ = 0;
  std::vector<RegexClass>* classes_;
  std::string error_;
  bool last_was_repeat_ = false;
  std::size_t repeat_start_ = 0;
};

}  // namespace

bool parse_regex(std::string_view pattern, RegexNode* out, std::vector<RegexClass>* classes,
                 std::string* error) {
  return RegexParser(pattern, classes).parse(out, error);
}

}  // namespace vkube::cel::re2_detail
