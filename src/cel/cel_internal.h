// Private to the CEL implementation (the cel_*.cpp files): the front end's tokens and issues, the
// evaluator's value model and state, and the functions one file defines for another. cel.h is
// the interface; nothing here is.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vkube/cel/cel.h"

namespace vkube::cel::detail {

// ---------------------------------------------------------------------------------------------
// Front end: cel_lexer.cpp, cel_parse.cpp, cel_compile.cpp

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

// The tokens of `src`, ending with kEof; false with `issue` set at the first bad token.
bool lex(std::string_view src, std::vector<Token>* out, Issue* issue);
// cel-go's text of a compile issue: "ERROR: <input>:L:C: message", the line and a caret.
std::string issue_text(std::string_view src, const Issue& issue);
// A function's result type when it does not depend on its arguments ("bool", "int", ...).
std::string_view function_result(Fn fn);
// The syntax tree of `toks` (names not yet resolved); nullptr with `issue` set on a syntax error
// or a tree nested deeper than kMaxExpressionNesting / kMaxAstDepth.
std::unique_ptr<Node> parse(std::string_view src, std::vector<Token> toks, Issue* issue);

// ---------------------------------------------------------------------------------------------
// Evaluator: values (cel_values.cpp)

inline constexpr std::string_view kNoSuchOverload = "no such overload";
inline constexpr std::string_view kCostExceeded = "operation cancelled: actual cost limit exceeded";
inline constexpr int kMaxValueDepth = 1000;  // nesting of values compared or converted

enum class Kind : uint8_t {
  kNull,
  kBool,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kList,
  kMap,
  kType,
  kOptional,   // items holds the value, or nothing (optional.none())
  kQuantity,   // d holds its value, owned its text
  kIp,         // owned holds the 4 or 16 address bytes
  kCidr,       // owned holds the address bytes, u the prefix length
  kUrl,        // owned holds the URL's text
  kDuration,   // i holds nanoseconds
  kTimestamp,  // i holds Unix seconds (UTC), u the nanoseconds within that second
  kObject,     // an authorizer library value (Authorizer, PathCheck, GroupCheck, ResourceCheck,
               // Decision)
  kError
};

// The state of an authorizer library value: what it checks so far, or a check's decision.
struct AuthzObject {
  enum class Type : uint8_t { kAuthorizer, kPathCheck, kGroupCheck, kResourceCheck, kDecision };
  Type type = Type::kAuthorizer;
  AuthzAttributes attrs;  // user and groups always; the rest as the builder calls set them
  std::string field_selector, label_selector;
  AuthzDecision decision;
  const Authorizer* authorizer = nullptr;
};
// cel-go's type name of an authorizer value ("kubernetes.authorization.Decision", ...).
std::string_view authz_type_name(const AuthzObject& o);

struct Value;
using ValueList = std::vector<Value>;
using ValueMap = std::vector<std::pair<Value, Value>>;

// A CEL value. Lists and maps are either materialized (items/entries) or views of JSON (node,
// typed by schema); strings may borrow from the JSON or the AST, both alive while evaluating.
struct Value {
  Kind kind = Kind::kNull;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::shared_ptr<const std::string> owned;  // string, bytes, type name or error text
  const std::string* borrowed = nullptr;
  std::shared_ptr<const ValueList> items;
  std::shared_ptr<const ValueMap> entries;
  const json* node = nullptr;
  const json* schema = nullptr;
  std::shared_ptr<const AuthzObject> object;  // kObject
  bool resource_root = false;                 // metadata shows only name and generateName

  std::string_view str() const {
    if (borrowed != nullptr) return *borrowed;
    return owned ? std::string_view(*owned) : std::string_view();
  }
  bool is_error() const { return kind == Kind::kError; }
};

// Constructors, inline because every operator and function builds its result with them.
inline Value make_bool(bool b) {
  Value v;
  v.kind = Kind::kBool;
  v.b = b;
  return v;
}
inline Value make_int(int64_t i) {
  Value v;
  v.kind = Kind::kInt;
  v.i = i;
  return v;
}
inline Value make_uint(uint64_t u) {
  Value v;
  v.kind = Kind::kUint;
  v.u = u;
  return v;
}
inline Value make_double(double d) {
  Value v;
  v.kind = Kind::kDouble;
  v.d = d;
  return v;
}
inline Value make_text(Kind kind, std::string s) {
  Value v;
  v.kind = kind;
  v.owned = std::make_shared<const std::string>(std::move(s));
  return v;
}
inline Value make_string(std::string s) {
  return make_text(Kind::kString, std::move(s));
}
inline Value make_error(std::string_view message) {
  return make_text(Kind::kError, std::string(message));
}
inline Value no_overload() {
  return make_error(kNoSuchOverload);
}
inline Value make_list(ValueList items, const json* schema = nullptr) {
  Value v;
  v.kind = Kind::kList;
  v.items = std::make_shared<const ValueList>(std::move(items));
  v.schema = schema;
  return v;
}
inline Value make_optional_value(std::optional<Value> v) {
  Value o;
  o.kind = Kind::kOptional;
  ValueList items;
  if (v) items.push_back(std::move(*v));
  o.items = std::make_shared<const ValueList>(std::move(items));
  return o;
}
inline bool has_value(const Value& optional) {
  return optional.items && !optional.items->empty();
}
inline Value make_map(ValueMap entries) {
  Value v;
  v.kind = Kind::kMap;
  v.entries = std::make_shared<const ValueMap>(std::move(entries));
  return v;
}

std::string_view type_name(Kind kind);

// The evaluation's state: bindings and the cost spent.
struct Ctx {
  const Value* self = nullptr;
  const Value* old_self = nullptr;
  const Authorizer* authorizer = nullptr;
  std::vector<Value> vars;  // comprehension variables by slot
  int64_t cost = 0;
  int64_t limit = kPerCallCostLimit;
  bool exceeded = false;

  bool charge(int64_t n) {
    cost += n;
    if (cost > limit) exceeded = true;
    return !exceeded;
  }
};

// A value read from JSON in place, typed by its structural schema (nullptr: typed by JSON).
Value from_json(const json& j, const json* schema);
// Lists and maps, materialized or JSON-backed alike.
std::size_t list_size(const Value& v);
Value list_at(const Value& v, std::size_t i);
std::string_view list_type(const Value& list);  // x-kubernetes-list-type, "atomic" by default
std::size_t map_size(const Value& v);
std::optional<Value> map_get(const Value& m, const Value& key);
std::optional<Value> map_field(const Value& m, std::string_view name);
ValueList map_keys(const Value& m);
// Text of numbers and map keys as cel-go prints them.
std::string format_int(int64_t i);
std::string format_double(double d);
std::string key_text(const Value& k);
// A result back to JSON; throws std::runtime_error past kMaxValueDepth.
json to_json(const Value& v, int depth);

// ---------------------------------------------------------------------------------------------
// Operators (cel_operators.cpp)

bool is_number(Kind k);
// Equality of scalars (map keys); aggregates compare unequal here.
bool values_equal_shallow(const Value& a, const Value& b);
// Tri-state result of deep equality: a value too deeply nested to compare is an error.
enum class Eq : uint8_t { kFalse, kTrue, kError };
Eq deep_equal(const Value& a, const Value& b, Ctx& ctx, int depth);
// Index of an element of `list` equal to `v` (or, for map lists, with v's key), or -1.
int64_t find_element(const Value& list, const Value& v, Ctx& ctx,
                     const std::vector<std::string>* keys, int depth);
Value equality(const Value& a, const Value& b, Ctx& ctx, bool negate);
// Ordering of comparable values into *out (-1, 0, 1, 2 for NaN); an error value when the types
// do not compare.
std::optional<Value> compare(const Value& a, const Value& b, int* out);
Value relational(Fn fn, const Value& a, const Value& b);
Value int_overflow();
Value uint_overflow();
Value add(const Value& a, const Value& b, Ctx& ctx);
Value arithmetic(Fn fn, const Value& a, const Value& b, Ctx& ctx);
Value contains_value(const Value& container, const Value& v, Ctx& ctx);

// ---------------------------------------------------------------------------------------------
// Function libraries (cel_functions_*.cpp); `a` holds the receiver first

// Strings and regular expressions (cel_functions_strings.cpp).
std::size_t rune_count(std::string_view s);
bool valid_utf8(std::string_view s);
Value string_predicate(Fn fn, const std::vector<Value>& a);  // contains, startsWith, endsWith
Value string_library(Fn fn, const std::vector<Value>& a);
Value regex_function(const Node& n, const std::vector<Value>& a, Ctx& ctx);
// "...".format([args]) and strings.quote(s) (cel_functions_format.cpp).
Value format_function(Fn fn, const std::vector<Value>& a, Ctx& ctx);
// Conversions int(), uint(), double(), string(), bool(), bytes() (cel_functions_conversions.cpp).
Value to_int(const Value& v);
Value to_uint(const Value& v);
Value to_double(const Value& v);
Value to_string(const Value& v);
Value to_bool(const Value& v);
Value to_bytes(const Value& v);
// kube's list library and cel-go's sets extension (cel_functions_lists.cpp).
Value list_library(Fn fn, const std::vector<Value>& a, Ctx& ctx);
Value sets_function(Fn fn, const Value& a, const Value& b, Ctx& ctx);
// Optional values (cel_functions_lists.cpp): optional.of/none/ofNonZeroValue, hasValue(),
// value(); orValue() and or() are evaluated lazily by the tree walk.
Value optional_function(Fn fn, const std::vector<Value>& a);
// kube's quantity library (cel_functions_quantity.cpp): quantity(), isQuantity() and the
// methods of a Quantity.
Value quantity_function(Fn fn, const std::vector<Value>& a);
// kube's IP and CIDR libraries (cel_functions_net.cpp), and their string() form.
Value net_function(Fn fn, const std::vector<Value>& a);
std::string net_text(const Value& v);
// kube's URL library (cel_functions_url.cpp).
Value url_function(Fn fn, const std::vector<Value>& a);
// Durations (cel_functions_duration.cpp): duration(), its accessors and its string form.
Value duration_function(Fn fn, const std::vector<Value>& a);
std::string duration_text(int64_t ns);
// Nanoseconds (below a second) as Go prints a fraction of seconds: "" for none, else ".5",
// ".000000001", without trailing zeros.
std::string nanos_fraction(uint64_t nanos);
// Go's time.ParseDuration: nanoseconds, or nothing when `s` is not a duration.
std::optional<int64_t> parse_duration(std::string_view s);
// Timestamps (cel_functions_time.cpp): timestamp(), its accessors (getHours and the other
// accessors durations share come here for a timestamp) and its string form. make_timestamp
// normalizes the nanoseconds and checks the range (an error value "timestamp overflow").
Value timestamp_function(Fn fn, const std::vector<Value>& a);
Value make_timestamp(int64_t seconds, int64_t nanos);
std::string timestamp_text(const Value& t);
// A string a schema gives a `format` CEL types, as kube's CEL types it: date-time and date are
// timestamps, duration a duration (an error value when the text is not one); nothing for the
// other formats.
std::optional<Value> formatted_string(std::string_view format, std::string_view text);
// kube's authorizer library (cel_functions_authz.cpp): the `authorizer` variable, its
// requestResource, and the builder and accessor methods.
Value authorizer_value(const Ctx& ctx);
Value authz_field(const Value& target, std::string_view name);
Value authz_function(Fn fn, const std::vector<Value>& a, Ctx& ctx);

}  // namespace vkube::cel::detail
