// CEL lexer: cel-spec's tokens (identifiers and keywords, int/uint/double literals, the string
// and bytes literal forms with their escapes, punctuation), comments and whitespace skipped.
// Errors read as ANTLR's in cel-go ("Syntax error: token recognition error at: '#'").
#include <charconv>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel::detail {
namespace {

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  // All tokens, ending with kEof; false with `issue` set on the first bad token.
  bool run(std::vector<Token>* out, Issue* issue) {
    for (;;) {
      skip_space_and_comments();
      Token t;
      t.offset = static_cast<int>(pos_);
      if (pos_ >= src_.size()) {
        t.end = t.offset;
        out->push_back(std::move(t));
        return true;
      }
      if (!next(&t)) {
        *issue = issue_;
        return false;
      }
      t.end = static_cast<int>(pos_);
      out->push_back(std::move(t));
    }
  }

 private:
  char at(std::size_t i) const { return i < src_.size() ? src_[i] : '\0'; }

  void skip_space_and_comments() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
        ++pos_;
      } else if (c == '/' && at(pos_ + 1) == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  bool fail(std::size_t at_offset, std::string message) {
    issue_ = {static_cast<int>(at_offset), "Syntax error: " + std::move(message)};
    return false;
  }

  bool recognition_error(std::size_t start) {
    std::size_t end = start + 1;
    while (end < src_.size() && src_[end] != '\n' && end - start < 40) ++end;
    if (end > start + 1) end = start + 1;  // ANTLR names the offending character
    return fail(start, "token recognition error at: '" +
                           std::string(src_.substr(start, end - start)) + "'");
  }

  bool next(Token* t) {
    char c = src_[pos_];
    if (is_digit(c) || (c == '.' && is_digit(at(pos_ + 1)))) return lex_number(t);
    if (string_prefix_length() >= 0) return lex_string(t);
    if (is_ident_start(c)) return lex_ident(t);
    return lex_punct(t);
  }

  bool lex_ident(Token* t) {
    std::size_t start = pos_;
    while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
    t->text = std::string(src_.substr(start, pos_ - start));
    static const std::unordered_map<std::string_view, Tok> kKeywords = {
        {"true", Tok::kTrue}, {"false", Tok::kFalse}, {"null", Tok::kNull}, {"in", Tok::kIn}};
    auto it = kKeywords.find(t->text);
    t->kind = it == kKeywords.end() ? Tok::kIdent : it->second;
    return true;
  }

  bool lex_punct(Token* t) {
    struct Punct {
      std::string_view text;
      Tok tok;
    };
    static constexpr Punct kPuncts[] = {
        {"==", Tok::kEq},      {"!=", Tok::kNe},      {"<=", Tok::kLe},    {">=", Tok::kGe},
        {"&&", Tok::kAnd},     {"||", Tok::kOr},      {"(", Tok::kLParen}, {")", Tok::kRParen},
        {"[", Tok::kLBracket}, {"]", Tok::kRBracket}, {"{", Tok::kLBrace}, {"}", Tok::kRBrace},
        {".", Tok::kDot},      {",", Tok::kComma},    {":", Tok::kColon},  {"?", Tok::kQuestion},
        {"+", Tok::kPlus},     {"-", Tok::kMinus},    {"*", Tok::kStar},   {"/", Tok::kSlash},
        {"%", Tok::kPercent},  {"!", Tok::kNot},      {"<", Tok::kLt},     {">", Tok::kGt},
    };
    std::string_view rest = src_.substr(pos_);
    for (const auto& p : kPuncts) {
      if (rest.substr(0, p.text.size()) == p.text) {
        t->kind = p.tok;
        pos_ += p.text.size();
        return true;
      }
    }
    return recognition_error(pos_);
  }

  bool lex_number(Token* t) {
    std::size_t start = pos_;
    if (src_[pos_] == '0' && (at(pos_ + 1) == 'x' || at(pos_ + 1) == 'X') &&
        hex_value(at(pos_ + 2)) >= 0) {
      return lex_hex(t);
    }
    bool is_double = false;
    while (is_digit(at(pos_))) ++pos_;
    if (at(pos_) == '.' && is_digit(at(pos_ + 1))) {
      is_double = true;
      ++pos_;
      while (is_digit(at(pos_))) ++pos_;
    }
    if ((at(pos_) == 'e' || at(pos_) == 'E') &&
        (is_digit(at(pos_ + 1)) ||
         ((at(pos_ + 1) == '+' || at(pos_ + 1) == '-') && is_digit(at(pos_ + 2))))) {
      is_double = true;
      pos_ += 2;
      while (is_digit(at(pos_))) ++pos_;
    }
    std::string_view text = src_.substr(start, pos_ - start);
    if (is_double) {
      t->kind = Tok::kDouble;
      std::from_chars(text.data(), text.data() + text.size(), t->d);
      return true;
    }
    auto r = std::from_chars(text.data(), text.data() + text.size(), t->u);
    t->overflow = r.ec != std::errc();
    t->kind = Tok::kInt;
    if (at(pos_) == 'u' || at(pos_) == 'U') {
      ++pos_;
      t->kind = Tok::kUint;
    }
    return true;
  }

  bool lex_hex(Token* t) {
    pos_ += 2;
    std::size_t start = pos_;
    while (hex_value(at(pos_)) >= 0) ++pos_;
    std::string_view text = src_.substr(start, pos_ - start);
    auto r = std::from_chars(text.data(), text.data() + text.size(), t->u, 16);
    t->overflow = r.ec != std::errc();
    t->kind = Tok::kInt;
    if (at(pos_) == 'u' || at(pos_) == 'U') {
      ++pos_;
      t->kind = Tok::kUint;
    }
    return true;
  }

  // Length of an r/b prefix (0..2) directly followed by a quote, or -1.
  int string_prefix_length() const {
    int n = 0;
    bool raw = false;
    bool bytes = false;
    for (; n < 2; ++n) {
      char c = at(pos_ + n);
      if ((c == 'r' || c == 'R') && !raw) {
        raw = true;
      } else if ((c == 'b' || c == 'B') && !bytes) {
        bytes = true;
      } else {
        break;
      }
    }
    char q = at(pos_ + n);
    return q == '"' || q == '\'' ? n : -1;
  }

  bool lex_string(Token* t) {
    std::size_t start = pos_;
    int prefix = string_prefix_length();
    bool raw = false;
    bool bytes = false;
    for (int i = 0; i < prefix; ++i) {
      char c = src_[pos_ + i];
      raw = raw || c == 'r' || c == 'R';
      bytes = bytes || c == 'b' || c == 'B';
    }
    pos_ += prefix;
    char q = src_[pos_];
    bool triple = at(pos_ + 1) == q && at(pos_ + 2) == q;
    std::string delim(triple ? 3 : 1, q);
    pos_ += delim.size();
    std::size_t body = pos_;
    for (;;) {
      if (pos_ >= src_.size()) return recognition_error(start);
      if (src_.substr(pos_, delim.size()) == delim) break;
      char c = src_[pos_];
      if (!triple && (c == '\n' || c == '\r')) return recognition_error(start);
      pos_ += (c == '\\' && !raw && pos_ + 1 < src_.size()) ? 2 : 1;
    }
    std::string_view content = src_.substr(body, pos_ - body);
    pos_ += delim.size();
    t->kind = bytes ? Tok::kBytes : Tok::kString;
    if (raw) {
      t->text = std::string(content);
      return true;
    }
    std::string err;
    if (!unescape(content, bytes, &t->text, &err)) return fail(start, err);
    return true;
  }

  static bool read_hex(std::string_view s, std::size_t* i, int digits, uint32_t* out) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      int h = *i < s.size() ? hex_value(s[*i]) : -1;
      if (h < 0) return false;
      v = v * 16 + static_cast<uint32_t>(h);
      ++*i;
    }
    *out = v;
    return true;
  }

  // Decodes cel-spec escapes; in bytes literals \x and octal escapes are raw bytes.
  static bool unescape(std::string_view s, bool bytes, std::string* out, std::string* err) {
    for (std::size_t i = 0; i < s.size();) {
      if (s[i] != '\\') {
        out->push_back(s[i++]);
        continue;
      }
      if (!unescape_one(s, &i, bytes, out)) {
        *err = "invalid escape sequence in literal";
        return false;
      }
    }
    return true;
  }

  static bool unescape_one(std::string_view s, std::size_t* i, bool bytes, std::string* out) {
    ++*i;
    if (*i >= s.size()) return false;
    char c = s[(*i)++];
    switch (c) {
      case 'a':
        out->push_back('\a');
        return true;
      case 'b':
        out->push_back('\b');
        return true;
      case 'f':
        out->push_back('\f');
        return true;
      case 'n':
        out->push_back('\n');
        return true;
      case 'r':
        out->push_back('\r');
        return true;
      case 't':
        out->push_back('\t');
        return true;
      case 'v':
        out->push_back('\v');
        return true;
      case '\\':
      case '?':
      case '"':
      case '\'':
      case '`':
        out->push_back(c);
        return true;
      default:
        break;
    }
    uint32_t v = 0;
    if (c == 'x' || c == 'X') {
      if (!read_hex(s, i, 2, &v)) return false;
    } else if (c == 'u' || c == 'U') {
      if (bytes || !read_hex(s, i, c == 'u' ? 4 : 8, &v)) return false;
      if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return false;
    } else if (c >= '0' && c <= '3') {
      v = static_cast<uint32_t>(c - '0');
      for (int k = 0; k < 2; ++k) {
        if (*i >= s.size() || s[*i] < '0' || s[*i] > '7') return false;
        v = v * 8 + static_cast<uint32_t>(s[(*i)++] - '0');
      }
    } else {
      return false;
    }
    if (bytes) {
      out->push_back(static_cast<char>(v));
    } else {
      append_utf8(*out, static_cast<char32_t>(v));
    }
    return true;
  }

  std::string_view src_;
  std::size_t pos_ = 0;
  Issue issue_;
};

}  // namespace

bool lex(std::string_view src, std::vector<Token>* out, Issue* issue) {
  return Lexer(src).run(out, issue);
}

}  // namespace vkube::cel::detail
