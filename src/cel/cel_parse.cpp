// CEL parser: recursive descent over cel-spec's grammar to an AST (Node), with the has() and
// comprehension macros (all, exists, exists_one, map, filter) expanded and && / || chains built
// balanced. Nesting and depth are bounded (kMaxExpressionNesting, kMaxAstDepth); syntax errors
// are worded as cel-go's ("Syntax error: mismatched input ')' expecting ...").
#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel::detail {
namespace {

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
        const bool optional = accept(Tok::kQuestion);  // x[?k]
        NodePtr index = expr();
        if (!index || !expect(Tok::kRBracket, "']'")) return nullptr;
        auto n = make_node(NodeKind::kIndex, offset);
        n->name = optional ? "_[?_]" : "_[_]";
        n->optional = optional;
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
    const int dot = advance().offset;              // cel-go locates a selection at its '.'
    const bool optional = accept(Tok::kQuestion);  // x.?field
    if (peek().kind != Tok::kIdent) return mismatched(peek(), "IDENTIFIER");
    const Token& id = advance();
    if (optional) {
      auto n = make_node(NodeKind::kSelect, dot);
      n->name = id.text;
      n->optional = true;
      n->args.push_back(std::move(base));
      return finish(std::move(n));
    }
    if (peek().kind == Tok::kLParen) {
      advance();
      std::vector<NodePtr> args;
      if (!expr_list(Tok::kRParen, "')'", &args)) return nullptr;
      return member_call(std::move(base), id, std::move(args));
    }
    auto n = make_node(NodeKind::kSelect, dot);
    n->name = id.text;
    n->args.push_back(std::move(base));
    return finish(std::move(n));
  }

  // Comma-separated expressions up to `close` (a trailing comma is allowed); in a list literal
  // (`optional_entries`) an element may be `?e`, included only when the optional e has a value.
  bool expr_list(Tok close, std::string_view spelled, std::vector<NodePtr>* out,
                 bool optional_entries = false) {
    while (!accept(close)) {
      const bool optional = optional_entries && accept(Tok::kQuestion);
      NodePtr e = expr();
      if (!e) return false;
      e->optional_entry = optional;
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
    if (nargs == 3) {  // two variables
      if (name == "all") return Macro::kAll;
      if (name == "exists") return Macro::kExists;
      if (name == "existsOne") return Macro::kExistsOne;
    }
    if (nargs == 3 || nargs == 4) {
      if (name == "transformList") return Macro::kTransformList;
      if (name == "transformMap") return Macro::kTransformMap;
      if (name == "transformMapEntry") return Macro::kTransformMapEntry;
    }
    if (nargs == 2) {
      if (name == "existsOne") return Macro::kExistsOne;
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
      const bool two = macro >= Macro::kTransformList ||
                       (macro != Macro::kMap && macro != Macro::kFilter && args.size() == 3);
      if (two && args[1]->kind != NodeKind::kIdent) {
        return fail(args[1]->offset, "argument must be a simple name");
      }
      if (two && args[1]->name == args[0]->name) {
        return fail(args[1]->offset, "duplicate variable name: " + args[1]->name);
      }
      auto n = make_node(NodeKind::kComprehension, id.offset);
      n->macro = macro;
      n->name = args[0]->name;
      if (two) n->name2 = args[1]->name;
      n->args.push_back(std::move(target));
      for (std::size_t i = two ? 2 : 1; i < args.size(); ++i) n->args.push_back(std::move(args[i]));
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
    if (!expr_list(Tok::kRBracket, "']'", &n->args, true)) return nullptr;
    --nesting_;
    return finish(std::move(n));
  }

  NodePtr map_literal() {
    auto n = make_node(NodeKind::kMap, advance().offset);
    while (!accept(Tok::kRBrace)) {
      const bool optional = accept(Tok::kQuestion);  // {?k: v}: only when v has a value
      NodePtr key = expr();
      if (!key || !expect(Tok::kColon, "':'")) return nullptr;
      key->optional_entry = optional;
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

}  // namespace

std::unique_ptr<Node> parse(std::string_view src, std::vector<Token> toks, Issue* issue) {
  return Parser(src, std::move(toks)).parse(issue);
}

}  // namespace vkube::cel::detail
