// kube's CEL list library (isSorted, sum, min, max, indexOf, lastIndexOf, join) and cel-go's sets
// extension (sets.contains, sets.equivalent, sets.intersects), elements compared with CEL's
// equality and charged to the cost budget.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel::detail {
namespace {

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

}  // namespace

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

namespace {

// cel-go's zero values: what optional.ofNonZeroValue() leaves out.
bool is_zero(const Value& v) {
  switch (v.kind) {
    case Kind::kNull:
      return true;
    case Kind::kBool:
      return !v.b;
    case Kind::kInt:
      return v.i == 0;
    case Kind::kUint:
      return v.u == 0;
    case Kind::kDouble:
      return v.d == 0;
    case Kind::kString:
    case Kind::kBytes:
      return v.str().empty();
    case Kind::kList:
      return list_size(v) == 0;
    case Kind::kMap:
      return map_size(v) == 0;
    case Kind::kOptional:
      return !has_value(v);
    default:
      return false;
  }
}

}  // namespace

Value optional_function(Fn fn, const std::vector<Value>& a) {
  switch (fn) {
    case Fn::kOptOf:
      return make_optional_value(a[0]);
    case Fn::kOptNone:
      return make_optional_value(std::nullopt);
    case Fn::kOptOfNonZero:
      return is_zero(a[0]) ? make_optional_value(std::nullopt) : make_optional_value(a[0]);
    case Fn::kOptHasValue:
      if (a[0].kind != Kind::kOptional) return no_overload();
      return make_bool(has_value(a[0]));
    case Fn::kOptValue:
      if (a[0].kind != Kind::kOptional) return no_overload();
      return has_value(a[0]) ? a[0].items->front() : make_error("optional.none() dereference");
    default:
      return no_overload();
  }
}

}  // namespace vkube::cel::detail
