// CEL front end: a lexer and recursive-descent parser for cel-spec's grammar, macro expansion
// (has, all, exists, exists_one, map, filter) and name resolution against the declarations a
// CRD rule sees (self, oldSelf, the standard and kube function libraries). Errors are worded and
// located as cel-go reports them ("ERROR: <input>:1:5: ..." with the source line and a caret).
#include <algorithm>
#include <charconv>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "cel.h"

namespace vkube::apiserver::crd::cel {
namespace detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Lexer

enum class Tok : uint8_t {
  kEof,
  kIdent,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kTrue,
  kFalse,
  kNull,
  kIn,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kDot,
  kComma,
  kColon,
  kQuestion,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kPercent,
  kNot,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
};

struct Token {
  Tok kind = Tok::kEof;
  int offset = 0;
  int end = 0;
  std::string text;  // identifier name; decoded string or bytes literal
  uint64_t u = 0;    // int/uint literal magnitude
  double d = 0;
  bool overflow = false;  // the integer literal does not fit 64 bits
};

// A compile error: where, and cel-go's message.
struct Issue {
  int offset = 0;
  std::string message;
};

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

// ---------------------------------------------------------------------------------------------
// Parser

using NodePtr = std::unique_ptr<Node>;

constexpr std::string_view kPrimaryExpectation =
    "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
    "STRING, BYTES, IDENTIFIER}";

NodePtr make_node(NodeKind kind, int offset) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  n->offset = offset;
  return n;
}

class Parser {
 public:
  Parser(std::string_view src, std::vector<Token> toks) : src_(src), toks_(std::move(toks)) {}

  NodePtr parse(Issue* issue) {
    NodePtr root = expr();
    if (root && peek().kind != Tok::kEof) {
      mismatched(peek(), "<EOF>");
      root.reset();
    }
    if (!root) *issue = issue_;
    return root;
  }

 private:
  const Token& peek(std::size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& advance() { return toks_[std::min(pos_++, toks_.size() - 1)]; }
  bool accept(Tok kind) {
    if (peek().kind != kind) return false;
    ++pos_;
    return true;
  }

  std::string token_text(const Token& t) const {
    if (t.kind == Tok::kEof) return "<EOF>";
    return std::string(src_.substr(t.offset, t.end - t.offset));
  }

  NodePtr fail(int offset, std::string message) {
    if (issue_.message.empty()) issue_ = {offset, std::move(message)};
    return nullptr;
  }
  NodePtr mismatched(const Token& t, std::string_view expecting) {
    return fail(t.offset, "Syntax error: mismatched input '" + token_text(t) + "' expecting " +
                              std::string(expecting));
  }
  bool expect(Tok kind, std::string_view spelled) {
    if (accept(kind)) return true;
    mismatched(peek(), spelled);
    return false;
  }

  // Sets the subtree height; refuses trees deeper than kMaxAstDepth.
  NodePtr finish(NodePtr n) {
    if (!n) return n;
    int depth = 0;
    for (const auto& a : n->args) depth = std::max(depth, a->depth);
    n->depth = depth + 1;
    if (n->depth > kMaxAstDepth) {
      return fail(n->offset,
                  "expression recursion limit exceeded: " + std::to_string(kMaxAstDepth));
    }
    return n;
  }

  NodePtr binary(NodeKind kind, Fn fn, std::string_view name, int offset, NodePtr a, NodePtr b) {
    auto n = make_node(kind, offset);
    n->fn = fn;
    n->name = std::string(name);
    n->args.push_back(std::move(a));
    n->args.push_back(std::move(b));
    return finish(std::move(n));
  }

  NodePtr expr() {
    if (++nesting_ > kMaxExpressionNesting) {
      return fail(peek().offset,
                  "expression recursion limit exceeded: " + std::to_string(kMaxExpressionNesting));
    }
    NodePtr cond = conditional_or();
    if (cond && peek().kind == Tok::kQuestion) {
      int offset = advance().offset;
      NodePtr yes = conditional_or();
      if (!yes || !expect(Tok::kColon, "':'")) return nullptr;
      NodePtr no = expr();
      if (!no) return nullptr;
      auto n = make_node(NodeKind::kCond, offset);
      n->args.push_back(std::move(cond));
      n->args.push_back(std::move(yes));
      n->args.push_back(std::move(no));
      cond = finish(std::move(n));
    }
    --nesting_;
    return cond;
  }

  // && and || chains become balanced trees, as cel-go builds them (same meaning: both are
  // commutative in CEL), so long chains stay shallow.
  NodePtr balance(NodeKind kind, std::vector<NodePtr>& terms, std::vector<int>& offsets,
                  std::size_t lo, std::size_t hi) {
    if (hi - lo == 1) return std::move(terms[lo]);
    std::size_t mid = (lo + hi) / 2;
    NodePtr left = balance(kind, terms, offsets, lo, mid);
    NodePtr right = balance(kind, terms, offsets, mid, hi);
    if (!left || !right) return nullptr;
    return binary(kind, Fn::kNone, kind == NodeKind::kAnd ? "_&&_" : "_||_", offsets[mid - 1],
                  std::move(left), std::move(right));
  }

  NodePtr logical_chain(NodeKind kind, Tok op, NodePtr (Parser::*operand)()) {
    std::vector<NodePtr> terms;
    std::vector<int> offsets;
    NodePtr first = (this->*operand)();
    if (!first) return nullptr;
    terms.push_back(std::move(first));
    while (peek().kind == op) {
      offsets.push_back(advance().offset);
      NodePtr next = (this->*operand)();
      if (!next) return nullptr;
      terms.push_back(std::move(next));
    }
    return balance(kind, terms, offsets, 0, terms.size());
  }

  NodePtr conditional_or() {
    return logical_chain(NodeKind::kOr, Tok::kOr, &Parser::conditional_and);
  }
  NodePtr conditional_and() { return logical_chain(NodeKind::kAnd, Tok::kAnd, &Parser::relation); }

  NodePtr relation() {
    struct Op {
      Tok tok;
      Fn fn;
      std::string_view name;
    };
    static constexpr Op kOps[] = {
        {Tok::kLt, Fn::kLt, "_<_"},  {Tok::kLe, Fn::kLe, "_<=_"}, {Tok::kGt, Fn::kGt, "_>_"},
        {Tok::kGe, Fn::kGe, "_>=_"}, {Tok::kEq, Fn::kEq, "_==_"}, {Tok::kNe, Fn::kNe, "_!=_"},
        {Tok::kIn, Fn::kIn, "@in"},
    };
    return left_assoc(kOps, &Parser::addition);
  }

  NodePtr addition() {
    struct Op {
      Tok tok;
      Fn fn;
      std::string_view name;
    };
    static constexpr Op kOps[] = {{Tok::kPlus, Fn::kAdd, "_+_"}, {Tok::kMinus, Fn::kSub, "_-_"}};
    return left_assoc(kOps, &Parser::multiplication);
  }

  NodePtr multiplication() {
    struct Op {
      Tok tok;
      Fn fn;
      std::string_view name;
    };
    static constexpr Op kOps[] = {{Tok::kStar, Fn::kMul, "_*_"},
                                  {Tok::kSlash, Fn::kDiv, "_/_"},
                                  {Tok::kPercent, Fn::kMod, "_%_"}};
    return left_assoc(kOps, &Parser::unary);
  }

  template <typename Ops>
  NodePtr left_assoc(const Ops& ops, NodePtr (Parser::*operand)()) {
    NodePtr left = (this->*operand)();
    while (left) {
      const auto* op = std::find_if(std::begin(ops), std::end(ops),
                                    [&](const auto& o) { return o.tok == peek().kind; });
      if (op == std::end(ops)) break;
      int offset = advance().offset;
      NodePtr right = (this->*operand)();
      if (!right) return nullptr;
      left = binary(NodeKind::kCall, op->fn, op->name, offset, std::move(left), std::move(right));
    }
    return left;
  }

  NodePtr unary() {
    Tok op = peek().kind;
    if (op != Tok::kNot && op != Tok::kMinus) return member(nullptr);
    int offset = peek().offset;
    int count = 0;
    while (accept(op)) ++count;
    NodePtr operand;
    if (op == Tok::kMinus && (peek().kind == Tok::kInt || peek().kind == Tok::kDouble)) {
      operand = member(number_literal(advance(), true));  // the literal takes one minus
      --count;
    } else {
      operand = member(nullptr);
    }
    if (!operand || count % 2 == 0) return operand;
    auto n = make_node(op == Tok::kNot ? NodeKind::kNot : NodeKind::kNeg, offset);
    n->name = op == Tok::kNot ? "!_" : "-_";
    n->args.push_back(std::move(operand));
    return finish(std::move(n));
  }

  NodePtr number_literal(const Token& t, bool negative) {
    auto n = make_node(NodeKind::kLiteral, t.offset);
    if (t.kind == Tok::kDouble) {
      n->lit.kind = LitKind::kDouble;
      n->lit.d = negative ? -t.d : t.d;
      return n;
    }
    constexpr uint64_t kMaxInt = static_cast<uint64_t>(INT64_MAX);
    if (t.overflow || t.u > kMaxInt + (negative ? 1 : 0)) {
      return fail(t.offset, "invalid int literal");
    }
    n->lit.kind = LitKind::kInt;
    n->lit.i = negative ? static_cast<int64_t>(0 - t.u) : static_cast<int64_t>(t.u);
    return n;
  }

  // Postfix selections, calls and indexes after a primary (`base`, or parsed here).
  NodePtr member(NodePtr base) {
    if (!base) base = primary();
    while (base) {
      if (peek().kind == Tok::kDot) {
        base = selection(std::move(base));
      } else if (peek().kind == Tok::kLBracket) {
        int offset = advance().offset;
        if (peek().kind == Tok::kQuestion)
          return fail(offset,
                      "unsupported syntax '[?' (optional values are not supported by vkube)");
        NodePtr index = expr();
        if (!index || !expect(Tok::kRBracket, "']'")) return nullptr;
        auto n = make_node(NodeKind::kIndex, offset);
        n->name = "_[_]";
        n->args.push_back(std::move(base));
        n->args.push_back(std::move(index));
        base = finish(std::move(n));
      } else {
        break;
      }
    }
    return base;
  }

  NodePtr selection(NodePtr base) {
    int offset = advance().offset;
    if (peek().kind == Tok::kQuestion)
      return fail(offset, "unsupported syntax '.?' (optional values are not supported by vkube)");
    if (peek().kind != Tok::kIdent) return mismatched(peek(), "IDENTIFIER");
    const Token& id = advance();
    if (peek().kind == Tok::kLParen) {
      advance();
      std::vector<NodePtr> args;
      if (!expr_list(Tok::kRParen, "')'", &args)) return nullptr;
      return member_call(std::move(base), id, std::move(args));
    }
    auto n = make_node(NodeKind::kSelect, id.offset);
    n->name = id.text;
    n->args.push_back(std::move(base));
    return finish(std::move(n));
  }

  // Comma-separated expressions up to `close` (a trailing comma is allowed).
  bool expr_list(Tok close, std::string_view spelled, std::vector<NodePtr>* out) {
    while (!accept(close)) {
      if (peek().kind == Tok::kQuestion) {
        fail(peek().offset, "unsupported syntax '?' (optional values are not supported by vkube)");
        return false;
      }
      NodePtr e = expr();
      if (!e) return false;
      out->push_back(std::move(e));
      if (accept(close)) return true;
      if (!expect(Tok::kComma, std::string("{',', ") + std::string(spelled) + "}")) return false;
    }
    return true;
  }

  NodePtr primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::kDot:
        if (peek(1).kind != Tok::kIdent) return mismatched(peek(1), "IDENTIFIER");
        advance();
        return identifier();
      case Tok::kIdent:
        return identifier();
      case Tok::kLParen: {
        advance();
        NodePtr e = expr();
        if (!e || !expect(Tok::kRParen, "')'")) return nullptr;
        return e;
      }
      case Tok::kLBracket:
        return list_literal();
      case Tok::kLBrace:
        return map_literal();
      default:
        return literal();
    }
  }

  NodePtr literal() {
    const Token& t = peek();
    auto n = make_node(NodeKind::kLiteral, t.offset);
    switch (t.kind) {
      case Tok::kInt:
      case Tok::kDouble:
        return number_literal(advance(), false);
      case Tok::kUint:
        if (t.overflow) return fail(t.offset, "invalid uint literal");
        n->lit.kind = LitKind::kUint;
        n->lit.u = t.u;
        break;
      case Tok::kString:
      case Tok::kBytes:
        n->lit.kind = t.kind == Tok::kString ? LitKind::kString : LitKind::kBytes;
        n->lit.s = t.text;
        break;
      case Tok::kTrue:
      case Tok::kFalse:
        n->lit.kind = LitKind::kBool;
        n->lit.b = t.kind == Tok::kTrue;
        break;
      case Tok::kNull:
        n->lit.kind = LitKind::kNull;
        break;
      default:
        return mismatched(t, kPrimaryExpectation);
    }
    advance();
    return n;
  }

  NodePtr identifier() {
    const Token& id = advance();
    if (peek().kind == Tok::kLBrace) {
      return fail(id.offset,
                  "message construction ('" + id.text + "{...}') is not supported by vkube");
    }
    if (peek().kind != Tok::kLParen) {
      auto n = make_node(NodeKind::kIdent, id.offset);
      n->name = id.text;
      return n;
    }
    advance();
    std::vector<NodePtr> args;
    if (!expr_list(Tok::kRParen, "')'", &args)) return nullptr;
    return global_call(id, std::move(args));
  }

  NodePtr global_call(const Token& id, std::vector<NodePtr> args) {
    if (id.text == "has" && args.size() == 1) {
      if (args[0]->kind != NodeKind::kSelect) {
        return fail(args[0]->offset, "invalid argument to has() macro");
      }
      NodePtr sel = std::move(args[0]);
      sel->kind = NodeKind::kHas;
      return finish(std::move(sel));
    }
    auto n = make_node(NodeKind::kCall, id.offset);
    n->name = id.text;
    n->args = std::move(args);
    return finish(std::move(n));
  }

  static Macro macro_for(std::string_view name, std::size_t nargs) {
    if (nargs == 2) {
      if (name == "all") return Macro::kAll;
      if (name == "exists") return Macro::kExists;
      if (name == "exists_one") return Macro::kExistsOne;
      if (name == "filter") return Macro::kFilter;
    }
    if (name == "map" && (nargs == 2 || nargs == 3)) return Macro::kMap;
    return Macro::kNone;
  }

  NodePtr member_call(NodePtr target, const Token& id, std::vector<NodePtr> args) {
    Macro macro = macro_for(id.text, args.size());
    if (macro != Macro::kNone) {
      if (args[0]->kind != NodeKind::kIdent) {
        return fail(args[0]->offset, "argument must be a simple name");
      }
      auto n = make_node(NodeKind::kComprehension, id.offset);
      n->macro = macro;
      n->name = args[0]->name;
      n->args.push_back(std::move(target));
      for (std::size_t i = 1; i < args.size(); ++i) n->args.push_back(std::move(args[i]));
      return finish(std::move(n));
    }
    auto n = make_node(NodeKind::kCall, id.offset);
    n->name = id.text;
    n->receiver = true;
    n->args.push_back(std::move(target));
    for (auto& a : args) n->args.push_back(std::move(a));
    return finish(std::move(n));
  }

  NodePtr list_literal() {
    auto n = make_node(NodeKind::kList, advance().offset);
    if (++nesting_ > kMaxExpressionNesting) {
      return fail(n->offset,
                  "expression recursion limit exceeded: " + std::to_string(kMaxExpressionNesting));
    }
    if (!expr_list(Tok::kRBracket, "']'", &n->args)) return nullptr;
    --nesting_;
    return finish(std::move(n));
  }

  NodePtr map_literal() {
    auto n = make_node(NodeKind::kMap, advance().offset);
    while (!accept(Tok::kRBrace)) {
      if (peek().kind == Tok::kQuestion)
        return fail(peek().offset,
                    "unsupported syntax '?' (optional values are not supported by vkube)");
      NodePtr key = expr();
      if (!key || !expect(Tok::kColon, "':'")) return nullptr;
      NodePtr value = expr();
      if (!value) return nullptr;
      n->args.push_back(std::move(key));
      n->args.push_back(std::move(value));
      if (accept(Tok::kRBrace)) break;
      if (!expect(Tok::kComma, "{',', '}'}")) return nullptr;
    }
    return finish(std::move(n));
  }

  std::string_view src_;
  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  int nesting_ = 0;
  Issue issue_;
};

// ---------------------------------------------------------------------------------------------
// Name resolution: identifiers, functions and their arities.

struct FnSpec {
  std::string_view name;
  Fn fn;
  int8_t global_min, global_max;  // -1: not callable as a global function
  int8_t member_min, member_max;  // -1: not callable as a method
  std::string_view result;        // the result type, "" when it depends on the arguments
};

constexpr FnSpec kFunctions[] = {
    {"size", Fn::kSize, 1, 1, 0, 0, "int"},
    {"contains", Fn::kContains, -1, -1, 1, 1, "bool"},
    {"startsWith", Fn::kStartsWith, -1, -1, 1, 1, "bool"},
    {"endsWith", Fn::kEndsWith, -1, -1, 1, 1, "bool"},
    {"matches", Fn::kMatches, 2, 2, 1, 1, "bool"},
    {"int", Fn::kToInt, 1, 1, -1, -1, "int"},
    {"uint", Fn::kToUint, 1, 1, -1, -1, "uint"},
    {"double", Fn::kToDouble, 1, 1, -1, -1, "double"},
    {"string", Fn::kToString, 1, 1, -1, -1, "string"},
    {"bool", Fn::kToBool, 1, 1, -1, -1, "bool"},
    {"bytes", Fn::kToBytes, 1, 1, -1, -1, "bytes"},
    {"dyn", Fn::kDyn, 1, 1, -1, -1, ""},
    {"type", Fn::kType, 1, 1, -1, -1, "type"},
    {"lowerAscii", Fn::kLowerAscii, -1, -1, 0, 0, "string"},
    {"upperAscii", Fn::kUpperAscii, -1, -1, 0, 0, "string"},
    {"trim", Fn::kTrim, -1, -1, 0, 0, "string"},
    {"split", Fn::kSplit, -1, -1, 1, 2, "list"},
    {"join", Fn::kJoin, -1, -1, 0, 1, "string"},
    {"indexOf", Fn::kIndexOf, -1, -1, 1, 2, "int"},
    {"lastIndexOf", Fn::kLastIndexOf, -1, -1, 1, 2, "int"},
    {"replace", Fn::kReplace, -1, -1, 2, 3, "string"},
    {"substring", Fn::kSubstring, -1, -1, 1, 2, "string"},
    {"charAt", Fn::kCharAt, -1, -1, 1, 1, "string"},
    {"isSorted", Fn::kIsSorted, -1, -1, 0, 0, "bool"},
    {"sum", Fn::kSum, -1, -1, 0, 0, ""},
    {"min", Fn::kMin, -1, -1, 0, 0, ""},
    {"max", Fn::kMax, -1, -1, 0, 0, ""},
    {"find", Fn::kFind, -1, -1, 1, 1, "string"},
    {"findAll", Fn::kFindAll, -1, -1, 1, 2, "list"},
    {"sets.contains", Fn::kSetsContains, 2, 2, -1, -1, "bool"},
    {"sets.equivalent", Fn::kSetsEquivalent, 2, 2, -1, -1, "bool"},
    {"sets.intersects", Fn::kSetsIntersects, 2, 2, -1, -1, "bool"},
};

// Functions of kube's CEL environment this subset leaves out (quantities, URLs, IPs, CIDRs,
// semvers, durations and timestamps, optionals, format, the math extension, ...): a CRD using
// them gets a clear compile error (a Warning or Invalid for the CRD), not "undeclared reference".
constexpr std::string_view kUnsupportedFunctions =
    " quantity isQuantity url isURL ip isIP cidr isCIDR duration timestamp format semver isSemver"
    " getScheme getHost getHostname getPort getEscapedPath getQuery isGreaterThan isLessThan"
    " compareTo add sub asInteger asApproximateFloat isInteger sign getFullYear getMonth getDate"
    " getDayOfMonth getDayOfWeek getDayOfYear getHours getMinutes getSeconds getMilliseconds"
    " reverse optMap optFlatMap orValue hasValue value or family isUnspecified isLoopback"
    " isLinkLocalMulticast isLinkLocalUnicast isGlobalUnicast containsIP containsCIDR masked"
    " prefixLength major minor patch authorizer serviceAccount path group resource subresource"
    " namespace name check allowed reason errored error transformList transformMap"
    " transformMapEntry sortBy sort distinct flatten slice first last lists.range strings.quote"
    " base64.encode base64.decode math.greatest math.least math.ceil math.floor math.round"
    " math.trunc math.abs math.sign math.isNaN math.isInf math.isFinite math.bitAnd math.bitOr"
    " math.bitXor math.bitNot math.bitShiftLeft math.bitShiftRight optional.of optional.none"
    " optional.ofNonZeroValue ";

bool is_unsupported_function(std::string_view name) {
  return kUnsupportedFunctions.find(" " + std::string(name) + " ") != std::string_view::npos;
}

// Namespaces whose qualified functions are resolved as one name ("sets.contains").
bool is_function_namespace(std::string_view ns) {
  return ns == "sets" || ns == "strings" || ns == "math" || ns == "lists" || ns == "base64" ||
         ns == "optional";
}

const FnSpec* find_function(std::string_view name) {
  for (const auto& f : kFunctions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool is_type_name(std::string_view name) {
  static const std::unordered_set<std::string_view> kTypes = {
      "int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"};
  return kTypes.count(name) != 0;
}

bool is_reserved(std::string_view name) {
  static const std::unordered_set<std::string_view> kReserved = {
      "as",  "break", "const",   "continue",  "else",   "for", "function", "if",   "import",
      "let", "loop",  "package", "namespace", "return", "var", "void",     "while"};
  return kReserved.count(name) != 0;
}

class Resolver {
 public:
  bool run(Node& root, Issue* issue) {
    bool ok = resolve(root);
    if (!ok) *issue = issue_;
    return ok;
  }
  bool uses_old_self() const { return uses_old_self_; }

 private:
  bool fail(int offset, std::string message) {
    issue_ = {offset, std::move(message)};
    return false;
  }

  bool resolve(Node& n) {
    switch (n.kind) {
      case NodeKind::kIdent:
        return resolve_ident(n);
      case NodeKind::kCall:
        return resolve_call(n);
      case NodeKind::kComprehension:
        return resolve_comprehension(n);
      default:
        break;
    }
    for (auto& a : n.args) {
      if (!resolve(*a)) return false;
    }
    return true;
  }

  bool in_scope(std::string_view name) const {
    return std::find(scope_.begin(), scope_.end(), name) != scope_.end();
  }

  bool resolve_ident(Node& n) {
    auto it = std::find(scope_.rbegin(), scope_.rend(), n.name);
    if (it != scope_.rend()) {
      n.slot = static_cast<int>(scope_.rend() - it) - 1;
      return true;
    }
    if (n.name == "self") {
      n.slot = kSlotSelf;
      return true;
    }
    if (n.name == "oldSelf") {
      n.slot = kSlotOldSelf;
      uses_old_self_ = true;
      return true;
    }
    if (is_type_name(n.name)) {
      n.kind = NodeKind::kLiteral;
      n.lit.kind = LitKind::kType;
      n.lit.s = n.name;
      return true;
    }
    if (is_reserved(n.name)) return fail(n.offset, "reserved identifier: " + n.name);
    return fail(n.offset, "undeclared reference to '" + n.name + "' (in container '')");
  }

  // `sets.contains(a, b)` parses as a method of the undeclared identifier `sets`.
  void qualify_namespace_call(Node& n) {
    if (!n.receiver || n.args[0]->kind != NodeKind::kIdent) return;
    const std::string& ns = n.args[0]->name;
    if (!is_function_namespace(ns) || in_scope(ns)) return;
    n.name = ns + "." + n.name;
    n.receiver = false;
    n.args.erase(n.args.begin());
  }

  bool resolve_call(Node& n) {
    if (n.fn == Fn::kNone) qualify_namespace_call(n);
    for (auto& a : n.args) {
      if (!resolve(*a)) return false;
    }
    if (n.fn == Fn::kNone && !bind_function(n)) return false;
    return precompile_regex(n);
  }

  bool bind_function(Node& n) {
    const FnSpec* spec = find_function(n.name);
    if (spec == nullptr) {
      if (is_unsupported_function(n.name)) {
        return fail(n.offset, "function '" + n.name + "' is not supported by vkube");
      }
      return fail(n.offset, "undeclared reference to '" + n.name + "' (in container '')");
    }
    int nargs = static_cast<int>(n.args.size()) - (n.receiver ? 1 : 0);
    int lo = n.receiver ? spec->member_min : spec->global_min;
    int hi = n.receiver ? spec->member_max : spec->global_max;
    if (lo < 0 || nargs < lo || nargs > hi) {
      return fail(n.offset, "found no matching overload for '" + n.name + "' applied to " +
                                std::string(n.receiver ? "a receiver and " : "") +
                                std::to_string(nargs) + " argument(s)");
    }
    n.fn = spec->fn;
    return true;
  }

  bool precompile_regex(Node& n) {
    if (n.fn != Fn::kMatches && n.fn != Fn::kFind && n.fn != Fn::kFindAll) return true;
    const Node& pattern = *n.args[1];
    if (pattern.kind != NodeKind::kLiteral || pattern.lit.kind != LitKind::kString) return true;
    std::string error;
    n.regex = Regex::compile(pattern.lit.s, &error);
    if (!n.regex) return fail(pattern.offset, error);
    return true;
  }

  bool resolve_comprehension(Node& n) {
    if (!resolve(*n.args[0])) return false;
    if (is_reserved(n.name)) return fail(n.offset, "reserved identifier: " + n.name);
    scope_.push_back(n.name);
    n.slot = static_cast<int>(scope_.size()) - 1;
    for (std::size_t i = 1; i < n.args.size(); ++i) {
      if (!resolve(*n.args[i])) return false;
    }
    scope_.pop_back();
    return true;
  }

  std::vector<std::string> scope_;
  bool uses_old_self_ = false;
  Issue issue_;
};

// ---------------------------------------------------------------------------------------------
// The result type, where it shows without data (for "must evaluate to a bool" checks).

std::string literal_type(const Literal& lit) {
  switch (lit.kind) {
    case LitKind::kNull:
      return "null_type";
    case LitKind::kBool:
      return "bool";
    case LitKind::kInt:
      return "int";
    case LitKind::kUint:
      return "uint";
    case LitKind::kDouble:
      return "double";
    case LitKind::kString:
      return "string";
    case LitKind::kBytes:
      return "bytes";
    case LitKind::kType:
      return "type";
  }
  return "";
}

std::string static_type(const Node& n);

std::string call_type(const Node& n) {
  if (n.fn >= Fn::kEq && n.fn <= Fn::kIn) return "bool";
  if (n.fn >= Fn::kAdd && n.fn <= Fn::kMod) {
    std::string a = static_type(*n.args[0]);
    return a == static_type(*n.args[1]) ? a : "";
  }
  for (const auto& f : kFunctions) {
    if (f.fn == n.fn) return std::string(f.result);
  }
  return "";
}

std::string static_type(const Node& n) {
  switch (n.kind) {
    case NodeKind::kLiteral:
      return literal_type(n.lit);
    case NodeKind::kHas:
    case NodeKind::kAnd:
    case NodeKind::kOr:
    case NodeKind::kNot:
      return "bool";
    case NodeKind::kList:
      return "list";
    case NodeKind::kMap:
      return "map";
    case NodeKind::kCall:
      return call_type(n);
    case NodeKind::kComprehension:
      return n.macro == Macro::kMap || n.macro == Macro::kFilter ? "list" : "bool";
    case NodeKind::kCond: {
      std::string a = static_type(*n.args[1]);
      return a == static_type(*n.args[2]) ? a : "";
    }
    default:
      return "";
  }
}

// cel-go's issue text: "ERROR: <input>:L:C: message" and the line with a caret under column C.
std::string format_issue(std::string_view src, const Issue& issue) {
  std::size_t offset = std::min(static_cast<std::size_t>(std::max(issue.offset, 0)), src.size());
  std::size_t line_start = src.rfind('\n', offset == 0 ? std::string_view::npos : offset - 1);
  line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
  int line = 1 + static_cast<int>(std::count(src.begin(), src.begin() + line_start, '\n'));
  int column = 0;
  for (std::size_t i = line_start; i < offset;) {
    decode_utf8(src, &i);
    ++column;
  }
  std::size_t line_end = src.find('\n', line_start);
  if (line_end == std::string_view::npos) line_end = src.size();
  return "ERROR: <input>:" + std::to_string(line) + ":" + std::to_string(column + 1) + ": " +
         issue.message + "\n | " + std::string(src.substr(line_start, line_end - line_start)) +
         "\n | " + std::string(column, '.') + "^";
}

std::size_t count_code_points(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size();) {
    decode_utf8(s, &i);
    ++n;
  }
  return n;
}

std::shared_ptr<const Program> compile_unguarded(std::string_view expr, std::string* error) {
  std::size_t size = count_code_points(expr);
  if (size > kMaxExpressionCodePoints) {
    *error = "expression code point size exceeds limit: size: " + std::to_string(size) +
             ", limit " + std::to_string(kMaxExpressionCodePoints);
    return nullptr;
  }
  std::vector<Token> toks;
  Issue issue;
  if (!Lexer(expr).run(&toks, &issue)) {
    *error = format_issue(expr, issue);
    return nullptr;
  }
  NodePtr root = Parser(expr, std::move(toks)).parse(&issue);
  Resolver resolver;
  if (!root || !resolver.run(*root, &issue)) {
    *error = format_issue(expr, issue);
    return nullptr;
  }
  std::string type = static_type(*root);
  return std::make_shared<const Program>(std::string(expr), std::move(root),
                                         resolver.uses_old_self(), std::move(type));
}

}  // namespace
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// UTF-8 and the regular expression engine (RE2 syntax, as Go's regexp accepts it, matched by a
// Pike VM: time linear in the input, no recursion over the input).

namespace detail {

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

}  // namespace detail

struct detail::Regex::Impl {
  std::vector<RegexInst> prog;
  std::vector<RegexClass> classes;
};

namespace detail {
namespace {

constexpr int kMaxRegexRepeat = 1000;
constexpr int kMaxRegexNesting = 1000;
constexpr std::size_t kMaxRegexProgram = 50000;
constexpr char32_t kNoChar = 0xFFFFFFFF;

bool is_word_char(char32_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
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

// Thompson construction of the Pike VM program.
class RegexCompiler {
 public:
  explicit RegexCompiler(std::vector<RegexInst>* prog) : prog_(prog) {}

  bool emit(const RegexNode& n) {
    if (prog_->size() > kMaxRegexProgram) return false;
    switch (n.kind) {
      case RegexNode::Kind::kEmpty:
        return true;
      case RegexNode::Kind::kChar:
        push({RegexOp::kChar, n.c});
        return true;
      case RegexNode::Kind::kClass:
        push({RegexOp::kClass, 0, n.cls});
        return true;
      case RegexNode::Kind::kAny:
        push({RegexOp::kAny});
        return true;
      case RegexNode::Kind::kAnyNotNL:
        push({RegexOp::kAnyNotNL});
        return true;
      case RegexNode::Kind::kAssert: {
        RegexInst inst{RegexOp::kAssert};
        inst.assert_kind = n.assert_kind;
        push(inst);
        return true;
      }
      case RegexNode::Kind::kConcat:
        for (const auto& s : n.subs) {
          if (!emit(s)) return false;
        }
        return true;
      case RegexNode::Kind::kAlt:
        return emit_alt(n);
      case RegexNode::Kind::kRepeat:
        return emit_repeat(n);
    }
    return false;
  }

 private:
  int push(RegexInst inst) {
    prog_->push_back(inst);
    return static_cast<int>(prog_->size()) - 1;
  }
  int pc() const { return static_cast<int>(prog_->size()); }

  bool emit_alt(const RegexNode& n) {
    std::vector<int> jumps;
    for (std::size_t k = 0; k + 1 < n.subs.size(); ++k) {
      int split = push({RegexOp::kSplit, 0, 0, 0});
      (*prog_)[split].x = pc();
      if (!emit(n.subs[k])) return false;
      jumps.push_back(push({RegexOp::kJmp}));
      (*prog_)[split].y = pc();
    }
    if (!emit(n.subs.back())) return false;
    for (int j : jumps) (*prog_)[j].x = pc();
    return true;
  }

  // Split whose preferred branch is the body when greedy.
  int split_here(bool greedy) {
    int split = push({RegexOp::kSplit});
    if (greedy)
      (*prog_)[split].x = split + 1;
    else
      (*prog_)[split].y = split + 1;
    return split;
  }
  void patch_exit(int split, bool greedy) {
    if (greedy)
      (*prog_)[split].y = pc();
    else
      (*prog_)[split].x = pc();
  }

  bool emit_repeat(const RegexNode& n) {
    const RegexNode& body = n.subs[0];
    for (int k = 0; k < n.min; ++k) {
      if (!emit(body)) return false;
    }
    if (n.max < 0) {
      int split = split_here(n.greedy);
      if (!emit(body)) return false;
      push({RegexOp::kJmp, 0, split});
      patch_exit(split, n.greedy);
      return true;
    }
    std::vector<int> splits;
    for (int k = n.min; k < n.max; ++k) {
      splits.push_back(split_here(n.greedy));
      if (!emit(body)) return false;
    }
    for (int s : splits) patch_exit(s, n.greedy);
    return true;
  }

  std::vector<RegexInst>* prog_;
};

// The Pike VM: all threads advance together over the input, one code point at a time.
class RegexVm {
 public:
  RegexVm(const Regex::Impl& re, std::string_view text)
      : re_(re), text_(text), mark_(re.prog.size(), 0) {}

  // Leftmost-first match at or after `from`; `first_only` stops at any match (for search()).
  bool run(std::size_t from, bool first_only, std::size_t* begin, std::size_t* end) {
    std::vector<Thread> clist, nlist;
    bool matched = false;
    std::size_t pos = from;
    char32_t prev = char_before(from);
    for (;;) {
      std::size_t len = 0;
      char32_t cur = char_at(pos, &len);
      if (!matched) add(clist, 0, pos, prev, cur);
      if (clist.empty()) break;
      ++gen_;
      std::size_t next = pos + len;
      char32_t after = cur == kNoChar ? kNoChar : char_at(next, nullptr);
      for (const Thread& t : clist) {
        const RegexInst& inst = re_.prog[t.pc];
        if (inst.op == RegexOp::kMatch) {
          matched = true;
          *begin = t.start;
          *end = pos;
          if (first_only) {
            stopped_at_ = pos;
            return true;
          }
          break;  // lower-priority threads lose
        }
        if (cur != kNoChar && consumes(inst, cur)) add(nlist, t.pc + 1, t.start, cur, after);
      }
      if (cur == kNoChar) break;
      std::swap(clist, nlist);
      nlist.clear();
      prev = cur;
      pos = next;
    }
    stopped_at_ = pos;
    return matched;
  }

  // The input position where the last run stopped.
  std::size_t stopped_at() const { return stopped_at_; }

 private:
  struct Thread {
    int pc;
    std::size_t start;
  };

  char32_t char_at(std::size_t pos, std::size_t* len) const {
    if (pos >= text_.size()) {
      if (len != nullptr) *len = 0;
      return kNoChar;
    }
    std::size_t i = pos;
    char32_t c = decode_utf8(text_, &i);
    if (len != nullptr) *len = i - pos;
    return c;
  }

  char32_t char_before(std::size_t pos) const {
    if (pos == 0) return kNoChar;
    std::size_t start = pos - 1;
    while (start > 0 && pos - start < 4 &&
           (static_cast<unsigned char>(text_[start]) & 0xC0) == 0x80)
      --start;
    std::size_t i = start;
    char32_t c = decode_utf8(text_, &i);
    return i == pos ? c : 0xFFFD;
  }

  bool consumes(const RegexInst& inst, char32_t c) const {
    switch (inst.op) {
      case RegexOp::kChar:
        return inst.c == c;
      case RegexOp::kClass:
        return re_.classes[inst.x].contains(c);
      case RegexOp::kAny:
        return true;
      case RegexOp::kAnyNotNL:
        return c != '\n';
      default:
        return false;
    }
  }

  static bool holds(RegexAssert a, char32_t prev, char32_t cur) {
    switch (a) {
      case RegexAssert::kBeginLine:
        return prev == kNoChar || prev == '\n';
      case RegexAssert::kEndLine:
        return cur == kNoChar || cur == '\n';
      case RegexAssert::kBeginText:
        return prev == kNoChar;
      case RegexAssert::kEndText:
        return cur == kNoChar;
      case RegexAssert::kWordBoundary:
      case RegexAssert::kNotWordBoundary: {
        bool boundary =
            (prev != kNoChar && is_word_char(prev)) != (cur != kNoChar && is_word_char(cur));
        return boundary == (a == RegexAssert::kWordBoundary);
      }
    }
    return false;
  }

  // Adds the thread at `pc` and everything reachable without consuming input, in priority order.
  void add(std::vector<Thread>& list, int pc, std::size_t start, char32_t prev, char32_t cur) {
    stack_.clear();
    stack_.push_back(pc);
    while (!stack_.empty()) {
      int p = stack_.back();
      stack_.pop_back();
      if (mark_[p] == gen_) continue;
      mark_[p] = gen_;
      const RegexInst& inst = re_.prog[p];
      switch (inst.op) {
        case RegexOp::kJmp:
          stack_.push_back(inst.x);
          break;
        case RegexOp::kSplit:
          stack_.push_back(inst.y);
          stack_.push_back(inst.x);
          break;
        case RegexOp::kAssert:
          if (holds(inst.assert_kind, prev, cur)) stack_.push_back(p + 1);
          break;
        default:
          list.push_back({p, start});
      }
    }
  }

  const Regex::Impl& re_;
  std::string_view text_;
  std::vector<uint32_t> mark_;
  uint32_t gen_ = 1;
  std::vector<int> stack_;
  std::size_t stopped_at_ = 0;
};

}  // namespace

Regex::Regex(std::unique_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Regex::~Regex() = default;

std::shared_ptr<const Regex> Regex::compile(std::string_view pattern, std::string* error) {
  auto impl = std::make_unique<Impl>();
  RegexNode root;
  if (!RegexParser(pattern, &impl->classes).parse(&root, error)) return nullptr;
  if (!RegexCompiler(&impl->prog).emit(root) || impl->prog.size() > kMaxRegexProgram) {
    *error = "error parsing regexp: expression too large";
    return nullptr;
  }
  impl->prog.push_back({RegexOp::kMatch});
  return std::make_shared<const Regex>(std::move(impl));
}

bool Regex::find(std::string_view text, std::size_t from, std::size_t* begin, std::size_t* end,
                 std::size_t* scanned) const {
  RegexVm vm(*impl_, text);
  bool found = vm.run(from, false, begin, end);
  if (scanned != nullptr) *scanned = vm.stopped_at() - from;
  return found;
}

bool Regex::search(std::string_view text) const {
  std::size_t b = 0, e = 0;
  return RegexVm(*impl_, text).run(0, true, &b, &e);
}

std::size_t Regex::program_size() const {
  return impl_->prog.size();
}

}  // namespace detail

Program::Program(std::string source, std::unique_ptr<detail::Node> root, bool uses_old_self,
                 std::string result_type)
    : source_(std::move(source)),
      root_(std::move(root)),
      uses_old_self_(uses_old_self),
      result_type_(std::move(result_type)) {}

std::shared_ptr<const Program> compile(std::string_view expr, std::string* error) {
  std::string scratch;
  if (error == nullptr) error = &scratch;
  error->clear();
  try {
    return detail::compile_unguarded(expr, error);
  } catch (const std::exception& e) {
    *error = std::string("compilation failed: ") + e.what();
    return nullptr;
  }
}

std::shared_ptr<const Program> compile_cached(std::string_view expr, std::string* error) {
  struct Entry {
    std::shared_ptr<const Program> program;
    std::string error;
  };
  constexpr std::size_t kMaxEntries = 8192;
  static std::mutex mu;
  static std::unordered_map<std::string, Entry> cache;
  std::string key(expr);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      if (error != nullptr) *error = it->second.error;
      return it->second.program;
    }
  }
  Entry entry;
  entry.program = compile(expr, &entry.error);
  if (error != nullptr) *error = entry.error;
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kMaxEntries) cache.clear();
  cache.emplace(std::move(key), entry);
  return entry.program;
}

}  // namespace vkube::apiserver::crd::cel
