// CEL (Common Expression Language) as kube-apiserver evaluates it: the subset its
// x-kubernetes-validations rules and ValidatingAdmissionPolicy expressions use, parsed to an AST
// and evaluated over JSON. A module apart from the API server, as kube keeps k8s.io/apiserver's
// cel packages apart from its handlers: CRD rules (src/apiserver/crd/cel_rules.h) and admission
// policies both build on it. Typing is dynamic: what kube's type checker rejects when the CRD is
// written (a string added to an int, say) surfaces here as kube's runtime "no such overload"
// error instead.
//
// Files (src/cel/): cel_lexer.cpp, cel_parse.cpp (tokens, the AST and its macros),
// cel_compile.cpp (name resolution, compile() and its cache), cel_eval.cpp (the tree walk,
// function dispatch), cel_values.cpp (values over JSON), cel_operators.cpp (equality, ordering,
// arithmetic), cel_functions_*.cpp (the function libraries), cel_check.cpp (admission type
// checks); cel_internal.h is private to them. Regular expressions are re2_regex.h's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/cel/re2_regex.h"

namespace vkube::cel {

using json = nlohmann::json;

// Deepest nesting of parenthesised/bracketed sub-expressions (cel-go counts its `expr` rule).
inline constexpr int kMaxExpressionNesting = 100;
// Deepest AST (operator chains such as a + b + c + ... nest without parentheses).
inline constexpr int kMaxAstDepth = 250;
// Longest expression, in code points (cel-go's default).
inline constexpr std::size_t kMaxExpressionCodePoints = 100000;
// Cost one evaluation may spend, and all rules of one object together (celconfig.PerCallLimit
// and RuntimeCELCostBudget).
inline constexpr int64_t kPerCallCostLimit = 1000000;
inline constexpr int64_t kRuntimeCostBudget = 10000000;

namespace detail {

// The regex engine lives in re2_regex.h (shared with the schema `pattern` keyword); the name stays
// reachable here for callers that spell it cel::detail::Regex.
using vkube::cel::Regex;

enum class LitKind : uint8_t { kNull, kBool, kInt, kUint, kDouble, kString, kBytes, kType };

struct Literal {
  LitKind kind = LitKind::kNull;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string s;  // string/bytes content, type name
};

enum class NodeKind : uint8_t {
  kLiteral,
  kIdent,          // self, oldSelf or a comprehension variable (slot)
  kSelect,         // args[0].name
  kHas,            // has(args[0].name)
  kIndex,          // args[0][args[1]]
  kCall,           // fn(args...), receiver in args[0] when `receiver`
  kList,           // [args...]
  kMap,            // {args[0]: args[1], args[2]: args[3], ...}
  kAnd,            // args[0] && args[1]
  kOr,             // args[0] || args[1]
  kNot,            // !args[0]
  kNeg,            // -args[0]
  kCond,           // args[0] ? args[1] : args[2]
  kComprehension,  // args[0].macro(name, args[1] [, args[2]])
};

// Resolved functions. The operators come first, in this order (ranges of it are tested).
enum class Fn : uint8_t {
  kNone,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kIn,
  kSize,
  kContains,
  kStartsWith,
  kEndsWith,
  kMatches,
  kToInt,
  kToUint,
  kToDouble,
  kToString,
  kToBool,
  kToBytes,
  kDyn,
  kType,
  kLowerAscii,
  kUpperAscii,
  kTrim,
  kSplit,
  kJoin,
  kIndexOf,
  kLastIndexOf,
  kReplace,
  kSubstring,
  kCharAt,
  kIsSorted,
  kSum,
  kMin,
  kMax,
  kFind,
  kFindAll,
  kSetsContains,
  kSetsEquivalent,
  kSetsIntersects,
  // kube's authorizer library.
  kAuthzPath,
  kAuthzGroup,
  kAuthzServiceAccount,
  kAuthzResource,
  kAuthzSubresource,
  kAuthzNamespace,
  kAuthzName,
  kAuthzCheck,
  kAuthzAllowed,
  kAuthzReason,
  kAuthzErrored,
  kAuthzError,
  kAuthzFieldSelector,
  kAuthzLabelSelector,
  // Optional values: optional.of/none/ofNonZeroValue and the methods of an optional.
  kOptOf,
  kOptNone,
  kOptOfNonZero,
  kOptHasValue,
  kOptValue,
  kOptOrValue,
  kOptOr,
  // kube's quantity library.
  kQuantity,
  kIsQuantity,
  kQSign,
  kQIsInteger,
  kQAsInteger,
  kQAsFloat,
  kQAdd,
  kQSub,
  kQIsLessThan,
  kQIsGreaterThan,
  kQCompareTo,
  // cel-go's strings extension (version 2, as kube declares it).
  kFormat,
  kStringsQuote,
  // kube's IP and CIDR libraries.
  kIp,
  kIsIp,
  kIpIsCanonical,
  kCidr,
  kIsCidr,
  kIpFamily,
  kIpIsUnspecified,
  kIpIsLoopback,
  kIpIsLinkLocalMulticast,
  kIpIsLinkLocalUnicast,
  kIpIsGlobalUnicast,
  kCidrContainsIp,
  kCidrContainsCidr,
  kCidrMasked,
  kCidrPrefixLength,
  // kube's URL library.
  kUrl,
  kIsUrl,
  kUrlScheme,
  kUrlHost,
  kUrlHostname,
  kUrlPort,
  kUrlEscapedPath,
  kUrlQuery,
  // google.protobuf.Duration: duration("1h30m") and its accessors.
  kDuration,
  kGetHours,
  kGetMinutes,
  kGetSeconds,
  kGetMilliseconds,
  // google.protobuf.Timestamp: timestamp("2023-06-01T10:00:00Z") and its calendar accessors.
  kTimestamp,
  kGetFullYear,
  kGetMonth,
  kGetDate,
  kGetDayOfMonth,
  kGetDayOfWeek,
  kGetDayOfYear,
};

// kTransform*: kube 1.32's two-variable comprehensions (cel-go's ext.TwoVarComprehensions), as
// are all/exists/existsOne with two variables.
enum class Macro : uint8_t {
  kNone,
  kAll,
  kExists,
  kExistsOne,
  kMap,
  kFilter,
  kTransformList,
  kTransformMap,
  kTransformMapEntry
};

inline constexpr int kSlotSelf = -1;
inline constexpr int kSlotOldSelf = -2;
inline constexpr int kSlotAuthorizer = -3;

struct Node {
  NodeKind kind = NodeKind::kLiteral;
  int offset = 0;  // byte offset in the source, for messages
  int depth = 1;   // height of this subtree
  Literal lit;
  std::string name;  // identifier, field, function or comprehension variable
  // kComprehension with two variables: the second (the element or value; `name` is the index
  // or key), in the slot after `slot`.
  std::string name2;
  int slot = 0;  // kIdent: kSlotSelf, kSlotOldSelf or the comprehension variable's slot
  Fn fn = Fn::kNone;
  bool receiver = false;  // kCall: args[0] is the receiver of a member call
  bool optional = false;  // kSelect `.?name`, kIndex `[?key]`: an optional of what is there
  // An element of a list literal written `?e`, or the key of a map literal entry `?k: v`: the
  // element or entry is there only when the optional e (v) has a value.
  bool optional_entry = false;
  Macro macro = Macro::kNone;
  std::vector<std::unique_ptr<Node>> args;
  std::shared_ptr<const Regex> regex;  // literal pattern of matches/find/findAll, precompiled
};

}  // namespace detail

// A compiled expression: immutable, safe to evaluate from many threads at once.
class Program {
 public:
  Program(std::string source, std::unique_ptr<detail::Node> root, bool uses_old_self,
          std::string result_type);
  const std::string& source() const { return source_; }
  const detail::Node& root() const { return *root_; }
  // True when the expression refers to oldSelf: a transition rule.
  bool uses_old_self() const { return uses_old_self_; }
  // The result's type when it is known without data ("bool", "string", "int", ...), else "".
  const std::string& result_type() const { return result_type_; }

 private:
  std::string source_;
  std::unique_ptr<detail::Node> root_;
  bool uses_old_self_;
  std::string result_type_;
};

// Parses and checks `expr`. On failure returns nullptr and cel-go's issue text in `error`:
//   ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')
//    | foo == 1
//    | ^
// Functions outside this subset are refused as "function 'quantity' is not supported by vkube".
std::shared_ptr<const Program> compile(std::string_view expr, std::string* error);

// Whether a compile error is about something outside vkube's subset (a kube function or syntax
// vkube lacks) rather than an invalid expression: the CRD deserves a Warning, not a refusal, and
// validate_rules skips the rule.
inline bool unsupported_by_vkube(std::string_view error) {
  return error.find("not supported by vkube") != std::string_view::npos;
}

// compile() through a process-wide cache keyed by the expression text (bounded; thread-safe).
std::shared_ptr<const Program> compile_cached(std::string_view expr, std::string* error);

// As compile(), for admission expressions (ValidatingAdmissionPolicy, webhook matchConditions):
// the identifiers in `names` (object, oldObject, request, params, ...) are declared instead of
// self and oldSelf, and evaluate() binds `self` to a map holding each of them by name. The name
// "authorizer" in `names` declares kube's authorizer library variable (EvalOptions::authorizer).
std::shared_ptr<const Program> compile_in(std::string_view expr,
                                          const std::vector<std::string>& names,
                                          std::string* error);
// The variables kube declares for an admission expression: object, oldObject, request,
// namespaceObject, variables, and params (a policy with a paramKind) and authorizer (all but a
// messageExpression) where it has them.
const std::vector<std::string>& admission_names(bool params, bool authorizer);
std::shared_ptr<const Program> compile_in_cached(std::string_view expr,
                                                 const std::vector<std::string>& names,
                                                 std::string* error);

// What an admission expression's `authorizer` asks (kube's authorizer.Attributes): a resource
// check (group, resource, ...) or a non-resource path, for `user` and its groups.
struct AuthzAttributes {
  std::string user;
  std::vector<std::string> groups;
  std::string verb;
  bool resource_request = false;
  std::string group, resource, subresource, ns, name;
  std::string path;
};
struct AuthzDecision {
  bool allowed = false;
  std::string reason;
  std::string error;  // the authorizer failed: Decision.errored() is true
};

// The `authorizer` variable of an admission expression: the requester (a service account
// through authorizer.serviceAccount()), the request's own resource (authorizer.requestResource)
// and the server's authorizer, called once per check().
struct Authorizer {
  std::string user;
  std::vector<std::string> groups;
  std::string group, resource, subresource, ns, name;  // the request's resource
  std::function<AuthzDecision(const AuthzAttributes&)> authorize;
};

struct EvalOptions {
  // The structural schema of `self` (and `oldSelf`): integer fields are CEL ints, number fields
  // doubles, list-type set/map lists compare and concatenate as kube's do. nullptr: typed by JSON.
  const json* schema = nullptr;
  // `self` is a resource root (the object or an embedded resource): its metadata shows only
  // name and generateName, as kube's does.
  bool resource_root = false;
  int64_t cost_limit = kPerCallCostLimit;
  // Bound to `authorizer` in expressions compiled with that name in their environment; an
  // expression that reaches it without one fails with "no such attribute: authorizer".
  const Authorizer* authorizer = nullptr;
};

struct EvalResult {
  bool ok = false;
  json value;         // the result when ok (ints as JSON integers, bytes as strings)
  std::string error;  // cel-go's wording when !ok: "no such key: x", "division by zero", ...
  int64_t cost = 0;   // cost spent (roughly cel-go's units)
  bool cost_exceeded = false;  // error is "operation cancelled: actual cost limit exceeded"
};

// The schemas an admission expression's variables have, for check_types(): OpenAPI v3 schemas
// whose "$ref"s `resolve` finds ("#/components/schemas/io.k8s.api.apps.v1.Deployment" -> its
// schema, nullptr when unknown). A null variable schema is unchecked.
struct TypeEnv {
  const json* object = nullptr;  // object and oldObject
  const json* params = nullptr;
  const json* namespace_object = nullptr;
  std::function<const json*(std::string_view ref)> resolve;
  // The policy's variables in order (compile_in() programs; null: one that did not compile):
  // `variables.<name>` has the type its expression has, as kube's checker gives it.
  std::vector<std::pair<std::string, const Program*>> variables;
};

// kube's type checking of a ValidatingAdmissionPolicy expression, in part: selections of fields
// the schema does not have ("undefined field 'replica'"), selections on scalars, and operators
// given a number and a string or a bool ("found no matching overload for '_==_' applied to
// '(int, string)'"). One cel-go issue text per problem, "ERROR: <input>:1:12: ..." with the line
// and a caret; empty when none is found. `program` must come from compile_in().
std::vector<std::string> check_types(const Program& program, const TypeEnv& env);

// Evaluates `program` with `self` bound, and `oldSelf` when `old_self` is non-null. Never throws.
EvalResult evaluate(const Program& program, const json& self, const json* old_self,
                    const EvalOptions& options = {});

}  // namespace vkube::cel
