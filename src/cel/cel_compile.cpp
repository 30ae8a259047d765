// CEL compilation: name resolution against the declarations a CRD rule sees (self, oldSelf, the
// standard and kube function libraries, with their arities), literal regex patterns compiled up
// front, the result type where it shows without data, and cel-go's issue text ("ERROR:
// <input>:1:5: ..." with the source line and a caret). Also compile() and its cache.
#include <algorithm>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cel_internal.h"
#include "compile_cache.h"

namespace vkube::cel {
namespace detail {
namespace {

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
    // kube's authorizer library (declared everywhere, as in kube's base environment; only
    // admission expressions have an `authorizer` to call them on).
    {"path", Fn::kAuthzPath, -1, -1, 1, 1, ""},
    {"group", Fn::kAuthzGroup, -1, -1, 1, 1, ""},
    {"serviceAccount", Fn::kAuthzServiceAccount, -1, -1, 2, 2, ""},
    {"resource", Fn::kAuthzResource, -1, -1, 1, 1, ""},
    {"subresource", Fn::kAuthzSubresource, -1, -1, 1, 1, ""},
    {"namespace", Fn::kAuthzNamespace, -1, -1, 1, 1, ""},
    {"name", Fn::kAuthzName, -1, -1, 1, 1, ""},
    {"check", Fn::kAuthzCheck, -1, -1, 1, 1, ""},
    {"allowed", Fn::kAuthzAllowed, -1, -1, 0, 0, "bool"},
    {"reason", Fn::kAuthzReason, -1, -1, 0, 0, "string"},
    {"errored", Fn::kAuthzErrored, -1, -1, 0, 0, "bool"},
    {"error", Fn::kAuthzError, -1, -1, 0, 0, "string"},
    {"fieldSelector", Fn::kAuthzFieldSelector, -1, -1, 1, 1, ""},
    {"labelSelector", Fn::kAuthzLabelSelector, -1, -1, 1, 1, ""},
    // Optional values.
    {"optional.of", Fn::kOptOf, 1, 1, -1, -1, "optional_type"},
    {"optional.none", Fn::kOptNone, 0, 0, -1, -1, "optional_type"},
    {"optional.ofNonZeroValue", Fn::kOptOfNonZero, 1, 1, -1, -1, "optional_type"},
    {"hasValue", Fn::kOptHasValue, -1, -1, 0, 0, "bool"},
    {"value", Fn::kOptValue, -1, -1, 0, 0, ""},
    {"orValue", Fn::kOptOrValue, -1, -1, 1, 1, ""},
    {"or", Fn::kOptOr, -1, -1, 1, 1, "optional_type"},
    // kube's quantity library.
    {"quantity", Fn::kQuantity, 1, 1, -1, -1, "kubernetes.Quantity"},
    {"isQuantity", Fn::kIsQuantity, 1, 1, -1, -1, "bool"},
    {"sign", Fn::kQSign, -1, -1, 0, 0, "int"},
    {"isInteger", Fn::kQIsInteger, -1, -1, 0, 0, "bool"},
    {"asInteger", Fn::kQAsInteger, -1, -1, 0, 0, "int"},
    {"asApproximateFloat", Fn::kQAsFloat, -1, -1, 0, 0, "double"},
    {"add", Fn::kQAdd, -1, -1, 1, 1, "kubernetes.Quantity"},
    {"sub", Fn::kQSub, -1, -1, 1, 1, "kubernetes.Quantity"},
    {"isLessThan", Fn::kQIsLessThan, -1, -1, 1, 1, "bool"},
    {"isGreaterThan", Fn::kQIsGreaterThan, -1, -1, 1, 1, "bool"},
    {"compareTo", Fn::kQCompareTo, -1, -1, 1, 1, "int"},
    {"format", Fn::kFormat, -1, -1, 1, 1, "string"},
    {"strings.quote", Fn::kStringsQuote, 1, 1, -1, -1, "string"},
    // kube's IP and CIDR libraries; ip() is also a CIDR's address.
    {"ip", Fn::kIp, 1, 1, 0, 0, "net.IP"},
    {"isIP", Fn::kIsIp, 1, 1, -1, -1, "bool"},
    {"ip.isCanonical", Fn::kIpIsCanonical, 1, 1, -1, -1, "bool"},
    {"cidr", Fn::kCidr, 1, 1, -1, -1, "net.CIDR"},
    {"isCIDR", Fn::kIsCidr, 1, 1, -1, -1, "bool"},
    {"family", Fn::kIpFamily, -1, -1, 0, 0, "int"},
    {"isUnspecified", Fn::kIpIsUnspecified, -1, -1, 0, 0, "bool"},
    {"isLoopback", Fn::kIpIsLoopback, -1, -1, 0, 0, "bool"},
    {"isLinkLocalMulticast", Fn::kIpIsLinkLocalMulticast, -1, -1, 0, 0, "bool"},
    {"isLinkLocalUnicast", Fn::kIpIsLinkLocalUnicast, -1, -1, 0, 0, "bool"},
    {"isGlobalUnicast", Fn::kIpIsGlobalUnicast, -1, -1, 0, 0, "bool"},
    {"containsIP", Fn::kCidrContainsIp, -1, -1, 1, 1, "bool"},
    {"containsCIDR", Fn::kCidrContainsCidr, -1, -1, 1, 1, "bool"},
    {"masked", Fn::kCidrMasked, -1, -1, 0, 0, "net.CIDR"},
    {"prefixLength", Fn::kCidrPrefixLength, -1, -1, 0, 0, "int"},
    // kube's URL library.
    {"url", Fn::kUrl, 1, 1, -1, -1, "kubernetes.URL"},
    {"isURL", Fn::kIsUrl, 1, 1, -1, -1, "bool"},
    {"getScheme", Fn::kUrlScheme, -1, -1, 0, 0, "string"},
    {"getHost", Fn::kUrlHost, -1, -1, 0, 0, "string"},
    {"getHostname", Fn::kUrlHostname, -1, -1, 0, 0, "string"},
    {"getPort", Fn::kUrlPort, -1, -1, 0, 0, "string"},
    {"getEscapedPath", Fn::kUrlEscapedPath, -1, -1, 0, 0, "string"},
    {"getQuery", Fn::kUrlQuery, -1, -1, 0, 0, "map"},
    // Durations and timestamps; a timestamp's accessors take an optional time zone.
    {"duration", Fn::kDuration, 1, 1, -1, -1, "google.protobuf.Duration"},
    {"timestamp", Fn::kTimestamp, 1, 1, -1, -1, "google.protobuf.Timestamp"},
    {"getHours", Fn::kGetHours, -1, -1, 0, 1, "int"},
    {"getMinutes", Fn::kGetMinutes, -1, -1, 0, 1, "int"},
    {"getSeconds", Fn::kGetSeconds, -1, -1, 0, 1, "int"},
    {"getMilliseconds", Fn::kGetMilliseconds, -1, -1, 0, 1, "int"},
    {"getFullYear", Fn::kGetFullYear, -1, -1, 0, 1, "int"},
    {"getMonth", Fn::kGetMonth, -1, -1, 0, 1, "int"},
    {"getDate", Fn::kGetDate, -1, -1, 0, 1, "int"},
    {"getDayOfMonth", Fn::kGetDayOfMonth, -1, -1, 0, 1, "int"},
    {"getDayOfWeek", Fn::kGetDayOfWeek, -1, -1, 0, 1, "int"},
    {"getDayOfYear", Fn::kGetDayOfYear, -1, -1, 0, 1, "int"},
};

// Functions of kube's CEL environment this subset leaves out (semvers, the math
// extension, ...): a CRD using them gets a clear compile error (a Warning
// or Invalid for the CRD), not "undeclared reference".
constexpr std::string_view kUnsupportedFunctions =
    " semver isSemver"
    " reverse optMap optFlatMap major minor patch sortBy sort distinct flatten slice first last "
    "lists.range"
    " base64.encode base64.decode math.greatest math.least math.ceil math.floor math.round"
    " math.trunc math.abs math.sign math.isNaN math.isInf math.isFinite math.bitAnd math.bitOr"
    " math.bitXor math.bitNot math.bitShiftLeft math.bitShiftRight ";

bool is_unsupported_function(std::string_view name) {
  return kUnsupportedFunctions.find(" " + std::string(name) + " ") != std::string_view::npos;
}

// Namespaces whose qualified functions are resolved as one name ("sets.contains").
bool is_function_namespace(std::string_view ns) {
  return ns == "sets" || ns == "strings" || ns == "math" || ns == "lists" || ns == "base64" ||
         ns == "optional" || ns == "ip";
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
  explicit Resolver(const std::vector<std::string>* env = nullptr) : env_(env) {}
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
    if (env_ != nullptr) return resolve_env_ident(n);
    if (n.name == "self") {
      n.slot = kSlotSelf;
      return true;
    }
    if (n.name == "oldSelf") {
      n.slot = kSlotOldSelf;
      uses_old_self_ = true;
      return true;
    }
    return resolve_other_ident(n);
  }

  // A type name (a literal), else a reserved or undeclared identifier (an error).
  bool resolve_other_ident(Node& n) {
    if (is_type_name(n.name)) {
      n.kind = NodeKind::kLiteral;
      n.lit.kind = LitKind::kType;
      n.lit.s = n.name;
      return true;
    }
    if (is_reserved(n.name)) return fail(n.offset, "reserved identifier: " + n.name);
    return fail(n.offset, "undeclared reference to '" + n.name + "' (in container '')");
  }

  // An admission expression's variable (object, request, ...) is a field of the map bound to
  // `self`, which the expression itself cannot name.
  bool resolve_env_ident(Node& n) {
    const bool declared = std::find(env_->begin(), env_->end(), n.name) != env_->end();
    if (declared && n.name == "authorizer") {  // not JSON: EvalOptions::authorizer
      n.slot = kSlotAuthorizer;
      return true;
    }
    if (declared) {
      auto root = std::make_unique<Node>();
      root->kind = NodeKind::kIdent;
      root->slot = kSlotSelf;
      root->offset = n.offset;
      root->name = "self";
      n.kind = NodeKind::kSelect;
      n.depth = 2;
      n.args.push_back(std::move(root));
      return true;
    }
    return resolve_other_ident(n);
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
    if (!n.name2.empty() && is_reserved(n.name2))
      return fail(n.offset, "reserved identifier: " + n.name2);
    scope_.push_back(n.name);
    n.slot = static_cast<int>(scope_.size()) - 1;
    if (!n.name2.empty()) scope_.push_back(n.name2);
    for (std::size_t i = 1; i < n.args.size(); ++i) {
      if (!resolve(*n.args[i])) return false;
    }
    scope_.pop_back();
    if (!n.name2.empty()) scope_.pop_back();
    return true;
  }

  const std::vector<std::string>* env_;
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
      if (n.macro == Macro::kTransformMap || n.macro == Macro::kTransformMapEntry) return "map";
      return n.macro == Macro::kMap || n.macro == Macro::kFilter || n.macro == Macro::kTransformList
                 ? "list"
                 : "bool";
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

}  // namespace

std::string issue_text(std::string_view src, const Issue& issue) {
  return format_issue(src, issue);
}

std::string_view function_result(Fn fn) {
  for (const auto& f : kFunctions)
    if (f.fn == fn) return f.result;
  return "";
}

namespace {

std::size_t count_code_points(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size();) {
    decode_utf8(s, &i);
    ++n;
  }
  return n;
}

std::shared_ptr<const Program> compile_unguarded(std::string_view expr, std::string* error,
                                                 const std::vector<std::string>* env = nullptr) {
  std::size_t size = count_code_points(expr);
  if (size > kMaxExpressionCodePoints) {
    *error = "expression code point size exceeds limit: size: " + std::to_string(size) +
             ", limit " + std::to_string(kMaxExpressionCodePoints);
    return nullptr;
  }
  std::vector<Token> toks;
  Issue issue;
  if (!lex(expr, &toks, &issue)) {
    *error = format_issue(expr, issue);
    return nullptr;
  }
  std::unique_ptr<Node> root = parse(expr, std::move(toks), &issue);
  Resolver resolver(env);
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

std::shared_ptr<const Program> compile_in(std::string_view expr,
                                          const std::vector<std::string>& names,
                                          std::string* error) {
  std::string scratch;
  if (error == nullptr) error = &scratch;
  error->clear();
  try {
    return detail::compile_unguarded(expr, error, &names);
  } catch (const std::exception& e) {
    *error = std::string("compilation failed: ") + e.what();
    return nullptr;
  }
}

std::shared_ptr<const Program> compile_in_cached(std::string_view expr,
                                                 const std::vector<std::string>& names,
                                                 std::string* error) {
  static CompileCache<Program> cache(4096);
  std::string key;
  for (const std::string& n : names) key += n + ",";
  key += '\n';
  key += expr;
  return cache.get(
      key, error, [&](std::string_view, std::string* err) { return compile_in(expr, names, err); });
}

const std::vector<std::string>& admission_names(bool params, bool authorizer) {
  static const std::vector<std::string> kSets[4] = {
      {"object", "oldObject", "request", "namespaceObject", "variables"},
      {"object", "oldObject", "request", "namespaceObject", "variables", "authorizer"},
      {"object", "oldObject", "request", "namespaceObject", "variables", "params"},
      {"object", "oldObject", "request", "namespaceObject", "variables", "params", "authorizer"}};
  return kSets[(params ? 2 : 0) + (authorizer ? 1 : 0)];
}

std::shared_ptr<const Program> compile_cached(std::string_view expr, std::string* error) {
  static CompileCache<Program> cache(8192);
  return cache.get(expr, error,
                   [](std::string_view e, std::string* err) { return compile(e, err); });
}

}  // namespace vkube::cel
