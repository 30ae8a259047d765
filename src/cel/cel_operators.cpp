// CEL's operators: heterogeneous equality (numbers by value across int, uint and double; kube's
// set and map lists compare as sets), ordering, arithmetic with cel-go's overflow and division
// errors, list concatenation with kube's list-type merge, and `in`.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel::detail {
namespace {

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

}  // namespace

// ---------------------------------------------------------------------------------------------
// Equality and ordering

bool is_number(Kind k) {
  return k == Kind::kInt || k == Kind::kUint || k == Kind::kDouble;
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
    case Kind::kQuantity:  // by value: quantity('1') == quantity('1000m')
      return a.d == b.d;
    case Kind::kIp:  // by address: ip('::1') == ip('0::1')
    case Kind::kUrl:
      return a.str() == b.str();
    case Kind::kCidr:
      return a.str() == b.str() && a.u == b.u;
    case Kind::kDuration:
      return a.i == b.i;
    case Kind::kTimestamp:
      return a.i == b.i && a.u == b.u;
    default:
      return false;
  }
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

// CEL's heterogeneous equality: numbers compare by value across int, uint and double; values of
// different types are unequal.
Eq deep_equal(const Value& a, const Value& b, Ctx& ctx, int depth) {
  if (depth > kMaxValueDepth) return Eq::kError;
  ctx.charge(1);
  if (a.kind == Kind::kList && b.kind == Kind::kList) return lists_equal(a, b, ctx, depth);
  if (a.kind == Kind::kMap && b.kind == Kind::kMap) return maps_equal(a, b, ctx, depth);
  if (a.kind == Kind::kOptional && b.kind == Kind::kOptional) {
    if (has_value(a) != has_value(b)) return Eq::kFalse;
    return has_value(a) ? deep_equal(a.items->front(), b.items->front(), ctx, depth + 1)
                        : Eq::kTrue;
  }
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
    case Kind::kDuration:
      *out = a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
      return std::nullopt;
    case Kind::kTimestamp:
      *out = a.i != b.i ? (a.i < b.i ? -1 : 1) : (a.u < b.u ? -1 : (a.u > b.u ? 1 : 0));
      return std::nullopt;
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

// A timestamp moved by a duration (nanoseconds, added or taken away).
Value shift_timestamp(const Value& t, int64_t ns, bool subtract) {
  int64_t seconds = ns / 1000000000, nanos = ns % 1000000000;
  if (subtract) {
    seconds = -seconds;
    nanos = -nanos;
  }
  return make_timestamp(t.i + seconds, static_cast<int64_t>(t.u) + nanos);
}

Value add(const Value& a, const Value& b, Ctx& ctx) {
  if (a.kind == Kind::kTimestamp && b.kind == Kind::kDuration)
    return shift_timestamp(a, b.i, false);
  if (a.kind == Kind::kDuration && b.kind == Kind::kTimestamp)
    return shift_timestamp(b, a.i, false);
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
    case Kind::kDuration: {
      Value sum = int_arith(Fn::kAdd, a.i, b.i);
      if (sum.is_error()) return sum;
      sum.kind = Kind::kDuration;
      return sum;
    }
    default:
      return no_overload();
  }
}

Value arithmetic(Fn fn, const Value& a, const Value& b, Ctx& ctx) {
  if (fn == Fn::kAdd) return add(a, b, ctx);
  if (fn == Fn::kSub && a.kind == Kind::kTimestamp && b.kind == Kind::kDuration)
    return shift_timestamp(a, b.i, true);
  if (fn == Fn::kSub && a.kind == Kind::kTimestamp && b.kind == Kind::kTimestamp) {
    // The difference in nanoseconds, when a duration holds it (about 292 years either way).
    const long double ns = (static_cast<long double>(a.i) - b.i) * 1e9L +
                           (static_cast<long double>(a.u) - static_cast<long double>(b.u));
    if (ns > 9223372036854775807.0L || ns < -9223372036854775808.0L)
      return make_error("duration overflow");
    Value d;
    d.kind = Kind::kDuration;
    d.i = (a.i - b.i) * 1000000000 + (static_cast<int64_t>(a.u) - static_cast<int64_t>(b.u));
    return d;
  }
  if (a.kind != b.kind) return no_overload();
  switch (a.kind) {
    case Kind::kInt:
      return int_arith(fn, a.i, b.i);
    case Kind::kUint:
      return uint_arith(fn, a.u, b.u);
    case Kind::kDouble:
      return double_arith(fn, a.d, b.d);
    case Kind::kDuration: {
      if (fn != Fn::kSub) return no_overload();
      Value diff = int_arith(Fn::kSub, a.i, b.i);
      if (diff.is_error()) return diff;
      diff.kind = Kind::kDuration;
      return diff;
    }
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

}  // namespace vkube::cel::detail
