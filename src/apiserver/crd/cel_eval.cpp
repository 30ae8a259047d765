// CEL evaluation over JSON: values (JSON-backed lists and maps are read in place, typed by the
// structural schema when one is given), CEL's operators with its error semantics (errors absorbed
// by && / || / all / exists where the other side decides), the standard functions and kube's
// string, list, regex and sets libraries. Errors are worded as cel-go words them; a cost counter
// stops runaway evaluations with "operation cancelled: actual cost limit exceeded".
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "cel.h"

namespace vkube::apiserver::crd::cel {
namespace detail {
namespace {

constexpr std::string_view kNoSuchOverload = "no such overload";
constexpr std::string_view kCostExceeded = "operation cancelled: actual cost limit exceeded";
constexpr int kMaxValueDepth = 1000;  // nesting of values compared or converted

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
  kError
};

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
  bool resource_root = false;  // metadata shows only name and generateName

  std::string_view str() const {
    if (borrowed != nullptr) return *borrowed;
    return owned ? std::string_view(*owned) : std::string_view();
  }
  bool is_error() const { return kind == Kind::kError; }
};

Value make_bool(bool b) {
  Value v;
  v.kind = Kind::kBool;
  v.b = b;
  return v;
}
Value make_int(int64_t i) {
  Value v;
  v.kind = Kind::kInt;
  v.i = i;
  return v;
}
Value make_uint(uint64_t u) {
  Value v;
  v.kind = Kind::kUint;
  v.u = u;
  return v;
}
Value make_double(double d) {
  Value v;
  v.kind = Kind::kDouble;
  v.d = d;
  return v;
}
Value make_text(Kind kind, std::string s) {
  Value v;
  v.kind = kind;
  v.owned = std::make_shared<const std::string>(std::move(s));
  return v;
}
Value make_string(std::string s) {
  return make_text(Kind::kString, std::move(s));
}
Value make_error(std::string_view message) {
  return make_text(Kind::kError, std::string(message));
}
Value no_overload() {
  return make_error(kNoSuchOverload);
}
Value make_list(ValueList items, const json* schema = nullptr) {
  Value v;
  v.kind = Kind::kList;
  v.items = std::make_shared<const ValueList>(std::move(items));
  v.schema = schema;
  return v;
}
Value make_map(ValueMap entries) {
  Value v;
  v.kind = Kind::kMap;
  v.entries = std::make_shared<const ValueMap>(std::move(entries));
  return v;
}

std::string_view type_name(Kind kind) {
  switch (kind) {
    case Kind::kNull:
      return "null_type";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kUint:
      return "uint";
    case Kind::kDouble:
      return "double";
    case Kind::kString:
      return "string";
    case Kind::kBytes:
      return "bytes";
    case Kind::kList:
      return "list";
    case Kind::kMap:
      return "map";
    case Kind::kType:
      return "type";
    case Kind::kError:
      return "error";
  }
  return "";
}

// The evaluation's state: bindings and the cost spent.
struct Ctx {
  const Value* self = nullptr;
  const Value* old_self = nullptr;
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

// ---------------------------------------------------------------------------------------------
// Schemas and JSON-backed values

const json* child(const json* schema, std::string_view key) {
  if (schema == nullptr || !schema->is_object()) return nullptr;
  auto it = schema->find(key);
  return it != schema->end() && it->is_object() ? &*it : nullptr;
}

std::string_view string_field(const json* schema, std::string_view key) {
  if (schema == nullptr || !schema->is_object()) return {};
  auto it = schema->find(key);
  return it != schema->end() && it->is_string()
             ? std::string_view(it->get_ref<const std::string&>())
             : std::string_view();
}

bool flag(const json* schema, std::string_view key) {
  if (schema == nullptr || !schema->is_object()) return false;
  auto it = schema->find(key);
  return it != schema->end() && it->is_boolean() && it->get<bool>();
}

const json* property_schema(const json* schema, std::string_view key) {
  const json* props = child(schema, "properties");
  if (const json* p = child(props, key)) return p;
  return child(schema, "additionalProperties");
}

std::string_view list_type(const Value& list) {
  std::string_view t = string_field(list.schema, "x-kubernetes-list-type");
  return t.empty() ? "atomic" : t;
}

Value number_from_json(const json& j, const json* schema) {
  std::string_view type = string_field(schema, "type");
  if (type == "number") return make_double(j.get<double>());
  if (j.is_number_float()) {
    double d = j.get<double>();
    bool integral = std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.2e18;
    return type == "integer" && integral ? make_int(static_cast<int64_t>(d)) : make_double(d);
  }
  if (j.is_number_unsigned()) {
    auto u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return make_uint(u);
  }
  return make_int(j.get<int64_t>());
}

Value from_json(const json& j, const json* schema) {
  Value v;
  switch (j.type()) {
    case json::value_t::boolean:
      return make_bool(j.get<bool>());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return number_from_json(j, schema);
    case json::value_t::string:
      v.kind = Kind::kString;
      v.borrowed = &j.get_ref<const std::string&>();
      return v;
    case json::value_t::array:
    case json::value_t::object:
      v.kind = j.is_array() ? Kind::kList : Kind::kMap;
      v.node = &j;
      v.schema = schema;
      v.resource_root = j.is_object() && flag(schema, "x-kubernetes-embedded-resource");
      return v;
    default:
      return v;
  }
}

std::size_t list_size(const Value& v) {
  return v.items ? v.items->size() : v.node->size();
}

Value list_at(const Value& v, std::size_t i) {
  if (v.items) return (*v.items)[i];
  return from_json((*v.node)[i], child(v.schema, "items"));
}

std::size_t map_size(const Value& v) {
  return v.entries ? v.entries->size() : v.node->size();
}

// kube's escaping of property names that are not CEL identifiers: "__dash__" is '-', ...
std::string unescape_property(std::string_view name) {
  static constexpr std::string_view kKeywords[] = {
      "true",     "false",   "null",      "in",       "as",  "break",  "const",
      "continue", "else",    "for",       "function", "if",  "import", "let",
      "loop",     "package", "namespace", "return",   "var", "void",   "while"};
  if (name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__") {
    std::string_view inner = name.substr(2, name.size() - 4);
    for (auto k : kKeywords) {
      if (inner == k) return std::string(k);
    }
  }
  static constexpr std::pair<std::string_view, std::string_view> kEscapes[] = {
      {"__underscores__", "__"}, {"__dot__", "."}, {"__dash__", "-"}, {"__slash__", "/"}};
  std::string out;
  for (std::size_t i = 0; i < name.size();) {
    bool replaced = false;
    for (const auto& [from, to] : kEscapes) {
      if (name.substr(i, from.size()) == from) {
        out += to;
        i += from.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(name[i++]);
  }
  return out;
}

// A resource root's metadata as kube's CEL sees it: name and generateName only.
Value narrowed_metadata(const json& metadata) {
  ValueMap entries;
  if (metadata.is_object()) {
    for (const char* key : {"name", "generateName"}) {
      auto it = metadata.find(key);
      if (it != metadata.end() && it->is_string()) {
        entries.emplace_back(make_string(key), make_string(it->get<std::string>()));
      }
    }
  }
  return make_map(std::move(entries));
}

std::optional<Value> json_map_get(const Value& m, std::string_view key) {
  auto it = m.node->find(key);
  if (it == m.node->end()) return std::nullopt;
  if (m.resource_root && key == "metadata") return narrowed_metadata(*it);
  return from_json(*it, property_schema(m.schema, key));
}

bool values_equal_shallow(const Value& a, const Value& b);

std::optional<Value> map_get(const Value& m, const Value& key) {
  if (m.node != nullptr) {
    if (key.kind != Kind::kString) return std::nullopt;
    return json_map_get(m, key.str());
  }
  for (const auto& [k, v] : *m.entries) {
    if (values_equal_shallow(k, key)) return v;
  }
  return std::nullopt;
}

// A field selection: the key itself, else kube's unescaped property name.
std::optional<Value> map_field(const Value& m, std::string_view name) {
  if (m.node == nullptr) {
    Value key;
    key.kind = Kind::kString;
    std::string s(name);
    key.borrowed = &s;
    return map_get(m, key);
  }
  if (auto v = json_map_get(m, name)) return v;
  if (name.find("__") == std::string_view::npos) return std::nullopt;
  return json_map_get(m, unescape_property(name));
}

ValueList map_keys(const Value& m) {
  ValueList keys;
  if (m.entries) {
    for (const auto& e : *m.entries) keys.push_back(e.first);
    return keys;
  }
  for (auto it = m.node->begin(); it != m.node->end(); ++it) {
    Value k;
    k.kind = Kind::kString;
    k.borrowed = &it.key();
    keys.push_back(std::move(k));
  }
  return keys;
}

// ---------------------------------------------------------------------------------------------
// Equality and ordering

bool is_number(Kind k) {
  return k == Kind::kInt || k == Kind::kUint || k == Kind::kDouble;
}

// -1, 0 or 1; 2 when unordered (NaN).
int compare_numbers(const Value& a, const Value& b) {
  auto sign = [](auto x, auto y) { return x < y ? -1 : (x > y ? 1 : 0); };
  if (a.kind == Kind::kDouble || b.kind == Kind::kDouble) {
    double x = a.kind == Kind::kDouble ? a.d
               : a.kind == Kind::kInt  ? static_cast<double>(a.i)
                                       : static_cast<double>(a.u);
    double y = b.kind == Kind::kDouble ? b.d
               : b.kind == Kind::kInt  ? static_cast<double>(b.i)
                                       : static_cast<double>(b.u);
    if (std::isnan(x) || std::isnan(y)) return 2;
    return sign(x, y);
  }
  if (a.kind == Kind::kInt && b.kind == Kind::kInt) return sign(a.i, b.i);
  if (a.kind == Kind::kUint && b.kind == Kind::kUint) return sign(a.u, b.u);
  if (a.kind == Kind::kInt) return a.i < 0 ? -1 : sign(static_cast<uint64_t>(a.i), b.u);
  return b.i < 0 ? 1 : sign(a.u, static_cast<uint64_t>(b.i));
}

// Equality of scalars (map keys); aggregates compare unequal here.
bool values_equal_shallow(const Value& a, const Value& b) {
  if (is_number(a.kind) && is_number(b.kind)) return compare_numbers(a, b) == 0;
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::kNull:
      return true;
    case Kind::kBool:
      return a.b == b.b;
    case Kind::kString:
    case Kind::kBytes:
    case Kind::kType:
      return a.str() == b.str();
    default:
      return false;
  }
}

// Tri-state result of deep equality: a value too deeply nested to compare is an error.
enum class Eq : uint8_t { kFalse, kTrue, kError };

Eq deep_equal(const Value& a, const Value& b, Ctx& ctx, int depth);

std::vector<std::string> map_list_keys(const json* schema) {
  std::vector<std::string> keys;
  if (schema == nullptr) return keys;
  auto it = schema->find("x-kubernetes-list-map-keys");
  if (it == schema->end() || !it->is_array()) return keys;
  for (const auto& k : *it) {
    if (k.is_string()) keys.push_back(k.get<std::string>());
  }
  return keys;
}

// Whether two elements of a list-type=map list have the same key fields.
bool same_map_key(const Value& a, const Value& b, const std::vector<std::string>& keys, Ctx& ctx) {
  if (a.kind != Kind::kMap || b.kind != Kind::kMap) return false;
  for (const auto& k : keys) {
    auto x = map_field(a, k);
    auto y = map_field(b, k);
    if (x.has_value() != y.has_value()) return false;
    if (x && deep_equal(*x, *y, ctx, 0) != Eq::kTrue) return false;
  }
  return true;
}

// Index of an element of `list` equal to `v` (or, for map lists, with v's key), or -1.
int64_t find_element(const Value& list, const Value& v, Ctx& ctx,
                     const std::vector<std::string>* keys, int depth) {
  std::size_t n = list_size(list);
  for (std::size_t i = 0; i < n; ++i) {
    ctx.charge(1);
    Value e = list_at(list, i);
    bool hit = keys != nullptr ? same_map_key(e, v, *keys, ctx)
                               : deep_equal(e, v, ctx, depth + 1) == Eq::kTrue;
    if (hit) return static_cast<int64_t>(i);
  }
  return -1;
}

Eq lists_equal(const Value& a, const Value& b, Ctx& ctx, int depth) {
  std::size_t n = list_size(a);
  if (n != list_size(b)) return Eq::kFalse;
  const Value& typed = a.schema != nullptr ? a : b;
  std::string_view type = list_type(typed);
  if (type == "set" || type == "map") {
    std::vector<std::string> keys = map_list_keys(typed.schema);
    for (std::size_t i = 0; i < n; ++i) {
      Value e = list_at(a, i);
      int64_t j = find_element(b, e, ctx, type == "map" ? &keys : nullptr, depth);
      if (j < 0) return Eq::kFalse;
      if (type == "map") {
        Eq eq = deep_equal(e, list_at(b, static_cast<std::size_t>(j)), ctx, depth + 1);
        if (eq != Eq::kTrue) return eq;
      }
    }
    return Eq::kTrue;
  }
  for (std::size_t i = 0; i < n; ++i) {
    Eq eq = deep_equal(list_at(a, i), list_at(b, i), ctx, depth + 1);
    if (eq != Eq::kTrue) return eq;
  }
  return Eq::kTrue;
}

Eq maps_equal(const Value& a, const Value& b, Ctx& ctx, int depth) {
  if (map_size(a) != map_size(b)) return Eq::kFalse;
  for (const Value& k : map_keys(a)) {
    auto x = map_get(a, k);
    auto y = map_get(b, k);
    if (!x || !y) return Eq::kFalse;
    Eq eq = deep_equal(*x, *y, ctx, depth + 1);
    if (eq != Eq::kTrue) return eq;
  }
  return Eq::kTrue;
}

// CEL's heterogeneous equality: numbers compare by value across int, uint and double; values of
// different types are unequal.
Eq deep_equal(const Value& a, const Value& b, Ctx& ctx, int depth) {
  if (depth > kMaxValueDepth) return Eq::kError;
  ctx.charge(1);
  if (a.kind == Kind::kList && b.kind == Kind::kList) return lists_equal(a, b, ctx, depth);
  if (a.kind == Kind::kMap && b.kind == Kind::kMap) return maps_equal(a, b, ctx, depth);
  return values_equal_shallow(a, b) ? Eq::kTrue : Eq::kFalse;
}

Value equality(const Value& a, const Value& b, Ctx& ctx, bool negate) {
  Eq eq = deep_equal(a, b, ctx, 0);
  if (eq == Eq::kError) return make_error("value nesting exceeds the supported depth");
  return make_bool((eq == Eq::kTrue) != negate);
}

// Ordering of comparable values into *out (-1, 0, 1, 2 for NaN); an error value when the types
// do not compare.
std::optional<Value> compare(const Value& a, const Value& b, int* out) {
  if (is_number(a.kind) && is_number(b.kind)) {
    *out = compare_numbers(a, b);
    return std::nullopt;
  }
  if (a.kind != b.kind) return no_overload();
  switch (a.kind) {
    case Kind::kBool:
      *out = a.b == b.b ? 0 : (a.b ? 1 : -1);
      return std::nullopt;
    case Kind::kString:
    case Kind::kBytes: {
      int c = a.str().compare(b.str());
      *out = c < 0 ? -1 : (c > 0 ? 1 : 0);
      return std::nullopt;
    }
    default:
      return no_overload();
  }
}

Value relational(Fn fn, const Value& a, const Value& b) {
  int c = 0;
  if (auto err = compare(a, b, &c)) return *err;
  if (c == 2) return make_bool(false);
  switch (fn) {
    case Fn::kLt:
      return make_bool(c < 0);
    case Fn::kLe:
      return make_bool(c <= 0);
    case Fn::kGt:
      return make_bool(c > 0);
    default:
      return make_bool(c >= 0);
  }
}

// ---------------------------------------------------------------------------------------------
// Arithmetic

Value int_overflow() {
  return make_error("integer overflow");
}
Value uint_overflow() {
  return make_error("unsigned integer overflow");
}

Value int_arith(Fn fn, int64_t x, int64_t y) {
  int64_t r = 0;
  switch (fn) {
    case Fn::kAdd:
      return __builtin_add_overflow(x, y, &r) ? int_overflow() : make_int(r);
    case Fn::kSub:
      return __builtin_sub_overflow(x, y, &r) ? int_overflow() : make_int(r);
    case Fn::kMul:
      return __builtin_mul_overflow(x, y, &r) ? int_overflow() : make_int(r);
    case Fn::kDiv:
      if (y == 0) return make_error("division by zero");
      if (x == INT64_MIN && y == -1) return int_overflow();
      return make_int(x / y);
    default:
      if (y == 0) return make_error("modulus by zero");
      if (x == INT64_MIN && y == -1) return int_overflow();
      return make_int(x % y);
  }
}

Value uint_arith(Fn fn, uint64_t x, uint64_t y) {
  uint64_t r = 0;
  switch (fn) {
    case Fn::kAdd:
      return __builtin_add_overflow(x, y, &r) ? uint_overflow() : make_uint(r);
    case Fn::kSub:
      return __builtin_sub_overflow(x, y, &r) ? uint_overflow() : make_uint(r);
    case Fn::kMul:
      return __builtin_mul_overflow(x, y, &r) ? uint_overflow() : make_uint(r);
    case Fn::kDiv:
      return y == 0 ? make_error("division by zero") : make_uint(x / y);
    default:
      return y == 0 ? make_error("modulus by zero") : make_uint(x % y);
  }
}

Value double_arith(Fn fn, double x, double y) {
  switch (fn) {
    case Fn::kAdd:
      return make_double(x + y);
    case Fn::kSub:
      return make_double(x - y);
    case Fn::kMul:
      return make_double(x * y);
    case Fn::kDiv:
      return make_double(x / y);
    default:
      return no_overload();
  }
}

// X + Y of lists: kube's list types merge (set: union; map: Y's entries replace X's by key).
Value concat_lists(const Value& a, const Value& b, Ctx& ctx) {
  ValueList out;
  std::size_t na = list_size(a), nb = list_size(b);
  if (!ctx.charge(static_cast<int64_t>(na + nb))) return make_error(kCostExceeded);
  for (std::size_t i = 0; i < na; ++i) out.push_back(list_at(a, i));
  std::string_view type = list_type(a);
  std::vector<std::string> keys = map_list_keys(a.schema);
  for (std::size_t i = 0; i < nb; ++i) {
    Value e = list_at(b, i);
    if (type == "set" || type == "map") {
      Value merged = make_list(out, a.schema);
      int64_t j = find_element(merged, e, ctx, type == "map" ? &keys : nullptr, 0);
      if (j >= 0) {
        if (type == "map") out[static_cast<std::size_t>(j)] = e;
        continue;
      }
    }
    out.push_back(std::move(e));
  }
  return make_list(std::move(out), a.schema);
}

Value add(const Value& a, const Value& b, Ctx& ctx) {
  if (a.kind != b.kind) return no_overload();
  switch (a.kind) {
    case Kind::kInt:
      return int_arith(Fn::kAdd, a.i, b.i);
    case Kind::kUint:
      return uint_arith(Fn::kAdd, a.u, b.u);
    case Kind::kDouble:
      return make_double(a.d + b.d);
    case Kind::kString:
    case Kind::kBytes: {
      std::string s(a.str());
      s.append(b.str());
      ctx.charge(static_cast<int64_t>(s.size() / 16));
      return make_text(a.kind, std::move(s));
    }
    case Kind::kList:
      return concat_lists(a, b, ctx);
    default:
      return no_overload();
  }
}

Value arithmetic(Fn fn, const Value& a, const Value& b, Ctx& ctx) {
  if (fn == Fn::kAdd) return add(a, b, ctx);
  if (a.kind != b.kind) return no_overload();
  switch (a.kind) {
    case Kind::kInt:
      return int_arith(fn, a.i, b.i);
    case Kind::kUint:
      return uint_arith(fn, a.u, b.u);
    case Kind::kDouble:
      return double_arith(fn, a.d, b.d);
    default:
      return no_overload();
  }
}

Value contains_value(const Value& container, const Value& v, Ctx& ctx) {
  if (container.kind == Kind::kList) {
    return make_bool(find_element(container, v, ctx, nullptr, 0) >= 0);
  }
  if (container.kind == Kind::kMap) return make_bool(map_get(container, v).has_value());
  return no_overload();
}

// ---------------------------------------------------------------------------------------------
// Strings

std::u32string to_runes(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) out.push_back(decode_utf8(s, &i));
  return out;
}

std::string from_runes(std::u32string_view r) {
  std::string out;
  for (char32_t c : r) append_utf8(out, c);
  return out;
}

std::string format_int(int64_t i) {
  return std::to_string(i);
}

Value index_error(int64_t i) {
  return make_error("index out of range: " + format_int(i));
}

// Go's %g (cel-go's string(double)): the shortest digits that round-trip, in exponent form when
// the exponent is below -4 or at least 6 ("1e+06", "123456", "1.5e-05").
std::string format_double(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  int exp = std::stoi(sci.substr(e + 1));
  bool negative = mantissa[0] == '-';
  std::string digits;
  for (char c : mantissa) {
    if (c >= '0' && c <= '9') digits.push_back(c);
  }
  std::string out = negative ? "-" : "";
  if (exp < -4 || exp >= 6) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    std::string ex = std::to_string(std::abs(exp));
    if (ex.size() < 2) ex = "0" + ex;
    return out + "e" + (exp < 0 ? "-" : "+") + ex;
  }
  if (exp < 0) return out + "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
  std::size_t int_digits = static_cast<std::size_t>(exp) + 1;
  if (digits.size() <= int_digits)
    return out + digits + std::string(int_digits - digits.size(), '0');
  return out + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

bool is_go_space(char32_t c) {
  switch (c) {
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case ' ':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

Value str_trim(std::string_view s) {
  std::u32string r = to_runes(s);
  std::size_t b = 0, e = r.size();
  while (b < e && is_go_space(r[b])) ++b;
  while (e > b && is_go_space(r[e - 1])) --e;
  return make_string(from_runes(std::u32string_view(r).substr(b, e - b)));
}

Value str_case(std::string_view s, bool upper) {
  std::string out(s);
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return make_string(std::move(out));
}

// Go's strings.SplitN.
Value str_split(std::string_view s, std::string_view sep, int64_t n) {
  ValueList out;
  if (n == 0) return make_list(std::move(out));
  if (sep.empty()) {
    std::u32string r = to_runes(s);
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (n > 0 && static_cast<int64_t>(out.size()) == n - 1) {
        out.push_back(make_string(from_runes(std::u32string_view(r).substr(i))));
        return make_list(std::move(out));
      }
      out.push_back(make_string(from_runes(std::u32string_view(r).substr(i, 1))));
    }
    return make_list(std::move(out));
  }
  std::size_t start = 0;
  while (n < 0 || static_cast<int64_t>(out.size()) < n - 1) {
    std::size_t at = s.find(sep, start);
    if (at == std::string_view::npos) break;
    out.push_back(make_string(std::string(s.substr(start, at - start))));
    start = at + sep.size();
  }
  out.push_back(make_string(std::string(s.substr(start))));
  return make_list(std::move(out));
}

// Go's strings.Replace.
Value str_replace(std::string_view s, std::string_view from, std::string_view to, int64_t n) {
  if (from == to || n == 0) return make_string(std::string(s));
  std::string out;
  if (from.empty()) {
    std::u32string r = to_runes(s);
    int64_t done = 0;
    for (std::size_t i = 0; i <= r.size(); ++i) {
      if (n < 0 || done < n) {
        out += to;
        ++done;
      }
      if (i < r.size()) append_utf8(out, r[i]);
    }
    return make_string(std::move(out));
  }
  std::size_t start = 0;
  for (int64_t done = 0; n < 0 || done < n; ++done) {
    std::size_t at = s.find(from, start);
    if (at == std::string_view::npos) break;
    out.append(s.substr(start, at - start));
    out.append(to);
    start = at + from.size();
  }
  out.append(s.substr(start));
  return make_string(std::move(out));
}

int64_t find_runes(const std::u32string& s, const std::u32string& sub, int64_t from, bool last) {
  int64_t limit = static_cast<int64_t>(s.size()) - static_cast<int64_t>(sub.size());
  if (!last) {
    for (int64_t i = from; i <= limit; ++i) {
      if (s.compare(static_cast<std::size_t>(i), sub.size(), sub) == 0) return i;
    }
    return -1;
  }
  for (int64_t i = std::min(from, limit); i >= 0; --i) {
    if (s.compare(static_cast<std::size_t>(i), sub.size(), sub) == 0) return i;
  }
  return -1;
}

// indexOf / lastIndexOf of cel-go's strings extension, in code points.
Value str_index_of(std::string_view s, std::string_view sub, const std::optional<int64_t>& offset,
                   bool last) {
  std::u32string r = to_runes(s), rs = to_runes(sub);
  int64_t len = static_cast<int64_t>(r.size());
  if (!offset) {
    if (rs.empty()) return make_int(last ? len : 0);
    return make_int(find_runes(r, rs, last ? len : 0, last));
  }
  if (rs.empty()) return make_int(*offset);
  if (*offset < 0 || *offset >= len) return index_error(*offset);
  return make_int(find_runes(r, rs, *offset, last));
}

Value str_substring(std::string_view s, int64_t start, std::optional<int64_t> end) {
  std::u32string r = to_runes(s);
  int64_t len = static_cast<int64_t>(r.size());
  int64_t stop = end.value_or(len);
  if (start < 0 || start > len) return index_error(start);
  if (stop < 0 || stop > len) return index_error(stop);
  if (start > stop) {
    return make_error("invalid substring range. start: " + format_int(start) +
                      ", end: " + format_int(stop));
  }
  return make_string(from_runes(std::u32string_view(r).substr(
      static_cast<std::size_t>(start), static_cast<std::size_t>(stop - start))));
}

Value str_char_at(std::string_view s, int64_t i) {
  std::u32string r = to_runes(s);
  if (i < 0 || i > static_cast<int64_t>(r.size())) return index_error(i);
  if (i == static_cast<int64_t>(r.size())) return make_string("");
  return make_string(from_runes(std::u32string_view(r).substr(static_cast<std::size_t>(i), 1)));
}

std::size_t rune_count(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size();) {
    decode_utf8(s, &i);
    ++n;
  }
  return n;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    std::size_t at = i;
    char32_t c = decode_utf8(s, &i);
    if (c == 0xFFFD && !(i - at == 3 && s.substr(at, 3) == "\xEF\xBF\xBD")) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Conversions

// Go's strconv.ParseInt/ParseUint (base 10, optional sign) and their error text.
template <typename T>
std::optional<Value> parse_integer(std::string_view s, const char* fn, T* out) {
  std::string_view digits = s;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  auto fail = [&](const char* why) {
    return make_error(std::string("strconv.") + fn + ": parsing \"" + std::string(s) +
                      "\": " + why);
  };
  uint64_t mag = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), mag);
  if (digits.empty() || r.ptr != digits.data() + digits.size() ||
      (r.ec != std::errc() && r.ec != std::errc::result_out_of_range)) {
    return fail("invalid syntax");
  }
  bool range = r.ec == std::errc::result_out_of_range;
  if constexpr (std::is_signed_v<T>) {
    range = range || mag > static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0);
    if (range) return fail("value out of range");
    *out = negative ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
  } else {
    if (negative) return fail("invalid syntax");
    if (range) return fail("value out of range");
    *out = mag;
  }
  return std::nullopt;
}

Value parse_double(std::string_view s) {
  std::string lower;
  for (char c : s) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  std::string_view t = lower;
  bool negative = !t.empty() && t[0] == '-';
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) t.remove_prefix(1);
  if (t == "inf" || t == "infinity") {
    return make_double(negative ? -std::numeric_limits<double>::infinity()
                                : std::numeric_limits<double>::infinity());
  }
  if (t == "nan") return make_double(std::numeric_limits<double>::quiet_NaN());
  double d = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), d);
  if (t.empty() || r.ptr != t.data() + t.size() || r.ec == std::errc::invalid_argument) {
    return make_error("strconv.ParseFloat: parsing \"" + std::string(s) + "\": invalid syntax");
  }
  if (r.ec == std::errc::result_out_of_range) {
    return make_error("strconv.ParseFloat: parsing \"" + std::string(s) + "\": value out of range");
  }
  return make_double(negative ? -d : d);
}

Value to_int(const Value& v) {
  switch (v.kind) {
    case Kind::kInt:
      return v;
    case Kind::kUint:
      return v.u > static_cast<uint64_t>(INT64_MAX) ? int_overflow()
                                                    : make_int(static_cast<int64_t>(v.u));
    case Kind::kDouble:
      if (!std::isfinite(v.d) || v.d <= -9223372036854775808.0 || v.d >= 9223372036854775807.0) {
        return int_overflow();
      }
      return make_int(static_cast<int64_t>(v.d));
    case Kind::kString: {
      int64_t i = 0;
      if (auto err = parse_integer(v.str(), "ParseInt", &i)) return *err;
      return make_int(i);
    }
    default:
      return no_overload();
  }
}

Value to_uint(const Value& v) {
  switch (v.kind) {
    case Kind::kUint:
      return v;
    case Kind::kInt:
      return v.i < 0 ? uint_overflow() : make_uint(static_cast<uint64_t>(v.i));
    case Kind::kDouble:
      if (!std::isfinite(v.d) || v.d < 0 || v.d >= 18446744073709551616.0) return uint_overflow();
      return make_uint(static_cast<uint64_t>(v.d));
    case Kind::kString: {
      uint64_t u = 0;
      if (auto err = parse_integer(v.str(), "ParseUint", &u)) return *err;
      return make_uint(u);
    }
    default:
      return no_overload();
  }
}

Value to_double(const Value& v) {
  switch (v.kind) {
    case Kind::kDouble:
      return v;
    case Kind::kInt:
      return make_double(static_cast<double>(v.i));
    case Kind::kUint:
      return make_double(static_cast<double>(v.u));
    case Kind::kString:
      return parse_double(v.str());
    default:
      return no_overload();
  }
}

Value to_string(const Value& v) {
  switch (v.kind) {
    case Kind::kString:
      return v;
    case Kind::kInt:
      return make_string(format_int(v.i));
    case Kind::kUint:
      return make_string(std::to_string(v.u));
    case Kind::kDouble:
      return make_string(format_double(v.d));
    case Kind::kBool:
      return make_string(v.b ? "true" : "false");
    case Kind::kBytes:
      if (!valid_utf8(v.str()))
        return make_error("invalid UTF-8 in bytes, cannot convert to string");
      return make_string(std::string(v.str()));
    case Kind::kType:
      return make_string(std::string(v.str()));
    default:
      return no_overload();
  }
}

Value to_bool(const Value& v) {
  if (v.kind == Kind::kBool) return v;
  if (v.kind != Kind::kString) return no_overload();
  std::string_view s = v.str();
  if (s == "1" || s == "t" || s == "true" || s == "TRUE" || s == "True") return make_bool(true);
  if (s == "0" || s == "f" || s == "false" || s == "FALSE" || s == "False") return make_bool(false);
  return make_error("type conversion error from 'string' to 'bool'");
}

Value to_bytes(const Value& v) {
  if (v.kind == Kind::kBytes) return v;
  if (v.kind == Kind::kString) return make_text(Kind::kBytes, std::string(v.str()));
  return no_overload();
}

// ---------------------------------------------------------------------------------------------
// Lists (kube's list library) and sets (cel-go's sets extension)

Value list_is_sorted(const Value& l, Ctx& ctx) {
  std::size_t n = list_size(l);
  ctx.charge(static_cast<int64_t>(n));
  for (std::size_t i = 1; i < n; ++i) {
    int c = 0;
    if (auto err = compare(list_at(l, i - 1), list_at(l, i), &c)) return *err;
    if (c == 1) return make_bool(false);
  }
  return make_bool(true);
}

Value list_sum(const Value& l, Ctx& ctx) {
  std::size_t n = list_size(l);
  ctx.charge(static_cast<int64_t>(n));
  if (n == 0) return make_int(0);
  Value acc = list_at(l, 0);
  if (!is_number(acc.kind)) return no_overload();
  for (std::size_t i = 1; i < n; ++i) {
    acc = add(acc, list_at(l, i), ctx);
    if (acc.is_error()) return acc;
  }
  return acc;
}

Value list_extreme(const Value& l, Ctx& ctx, bool want_max) {
  std::size_t n = list_size(l);
  ctx.charge(static_cast<int64_t>(n));
  if (n == 0) return make_error(std::string(want_max ? "max" : "min") + " called on empty list");
  Value best = list_at(l, 0);
  if (!is_number(best.kind) && best.kind != Kind::kString && best.kind != Kind::kBool &&
      best.kind != Kind::kBytes) {
    return no_overload();
  }
  for (std::size_t i = 1; i < n; ++i) {
    Value e = list_at(l, i);
    int c = 0;
    if (auto err = compare(best, e, &c)) return *err;
    if ((want_max && c == -1) || (!want_max && c == 1)) best = std::move(e);
  }
  return best;
}

Value list_index_of(const Value& l, const Value& v, Ctx& ctx, bool last) {
  std::size_t n = list_size(l);
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t i = last ? n - 1 - k : k;
    ctx.charge(1);
    if (deep_equal(list_at(l, i), v, ctx, 0) == Eq::kTrue) return make_int(static_cast<int64_t>(i));
  }
  return make_int(-1);
}

Value sets_function(Fn fn, const Value& a, const Value& b, Ctx& ctx) {
  if (a.kind != Kind::kList || b.kind != Kind::kList) return no_overload();
  auto all_in = [&](const Value& x, const Value& y) {
    std::size_t n = list_size(x);
    for (std::size_t i = 0; i < n; ++i) {
      if (find_element(y, list_at(x, i), ctx, nullptr, 0) < 0) return false;
    }
    return true;
  };
  if (fn == Fn::kSetsContains) return make_bool(all_in(b, a));
  if (fn == Fn::kSetsEquivalent) return make_bool(all_in(b, a) && all_in(a, b));
  std::size_t n = list_size(b);
  for (std::size_t i = 0; i < n; ++i) {
    if (find_element(a, list_at(b, i), ctx, nullptr, 0) >= 0) return make_bool(true);
  }
  return make_bool(false);
}

Value join(const Value& l, std::string_view sep) {
  std::string out;
  std::size_t n = list_size(l);
  for (std::size_t i = 0; i < n; ++i) {
    Value e = list_at(l, i);
    if (e.kind != Kind::kString) return no_overload();
    if (i > 0) out.append(sep);
    out.append(e.str());
  }
  return make_string(std::move(out));
}

// ---------------------------------------------------------------------------------------------
// Regular expressions

std::shared_ptr<const Regex> cached_regex(std::string_view pattern, std::string* error) {
  struct Entry {
    std::shared_ptr<const Regex> re;
    std::string error;
  };
  constexpr std::size_t kMaxEntries = 1024;
  static std::mutex mu;
  static std::unordered_map<std::string, Entry> cache;
  std::string key(pattern);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      *error = it->second.error;
      return it->second.re;
    }
  }
  Entry e;
  e.re = Regex::compile(pattern, &e.error);
  *error = e.error;
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kMaxEntries) cache.clear();
  cache.emplace(std::move(key), e);
  return e.re;
}

// The node's precompiled pattern, or the pattern argument compiled now; an error value if bad.
std::shared_ptr<const Regex> regex_for(const Node& n, const Value& pattern, Value* err) {
  if (n.regex) return n.regex;
  std::string error;
  auto re = cached_regex(pattern.str(), &error);
  if (!re) *err = make_error(error);
  return re;
}

// Regex work in cost units: the input bytes stepped over times the program's size, scaled.
bool charge_regex(const Regex& re, std::size_t bytes, Ctx& ctx) {
  return ctx.charge(1 + static_cast<int64_t>(bytes * re.program_size() / 32));
}

// Go's FindAllString: successive non-overlapping matches, an empty match abutting the previous
// match skipped; at most `limit` (all when negative).
Value find_all(const Regex& re, std::string_view text, int64_t limit, Ctx& ctx) {
  ValueList out;
  std::size_t pos = 0;
  std::size_t prev_end = std::string_view::npos;
  while (pos <= text.size() && (limit < 0 || static_cast<int64_t>(out.size()) < limit)) {
    std::size_t b = 0, e = 0, scanned = 0;
    bool found = re.find(text, pos, &b, &e, &scanned);
    if (!charge_regex(re, scanned, ctx)) return make_error(kCostExceeded);
    if (!found) break;
    if (!(e == b && b == prev_end)) out.push_back(make_string(std::string(text.substr(b, e - b))));
    prev_end = e;
    pos = e;
    if (e == b) {
      if (b >= text.size()) break;
      decode_utf8(text, &pos);
    }
  }
  return make_list(std::move(out));
}

Value regex_function(const Node& n, const std::vector<Value>& a, Ctx& ctx) {
  if (a[0].kind != Kind::kString || a[1].kind != Kind::kString) return no_overload();
  Value err;
  auto re = regex_for(n, a[1], &err);
  if (!re) return err;
  std::string_view text = a[0].str();
  if (n.fn == Fn::kFindAll) {
    if (a.size() > 2 && a[2].kind != Kind::kInt) return no_overload();
    return find_all(*re, text, a.size() > 2 ? a[2].i : -1, ctx);
  }
  if (!charge_regex(*re, text.size(), ctx)) return make_error(kCostExceeded);
  if (n.fn == Fn::kMatches) return make_bool(re->search(text));
  std::size_t b = 0, e = 0;
  return make_string(re->find(text, 0, &b, &e) ? std::string(text.substr(b, e - b)) : "");
}

// ---------------------------------------------------------------------------------------------
// Function dispatch

std::optional<int64_t> int_arg(const std::vector<Value>& a, std::size_t i) {
  if (i >= a.size()) return std::nullopt;
  return a[i].kind == Kind::kInt ? std::optional<int64_t>(a[i].i) : std::nullopt;
}

Value size_of(const Value& v) {
  switch (v.kind) {
    case Kind::kString:
      return make_int(static_cast<int64_t>(rune_count(v.str())));
    case Kind::kBytes:
      return make_int(static_cast<int64_t>(v.str().size()));
    case Kind::kList:
      return make_int(static_cast<int64_t>(list_size(v)));
    case Kind::kMap:
      return make_int(static_cast<int64_t>(map_size(v)));
    default:
      return no_overload();
  }
}

bool all_strings(const std::vector<Value>& a, std::size_t from = 0) {
  for (std::size_t i = from; i < a.size(); ++i) {
    if (a[i].kind != Kind::kString) return false;
  }
  return true;
}

Value string_predicate(Fn fn, const std::vector<Value>& a) {
  if (!all_strings(a)) return no_overload();
  std::string_view s = a[0].str(), t = a[1].str();
  switch (fn) {
    case Fn::kContains:
      return make_bool(s.find(t) != std::string_view::npos);
    case Fn::kStartsWith:
      return make_bool(s.substr(0, t.size()) == t);
    default:
      return make_bool(s.size() >= t.size() && s.substr(s.size() - t.size()) == t);
  }
}

Value string_library(Fn fn, const std::vector<Value>& a) {
  if (a[0].kind != Kind::kString) return no_overload();
  std::string_view s = a[0].str();
  switch (fn) {
    case Fn::kLowerAscii:
      return str_case(s, false);
    case Fn::kUpperAscii:
      return str_case(s, true);
    case Fn::kTrim:
      return str_trim(s);
    case Fn::kSplit:
      if (a[1].kind != Kind::kString || (a.size() > 2 && !int_arg(a, 2))) return no_overload();
      return str_split(s, a[1].str(), int_arg(a, 2).value_or(-1));
    case Fn::kReplace:
      if (!all_strings(a, 1) && !(a.size() == 4 && a[1].kind == Kind::kString &&
                                  a[2].kind == Kind::kString && int_arg(a, 3))) {
        return no_overload();
      }
      return str_replace(s, a[1].str(), a[2].str(), int_arg(a, 3).value_or(-1));
    case Fn::kSubstring:
      if (!int_arg(a, 1) || (a.size() > 2 && !int_arg(a, 2))) return no_overload();
      return str_substring(s, *int_arg(a, 1), int_arg(a, 2));
    case Fn::kCharAt:
      if (!int_arg(a, 1)) return no_overload();
      return str_char_at(s, *int_arg(a, 1));
    default:  // indexOf, lastIndexOf
      if (a[1].kind != Kind::kString || (a.size() > 2 && !int_arg(a, 2))) return no_overload();
      return str_index_of(s, a[1].str(), int_arg(a, 2), fn == Fn::kLastIndexOf);
  }
}

Value list_library(Fn fn, const std::vector<Value>& a, Ctx& ctx) {
  const Value& l = a[0];
  if (l.kind != Kind::kList) return no_overload();
  switch (fn) {
    case Fn::kIsSorted:
      return list_is_sorted(l, ctx);
    case Fn::kSum:
      return list_sum(l, ctx);
    case Fn::kMin:
      return list_extreme(l, ctx, false);
    case Fn::kMax:
      return list_extreme(l, ctx, true);
    case Fn::kJoin:
      if (a.size() > 1 && a[1].kind != Kind::kString) return no_overload();
      return join(l, a.size() > 1 ? a[1].str() : std::string_view());
    default:  // indexOf, lastIndexOf
      if (a.size() != 2) return no_overload();
      return list_index_of(l, a[1], ctx, fn == Fn::kLastIndexOf);
  }
}

Value call_function(const Node& n, const std::vector<Value>& a, Ctx& ctx) {
  switch (n.fn) {
    case Fn::kAdd:
    case Fn::kSub:
    case Fn::kMul:
    case Fn::kDiv:
    case Fn::kMod:
      return arithmetic(n.fn, a[0], a[1], ctx);
    case Fn::kEq:
      return equality(a[0], a[1], ctx, false);
    case Fn::kNe:
      return equality(a[0], a[1], ctx, true);
    case Fn::kLt:
    case Fn::kLe:
    case Fn::kGt:
    case Fn::kGe:
      return relational(n.fn, a[0], a[1]);
    case Fn::kIn:
      return contains_value(a[1], a[0], ctx);
    case Fn::kSize:
      return size_of(a[0]);
    case Fn::kContains:
    case Fn::kStartsWith:
    case Fn::kEndsWith:
      return string_predicate(n.fn, a);
    case Fn::kMatches:
    case Fn::kFind:
    case Fn::kFindAll:
      return regex_function(n, a, ctx);
    case Fn::kToInt:
      return to_int(a[0]);
    case Fn::kToUint:
      return to_uint(a[0]);
    case Fn::kToDouble:
      return to_double(a[0]);
    case Fn::kToString:
      return to_string(a[0]);
    case Fn::kToBool:
      return to_bool(a[0]);
    case Fn::kToBytes:
      return to_bytes(a[0]);
    case Fn::kDyn:
      return a[0];
    case Fn::kType:
      return make_text(Kind::kType, std::string(type_name(a[0].kind)));
    case Fn::kIndexOf:
    case Fn::kLastIndexOf:
      return a[0].kind == Kind::kList ? list_library(n.fn, a, ctx) : string_library(n.fn, a);
    case Fn::kLowerAscii:
    case Fn::kUpperAscii:
    case Fn::kTrim:
    case Fn::kSplit:
    case Fn::kReplace:
    case Fn::kSubstring:
    case Fn::kCharAt:
      if (a[0].kind == Kind::kString) ctx.charge(static_cast<int64_t>(a[0].str().size() / 16));
      return string_library(n.fn, a);
    case Fn::kJoin:
    case Fn::kIsSorted:
    case Fn::kSum:
    case Fn::kMin:
    case Fn::kMax:
      return list_library(n.fn, a, ctx);
    case Fn::kSetsContains:
    case Fn::kSetsEquivalent:
    case Fn::kSetsIntersects:
      return sets_function(n.fn, a[0], a[1], ctx);
    case Fn::kNone:
      break;
  }
  return no_overload();
}

// ---------------------------------------------------------------------------------------------
// The tree walk

Value eval(const Node& n, Ctx& ctx);

Value literal_value(const Node& n) {
  const Literal& lit = n.lit;
  Value v;
  switch (lit.kind) {
    case LitKind::kNull:
      return v;
    case LitKind::kBool:
      return make_bool(lit.b);
    case LitKind::kInt:
      return make_int(lit.i);
    case LitKind::kUint:
      return make_uint(lit.u);
    case LitKind::kDouble:
      return make_double(lit.d);
    case LitKind::kString:
      v.kind = Kind::kString;
      break;
    case LitKind::kBytes:
      v.kind = Kind::kBytes;
      break;
    case LitKind::kType:
      v.kind = Kind::kType;
      break;
  }
  v.borrowed = &lit.s;
  return v;
}

Value identifier(const Node& n, Ctx& ctx) {
  if (n.slot == kSlotSelf) return *ctx.self;
  if (n.slot == kSlotOldSelf) {
    return ctx.old_self != nullptr ? *ctx.old_self : make_error("no such attribute: oldSelf");
  }
  auto slot = static_cast<std::size_t>(n.slot);
  return slot < ctx.vars.size() ? ctx.vars[slot] : make_error("no such attribute: " + n.name);
}

Value select(const Node& n, Ctx& ctx) {
  Value target = eval(*n.args[0], ctx);
  if (target.is_error()) return target;
  if (target.kind != Kind::kMap) return no_overload();
  auto v = map_field(target, n.name);
  if (n.kind == NodeKind::kHas) return make_bool(v.has_value());
  return v ? *v : make_error("no such key: " + n.name);
}

std::string key_text(const Value& k) {
  switch (k.kind) {
    case Kind::kInt:
      return format_int(k.i);
    case Kind::kUint:
      return std::to_string(k.u);
    case Kind::kDouble:
      return format_double(k.d);
    case Kind::kBool:
      return k.b ? "true" : "false";
    default:
      return std::string(k.str());
  }
}

Value index_list(const Value& l, const Value& k) {
  int64_t i = 0;
  if (k.kind == Kind::kInt) {
    i = k.i;
  } else if (k.kind == Kind::kUint && k.u <= static_cast<uint64_t>(INT64_MAX)) {
    i = static_cast<int64_t>(k.u);
  } else if (k.kind == Kind::kDouble && std::trunc(k.d) == k.d && std::fabs(k.d) < 9.2e18) {
    i = static_cast<int64_t>(k.d);
  } else if (k.kind == Kind::kDouble) {
    return make_error("unsupported index value " + format_double(k.d) + " in list");
  } else {
    return make_error("unsupported index type '" + std::string(type_name(k.kind)) + "' in list");
  }
  auto size = static_cast<int64_t>(list_size(l));
  if (i < 0 || i >= size) {
    return make_error("index '" + format_int(i) + "' out of range in list size '" +
                      format_int(size) + "'");
  }
  return list_at(l, static_cast<std::size_t>(i));
}

Value index(const Node& n, Ctx& ctx) {
  Value target = eval(*n.args[0], ctx);
  if (target.is_error()) return target;
  Value key = eval(*n.args[1], ctx);
  if (key.is_error()) return key;
  if (target.kind == Kind::kList) return index_list(target, key);
  if (target.kind != Kind::kMap) return no_overload();
  auto v = map_get(target, key);
  return v ? *v : make_error("no such key: " + key_text(key));
}

Value call(const Node& n, Ctx& ctx) {
  std::vector<Value> args;
  args.reserve(n.args.size());
  for (const auto& a : n.args) {
    args.push_back(eval(*a, ctx));
    if (args.back().is_error()) return args.back();
  }
  return call_function(n, args, ctx);
}

Value list_literal(const Node& n, Ctx& ctx) {
  ValueList items;
  items.reserve(n.args.size());
  for (const auto& a : n.args) {
    items.push_back(eval(*a, ctx));
    if (items.back().is_error()) return items.back();
  }
  return make_list(std::move(items));
}

Value map_literal(const Node& n, Ctx& ctx) {
  ValueMap entries;
  for (std::size_t i = 0; i + 1 < n.args.size(); i += 2) {
    Value k = eval(*n.args[i], ctx);
    if (k.is_error()) return k;
    Value v = eval(*n.args[i + 1], ctx);
    if (v.is_error()) return v;
    if (k.kind != Kind::kString && k.kind != Kind::kInt && k.kind != Kind::kUint &&
        k.kind != Kind::kBool) {
      return make_error("unsupported key type");
    }
    for (const auto& e : entries) {
      if (values_equal_shallow(e.first, k)) return make_error("Failed with repeated key");
    }
    entries.emplace_back(std::move(k), std::move(v));
  }
  return make_map(std::move(entries));
}

// && and ||: the side that decides wins over an error on the other side (CEL's commutative
// semantics); otherwise the error surfaces.
Value logical(const Node& n, Ctx& ctx) {
  bool is_and = n.kind == NodeKind::kAnd;
  Value left = eval(*n.args[0], ctx);
  if (left.kind == Kind::kBool && left.b != is_and) return left;
  Value right = eval(*n.args[1], ctx);
  if (right.kind == Kind::kBool && right.b != is_and) return right;
  if (left.is_error()) return left;
  if (right.is_error()) return right;
  if (left.kind != Kind::kBool || right.kind != Kind::kBool) return no_overload();
  return make_bool(is_and);
}

Value negate(const Node& n, Ctx& ctx) {
  Value v = eval(*n.args[0], ctx);
  if (v.is_error()) return v;
  if (n.kind == NodeKind::kNot) return v.kind == Kind::kBool ? make_bool(!v.b) : no_overload();
  if (v.kind == Kind::kInt) return v.i == INT64_MIN ? int_overflow() : make_int(-v.i);
  if (v.kind == Kind::kDouble) return make_double(-v.d);
  return no_overload();
}

Value conditional(const Node& n, Ctx& ctx) {
  Value c = eval(*n.args[0], ctx);
  if (c.is_error()) return c;
  if (c.kind != Kind::kBool) return no_overload();
  return eval(*n.args[c.b ? 1 : 2], ctx);
}

// The elements a comprehension ranges over: a list's items or a map's keys.
bool comprehension_range(const Value& range, ValueList* keys, std::size_t* count) {
  if (range.kind == Kind::kList) {
    *count = list_size(range);
    return true;
  }
  if (range.kind == Kind::kMap) {
    *keys = map_keys(range);
    *count = keys->size();
    return true;
  }
  return false;
}

Value comprehension(const Node& n, Ctx& ctx) {
  Value range = eval(*n.args[0], ctx);
  if (range.is_error()) return range;
  ValueList keys;
  std::size_t count = 0;
  if (!comprehension_range(range, &keys, &count)) return no_overload();
  auto slot = static_cast<std::size_t>(n.slot);
  if (ctx.vars.size() <= slot) ctx.vars.resize(slot + 1);
  bool quantifier = n.macro == Macro::kAll || n.macro == Macro::kExists;
  bool decisive = n.macro == Macro::kExists;  // the predicate value that ends the loop
  Value deferred;                             // an error a later decisive value may still absorb
  int64_t matches = 0;
  ValueList out;
  for (std::size_t i = 0; i < count; ++i) {
    if (!ctx.charge(1)) return make_error(kCostExceeded);
    ctx.vars[slot] = range.kind == Kind::kList ? list_at(range, i) : keys[i];
    Value p = eval(*n.args[1], ctx);
    if (quantifier) {
      if (p.kind == Kind::kBool && p.b == decisive) return p;
      if (p.kind != Kind::kBool && !deferred.is_error())
        deferred = p.is_error() ? p : no_overload();
      continue;
    }
    if (p.is_error()) return p;
    if (n.macro == Macro::kMap && n.args.size() == 2) {
      out.push_back(std::move(p));
      continue;
    }
    if (p.kind != Kind::kBool) return no_overload();
    if (!p.b) continue;
    if (n.macro == Macro::kExistsOne) {
      ++matches;
    } else if (n.macro == Macro::kFilter) {
      out.push_back(ctx.vars[slot]);
    } else {  // map with a filter
      Value t = eval(*n.args[2], ctx);
      if (t.is_error()) return t;
      out.push_back(std::move(t));
    }
  }
  if (quantifier) return deferred.is_error() ? deferred : make_bool(!decisive);
  if (n.macro == Macro::kExistsOne) return make_bool(matches == 1);
  return make_list(std::move(out));
}

Value eval(const Node& n, Ctx& ctx) {
  if (!ctx.charge(1)) return make_error(kCostExceeded);
  switch (n.kind) {
    case NodeKind::kLiteral:
      return literal_value(n);
    case NodeKind::kIdent:
      return identifier(n, ctx);
    case NodeKind::kSelect:
    case NodeKind::kHas:
      return select(n, ctx);
    case NodeKind::kIndex:
      return index(n, ctx);
    case NodeKind::kCall:
      return call(n, ctx);
    case NodeKind::kList:
      return list_literal(n, ctx);
    case NodeKind::kMap:
      return map_literal(n, ctx);
    case NodeKind::kAnd:
    case NodeKind::kOr:
      return logical(n, ctx);
    case NodeKind::kNot:
    case NodeKind::kNeg:
      return negate(n, ctx);
    case NodeKind::kCond:
      return conditional(n, ctx);
    case NodeKind::kComprehension:
      return comprehension(n, ctx);
  }
  return no_overload();
}

// ---------------------------------------------------------------------------------------------
// Results back to JSON

json to_json(const Value& v, int depth);

json map_to_json(const Value& v, int depth) {
  json out = json::object();
  for (const Value& k : map_keys(v)) {
    auto e = map_get(v, k);
    if (e) out[key_text(k)] = to_json(*e, depth + 1);
  }
  return out;
}

json to_json(const Value& v, int depth) {
  if (depth > kMaxValueDepth) throw std::runtime_error("value nesting exceeds the supported depth");
  switch (v.kind) {
    case Kind::kNull:
      return nullptr;
    case Kind::kBool:
      return v.b;
    case Kind::kInt:
      return v.i;
    case Kind::kUint:
      return v.u;
    case Kind::kDouble:
      return v.d;
    case Kind::kString:
    case Kind::kBytes:
    case Kind::kType:
    case Kind::kError:
      return std::string(v.str());
    case Kind::kList: {
      if (v.node != nullptr) return *v.node;
      json out = json::array();
      for (const Value& e : *v.items) out.push_back(to_json(e, depth + 1));
      return out;
    }
    case Kind::kMap:
      if (v.node != nullptr && !v.resource_root) return *v.node;
      return map_to_json(v, depth);
  }
  return nullptr;
}

}  // namespace
}  // namespace detail

EvalResult evaluate(const Program& program, const json& self, const json* old_self,
                    const EvalOptions& options) {
  EvalResult result;
  try {
    detail::Value self_value = detail::from_json(self, options.schema);
    self_value.resource_root = options.resource_root && self.is_object();
    detail::Value old_value;
    if (old_self != nullptr) {
      old_value = detail::from_json(*old_self, options.schema);
      old_value.resource_root = options.resource_root && old_self->is_object();
    }
    detail::Ctx ctx;
    ctx.self = &self_value;
    ctx.old_self = old_self != nullptr ? &old_value : nullptr;
    ctx.limit = options.cost_limit;
    detail::Value v = detail::eval(program.root(), ctx);
    result.cost = ctx.cost;
    if (ctx.exceeded) {
      result.error = std::string(detail::kCostExceeded);
      result.cost_exceeded = true;
    } else if (v.is_error()) {
      result.error = std::string(v.str());
    } else {
      result.value = detail::to_json(v, 0);
      result.ok = true;
    }
  } catch (const std::exception& e) {
    result.ok = false;
    result.error = e.what();
  }
  return result;
}

}  // namespace vkube::apiserver::crd::cel
