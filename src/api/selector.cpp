// Label selectors: the string syntax of k8s.io/apimachinery pkg/labels and
// the metav1.LabelSelector object. Both the accepted language and the error
// messages follow Kubernetes 1.32 exactly, quirks included (a NUL byte ends a
// token, "x in ()" means the empty value, "x in (,,)" is an error), because
// clients see them.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "go_format.h"
#include "vkube/api/selector.h"
#include "vkube/api/validation.h"

namespace vkube::api {
namespace {

using Op = LabelRequirement::Op;

enum class Tok {
  kEnd,
  kIdent,
  kIn,
  kNotIn,
  kNot,           // !
  kEquals,        // =
  kDoubleEquals,  // ==
  kNotEquals,     // !=
  kGreater,       // >
  kLess,          // <
  kOpenParen,
  kCloseParen,
  kComma,
};

struct Token {
  Tok kind;
  std::string text;  // what the error messages quote; "" at the end
};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

bool is_special(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

std::optional<Tok> special_token(std::string_view text) {
  static constexpr std::pair<std::string_view, Tok> kSpecials[] = {
      {"=", Tok::kEquals},     {"==", Tok::kDoubleEquals}, {"!", Tok::kNot},
      {"!=", Tok::kNotEquals}, {">", Tok::kGreater},       {"<", Tok::kLess},
      {"(", Tok::kOpenParen},  {")", Tok::kCloseParen},    {",", Tok::kComma},
  };
  for (const auto& [spelling, tok] : kSpecials) {
    if (spelling == text) return tok;
  }
  return std::nullopt;
}

// Splits the input into tokens. read() yields '\0' at the end, and Kubernetes'
// lexer treats a NUL byte in the input the same way (it ends the token being
// read and is consumed); this lexer keeps that so both accept the same inputs.
class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  std::vector<Token> scan() {
    std::vector<Token> tokens;
    do {
      tokens.push_back(next());
    } while (tokens.back().kind != Tok::kEnd);
    return tokens;
  }

 private:
  char read() { return pos_ < s_.size() ? s_[pos_++] : '\0'; }
  void unread() { --pos_; }

  Token next() {
    char c = read();
    while (is_space(c)) c = read();
    if (c == '\0') return {Tok::kEnd, ""};
    unread();
    return is_special(c) ? operator_token() : word();
  }

  // Identifiers and the keywords "in" and "notin".
  Token word() {
    std::string text;
    for (char c = read(); c != '\0'; c = read()) {
      if (is_special(c) || is_space(c)) {
        unread();
        break;
      }
      text += c;
    }
    if (text == "in") return {Tok::kIn, text};
    if (text == "notin") return {Tok::kNotIn, text};
    return {Tok::kIdent, text};
  }

  // The longest run of special characters that spells an operator.
  Token operator_token() {
    std::string text;
    Token last{Tok::kEnd, ""};
    for (char c = read(); c != '\0'; c = read()) {
      if (!is_special(c)) {
        unread();
        break;
      }
      text += c;
      if (std::optional<Tok> tok = special_token(text)) {
        last = {*tok, text};
      } else {
        unread();
        break;
      }
    }
    return last;  // every single special character is a token, so never kEnd
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

// The operator a token spells after a key, if any.
std::optional<Op> binary_op(Tok tok) {
  static constexpr std::pair<Tok, Op> kOps[] = {
      {Tok::kIn, Op::kIn},
      {Tok::kNotIn, Op::kNotIn},
      {Tok::kEquals, Op::kEquals},
      {Tok::kDoubleEquals, Op::kEquals},
      {Tok::kNotEquals, Op::kNotEquals},
      {Tok::kGreater, Op::kGreaterThan},
      {Tok::kLess, Op::kLessThan},
  };
  for (const auto& [t, op] : kOps) {
    if (t == tok) return op;
  }
  return std::nullopt;
}

std::string found(std::string_view text, std::string_view expected) {
  return "found '" + std::string(text) + "', expected: " + std::string(expected);
}

// A recursive-descent parser over the tokens, one requirement at a time.
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Result<std::vector<LabelRequirement>> parse() {
    std::vector<LabelRequirement> reqs;
    while (true) {
      Tok tok = peek(kValues);
      if (tok == Tok::kEnd) return reqs;
      if (tok != Tok::kIdent && tok != Tok::kNot) {
        return Status::bad_request(found(current().text, "!, identifier, or 'end of string'"));
      }
      Result<LabelRequirement> req = requirement();
      if (!req) {
        return Status::bad_request("unable to parse requirement: " + req.status().message());
      }
      reqs.push_back(std::move(req).value());
      const Token& after = current();
      tok = next(kValues);
      if (tok == Tok::kEnd) return reqs;
      if (tok != Tok::kComma) {
        return Status::bad_request(found(after.text, "',' or 'end of string'"));
      }
      if (Tok t = peek(kValues); t != Tok::kIdent && t != Tok::kNot) {
        return Status::bad_request(found(current().text, "identifier after ','"));
      }
    }
  }

 private:
  // In value positions the keywords are plain identifiers: "x in (in)".
  enum Context { kKeyAndOperator, kValues };

  const Token& current() const { return tokens_[pos_]; }
  Tok peek(Context ctx) const {
    Tok tok = current().kind;
    if (ctx == kValues && (tok == Tok::kIn || tok == Tok::kNotIn)) return Tok::kIdent;
    return tok;
  }
  // Consumes the current token and returns its kind. The end token stays
  // current once reached, and consuming it again yields it again.
  Tok next(Context ctx) {
    Tok tok = peek(ctx);
    consumed_ = pos_;
    if (current().kind != Tok::kEnd) ++pos_;
    return tok;
  }
  // The text of the token next() consumed last.
  const std::string& previous_text() const { return tokens_[consumed_].text; }

  // Errors here are bare messages; parse() adds "unable to parse requirement: ".
  Result<LabelRequirement> requirement() {
    std::optional<Op> op;
    Tok tok = next(kValues);
    if (tok == Tok::kNot) {
      op = Op::kDoesNotExist;
      tok = next(kValues);
    }
    if (tok != Tok::kIdent) return Status::bad_request(found(previous_text(), "identifier"));
    std::string key = previous_text();
    if (std::vector<std::string> errs = validate_qualified_name(key); !errs.empty()) {
      // Kubernetes reports this with a nil field path, which prints "<nil>".
      return Status::bad_request(go::invalid_value("<nil>", key, go::join(errs, "; ")));
    }
    if (op || peek(kValues) == Tok::kEnd || peek(kValues) == Tok::kComma) {
      return LabelRequirement{std::move(key), op.value_or(Op::kExists), {}};
    }

    op = binary_op(next(kKeyAndOperator));
    if (!op) return Status::bad_request(found(previous_text(), "in, notin, =, ==, !=, gt, lt"));
    Result<std::vector<std::string>> values =
        (*op == Op::kIn || *op == Op::kNotIn) ? value_set() : exact_value();
    if (!values) return values.status();
    std::vector<std::string> vals = std::move(values).value();
    std::sort(vals.begin(), vals.end());
    vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
    return checked(LabelRequirement{std::move(key), *op, std::move(vals)});
  }

  // "(a,b)"; "()" is the set of the empty value.
  Result<std::vector<std::string>> value_set() {
    if (next(kValues) != Tok::kOpenParen) {
      return Status::bad_request("found '" + previous_text() + "' expected: '('");
    }
    const Token& first = current();
    switch (peek(kValues)) {
      case Tok::kIdent:
      case Tok::kComma: {
        Result<std::vector<std::string>> values = value_list();
        if (!values) return values;
        if (next(kValues) != Tok::kCloseParen) {
          return Status::bad_request(found(first.text, "')'"));
        }
        return values;
      }
      case Tok::kCloseParen:
        next(kValues);
        return std::vector<std::string>{""};
      default:
        return Status::bad_request(found(first.text, "',', ')' or identifier"));
    }
  }

  // The values up to (not including) ')'. Empty values between commas are
  // the empty string, following Kubernetes' grammar, whose one oddity is kept:
  // a value list that ends in two commas is an error unless a third follows.
  Result<std::vector<std::string>> value_list() {
    std::vector<std::string> values;
    while (true) {
      switch (next(kValues)) {
        case Tok::kIdent:
          values.push_back(previous_text());
          if (Tok t = peek(kValues); t == Tok::kCloseParen)
            return values;
          else if (t != Tok::kComma)
            return Status::bad_request(found(current().text, "',' or ')'"));
          break;
        case Tok::kComma:
          if (values.empty()) values.emplace_back();  // "(,"
          if (peek(kValues) == Tok::kCloseParen) {    // ",)"
            values.emplace_back();
            return values;
          }
          if (peek(kValues) == Tok::kComma) {  // ",,"
            next(kValues);
            values.emplace_back();
          }
          break;
        default:
          return Status::bad_request(found(previous_text(), "',', or identifier"));
      }
    }
  }

  // The one value after =, ==, !=, > or <; nothing there is the empty value.
  Result<std::vector<std::string>> exact_value() {
    if (Tok t = peek(kValues); t == Tok::kEnd || t == Tok::kComma) {
      return std::vector<std::string>{""};
    }
    if (next(kValues) != Tok::kIdent) {
      return Status::bad_request(found(previous_text(), "identifier"));
    }
    return std::vector<std::string>{previous_text()};
  }

  // labels.NewRequirement's checks of the values (the key is checked already).
  static Result<LabelRequirement> checked(LabelRequirement req) {
    std::vector<std::string> errs;
    const std::vector<std::string>& vals = req.values;
    if (req.op == Op::kGreaterThan || req.op == Op::kLessThan) {
      std::int64_t ignored;
      for (std::size_t i = 0; i < vals.size(); ++i) {
        if (!go::parse_int64(vals[i], &ignored)) {
          errs.push_back(
              go::invalid_value("values[" + std::to_string(i) + "]", vals[i],
                                "for 'Gt', 'Lt' operators, the value must be an integer"));
        }
      }
    }
    for (std::size_t i = 0; i < vals.size(); ++i) {
      if (std::vector<std::string> msgs = validate_label_value(vals[i]); !msgs.empty()) {
        errs.push_back(go::invalid_value("values[" + std::to_string(i) + "][" + req.key + "]",
                                         vals[i], go::join(msgs, "; ")));
      }
    }
    if (!errs.empty()) return Status::bad_request(go::aggregate(errs));
    return req;
  }

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  std::size_t consumed_ = 0;
};

bool requirement_matches(const LabelRequirement& req, const json& labels) {
  bool present = false;
  const std::string* value = nullptr;  // null also for a (malformed) non-string value
  if (labels.is_object()) {
    if (auto it = labels.find(req.key); it != labels.end()) {
      present = true;
      value = it->get_ptr<const json::string_t*>();
    }
  }
  auto in_values = [&] {
    return value != nullptr && std::binary_search(req.values.begin(), req.values.end(), *value);
  };
  switch (req.op) {
    case Op::kEquals:
    case Op::kIn:
      return present && in_values();
    case Op::kNotEquals:
    case Op::kNotIn:
      return !present || !in_values();
    case Op::kExists:
      return present;
    case Op::kDoesNotExist:
      return !present;
    case Op::kGreaterThan:
    case Op::kLessThan: {
      std::int64_t have, want;
      if (value == nullptr || req.values.size() != 1 || !go::parse_int64(*value, &have) ||
          !go::parse_int64(req.values[0], &want)) {
        return false;
      }
      return req.op == Op::kGreaterThan ? have > want : have < want;
    }
  }
  return false;
}

void sort_by_key(std::vector<LabelRequirement>& reqs) {
  std::stable_sort(
      reqs.begin(), reqs.end(),
      [](const LabelRequirement& a, const LabelRequirement& b) { return a.key < b.key; });
}

}  // namespace

Result<LabelSelector> LabelSelector::parse(std::string_view text) {
  Result<std::vector<LabelRequirement>> reqs = Parser(Lexer(text).scan()).parse();
  if (!reqs) return reqs.status();
  LabelSelector selector;
  selector.reqs_ = std::move(reqs).value();
  sort_by_key(selector.reqs_);
  return selector;
}

bool LabelSelector::matches(const json& labels) const {
  return std::all_of(reqs_.begin(), reqs_.end(),
                     [&](const LabelRequirement& r) { return requirement_matches(r, labels); });
}

std::string LabelSelector::to_string() const {
  std::string out;
  for (const LabelRequirement& r : reqs_) {
    if (!out.empty()) out += ',';
    if (r.op == Op::kDoesNotExist) out += '!';
    out += r.key;
    switch (r.op) {
      case Op::kExists:
      case Op::kDoesNotExist:
        continue;
      case Op::kEquals:
        out += '=';
        break;
      case Op::kNotEquals:
        out += "!=";
        break;
      case Op::kGreaterThan:
        out += '>';
        break;
      case Op::kLessThan:
        out += '<';
        break;
      case Op::kIn:
        out += " in (";
        break;
      case Op::kNotIn:
        out += " notin (";
        break;
    }
    out += go::join(r.values, ",");
    if (r.op == Op::kIn || r.op == Op::kNotIn) out += ')';
  }
  return out;
}

}  // namespace vkube::api
