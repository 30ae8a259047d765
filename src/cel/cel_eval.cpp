// CEL evaluation: the tree walk over a compiled Program with CEL's error semantics (errors
// absorbed by && / || / all / exists where the other side decides), comprehensions, field and
// index selection, and dispatch of calls to the operators and function libraries. Every node
// is charged to a cost counter that stops runaway evaluations with "operation cancelled: actual
// cost limit exceeded".
#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel {
namespace detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Function dispatch

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
      if (a[0].kind == Kind::kObject)
        return make_text(Kind::kType, std::string(authz_type_name(*a[0].object)));
      if (a[0].kind == Kind::kQuantity) return make_text(Kind::kType, "kubernetes.Quantity");
      if (a[0].kind == Kind::kIp) return make_text(Kind::kType, "net.IP");
      if (a[0].kind == Kind::kUrl) return make_text(Kind::kType, "kubernetes.URL");
      if (a[0].kind == Kind::kDuration) return make_text(Kind::kType, "google.protobuf.Duration");
      if (a[0].kind == Kind::kTimestamp) return make_text(Kind::kType, "google.protobuf.Timestamp");
      if (a[0].kind == Kind::kCidr) return make_text(Kind::kType, "net.CIDR");
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
    case Fn::kAuthzPath:
    case Fn::kAuthzGroup:
    case Fn::kAuthzServiceAccount:
    case Fn::kAuthzResource:
    case Fn::kAuthzSubresource:
    case Fn::kAuthzNamespace:
    case Fn::kAuthzName:
    case Fn::kAuthzCheck:
    case Fn::kAuthzAllowed:
    case Fn::kAuthzReason:
    case Fn::kAuthzErrored:
    case Fn::kAuthzError:
    case Fn::kAuthzFieldSelector:
    case Fn::kAuthzLabelSelector:
      return authz_function(n.fn, a, ctx);
    case Fn::kOptOf:
    case Fn::kOptNone:
    case Fn::kOptOfNonZero:
    case Fn::kOptHasValue:
    case Fn::kOptValue:
      return optional_function(n.fn, a);
    case Fn::kQuantity:
    case Fn::kIsQuantity:
    case Fn::kQSign:
    case Fn::kQIsInteger:
    case Fn::kQAsInteger:
    case Fn::kQAsFloat:
    case Fn::kQAdd:
    case Fn::kQSub:
    case Fn::kQIsLessThan:
    case Fn::kQIsGreaterThan:
    case Fn::kQCompareTo:
      return quantity_function(n.fn, a);
    case Fn::kFormat:
    case Fn::kStringsQuote:
      return format_function(n.fn, a, ctx);
    case Fn::kIp:
    case Fn::kIsIp:
    case Fn::kIpIsCanonical:
    case Fn::kCidr:
    case Fn::kIsCidr:
    case Fn::kIpFamily:
    case Fn::kIpIsUnspecified:
    case Fn::kIpIsLoopback:
    case Fn::kIpIsLinkLocalMulticast:
    case Fn::kIpIsLinkLocalUnicast:
    case Fn::kIpIsGlobalUnicast:
    case Fn::kCidrContainsIp:
    case Fn::kCidrContainsCidr:
    case Fn::kCidrMasked:
    case Fn::kCidrPrefixLength:
      return net_function(n.fn, a);
    case Fn::kUrl:
    case Fn::kIsUrl:
    case Fn::kUrlScheme:
    case Fn::kUrlHost:
    case Fn::kUrlHostname:
    case Fn::kUrlPort:
    case Fn::kUrlEscapedPath:
    case Fn::kUrlQuery:
      return url_function(n.fn, a);
    case Fn::kGetHours:
    case Fn::kGetMinutes:
    case Fn::kGetSeconds:
    case Fn::kGetMilliseconds:
      if (!a.empty() && a[0].kind == Kind::kTimestamp) return timestamp_function(n.fn, a);
      if (a.size() != 1) return no_overload();
      return duration_function(n.fn, a);
    case Fn::kDuration:
      return duration_function(n.fn, a);
    case Fn::kTimestamp:
    case Fn::kGetFullYear:
    case Fn::kGetMonth:
    case Fn::kGetDate:
    case Fn::kGetDayOfMonth:
    case Fn::kGetDayOfWeek:
    case Fn::kGetDayOfYear:
      return timestamp_function(n.fn, a);
    case Fn::kOptOrValue:
    case Fn::kOptOr:  // evaluated lazily by or_value()
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
  if (n.slot == kSlotAuthorizer) return authorizer_value(ctx);
  if (n.slot == kSlotOldSelf) {
    return ctx.old_self != nullptr ? *ctx.old_self : make_error("no such attribute: oldSelf");
  }
  auto slot = static_cast<std::size_t>(n.slot);
  return slot < ctx.vars.size() ? ctx.vars[slot] : make_error("no such attribute: " + n.name);
}

// The value an optional selection or index reads from: an optional's value (a selection on an
// optional is optional too, as cel-go chains them), or nullopt when there is none.
std::optional<Value> optional_target(Value target) {
  if (target.kind != Kind::kOptional) return target;
  if (!has_value(target)) return std::nullopt;
  return target.items->front();
}

Value select(const Node& n, Ctx& ctx) {
  Value target = eval(*n.args[0], ctx);
  if (target.is_error()) return target;
  if (n.kind == NodeKind::kSelect && (n.optional || target.kind == Kind::kOptional)) {
    auto inner = optional_target(std::move(target));
    if (!inner) return make_optional_value(std::nullopt);
    if (inner->kind != Kind::kMap) return no_overload();
    return make_optional_value(map_field(*inner, n.name));
  }
  if (target.kind == Kind::kObject && n.kind == NodeKind::kSelect)
    return authz_field(target, n.name);
  if (target.kind != Kind::kMap) return no_overload();
  auto v = map_field(target, n.name);
  if (n.kind == NodeKind::kHas) return make_bool(v.has_value());
  return v ? *v : make_error("no such key: " + n.name);
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
  if (n.optional || target.kind == Kind::kOptional) {
    auto inner = optional_target(std::move(target));
    if (!inner) return make_optional_value(std::nullopt);
    if (inner->kind == Kind::kList) {
      Value v = index_list(*inner, key);
      if (!v.is_error()) return make_optional_value(std::move(v));
      // Out of range is absence; an index of the wrong type stays an error.
      return v.str().find("out of range") != std::string_view::npos
                 ? make_optional_value(std::nullopt)
                 : v;
    }
    if (inner->kind != Kind::kMap) return no_overload();
    return make_optional_value(map_get(*inner, key));
  }
  if (target.kind == Kind::kList) return index_list(target, key);
  if (target.kind != Kind::kMap) return no_overload();
  auto v = map_get(target, key);
  return v ? *v : make_error("no such key: " + key_text(key));
}

// o.orValue(v) and o.or(p): the argument is evaluated only when o has no value.
Value or_value(const Node& n, Ctx& ctx) {
  Value o = eval(*n.args[0], ctx);
  if (o.is_error()) return o;
  if (o.kind != Kind::kOptional) return no_overload();
  if (has_value(o)) return n.fn == Fn::kOptOr ? o : o.items->front();
  Value other = eval(*n.args[1], ctx);
  if (other.is_error()) return other;
  if (n.fn == Fn::kOptOr && other.kind != Kind::kOptional) return no_overload();
  return other;
}

Value call(const Node& n, Ctx& ctx) {
  if (n.fn == Fn::kOptOrValue || n.fn == Fn::kOptOr) return or_value(n, ctx);
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
    Value v = eval(*a, ctx);
    if (v.is_error()) return v;
    if (a->optional_entry) {  // [?e]: e's value when it has one
      if (v.kind != Kind::kOptional) return no_overload();
      if (!has_value(v)) continue;
      v = v.items->front();
    }
    items.push_back(std::move(v));
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
    if (n.args[i]->optional_entry) {  // {?k: v}: the entry only when v has a value
      if (v.kind != Kind::kOptional) return no_overload();
      if (!has_value(v)) continue;
      v = v.items->front();
    }
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

// One step of all or exists: true when `p` decides the result (it is then the result). An error
// or a non-bool is kept in *deferred, for a later deciding value may still absorb it.
bool quantifier_decides(const Value& p, bool decisive, Value* deferred) {
  if (p.kind == Kind::kBool && p.b == decisive) return true;
  if (p.kind != Kind::kBool && !deferred->is_error()) *deferred = p.is_error() ? p : no_overload();
  return false;
}

// all, exists and existsOne with (index, element) or (key, value), and transformList,
// transformMap and transformMapEntry, with an optional filter before the transform.
Value two_variable_comprehension(const Node& n, const Value& range, const ValueList& keys,
                                 std::size_t count, Ctx& ctx) {
  const auto slot = static_cast<std::size_t>(n.slot);
  const bool quantifier = n.macro == Macro::kAll || n.macro == Macro::kExists;
  const bool decisive = n.macro == Macro::kExists;
  const bool filtered = n.macro >= Macro::kTransformList && n.args.size() == 3;
  Value deferred;
  int64_t matches = 0;
  ValueList list;
  ValueMap map;
  for (std::size_t i = 0; i < count; ++i) {
    if (!ctx.charge(1)) return make_error(kCostExceeded);
    if (range.kind == Kind::kList) {
      ctx.vars[slot] = make_int(static_cast<int64_t>(i));
      ctx.vars[slot + 1] = list_at(range, i);
    } else {
      ctx.vars[slot] = keys[i];
      auto v = map_get(range, keys[i]);
      ctx.vars[slot + 1] = v ? *v : Value();
    }
    Value p = eval(*n.args[1], ctx);
    if (quantifier) {
      if (quantifier_decides(p, decisive, &deferred)) return p;
      continue;
    }
    if (p.is_error()) return p;
    if (n.macro == Macro::kExistsOne) {
      if (p.kind != Kind::kBool) return no_overload();
      matches += p.b ? 1 : 0;
      continue;
    }
    if (filtered) {
      if (p.kind != Kind::kBool) return no_overload();
      if (!p.b) continue;
      p = eval(*n.args[2], ctx);
      if (p.is_error()) return p;
    }
    if (n.macro == Macro::kTransformList) {
      list.push_back(std::move(p));
    } else if (n.macro == Macro::kTransformMap) {
      map.emplace_back(ctx.vars[slot], std::move(p));
    } else {  // transformMapEntry: the transform's entries, each key once
      if (p.kind != Kind::kMap) return no_overload();
      for (const Value& k : map_keys(p)) {
        for (const auto& e : map)
          if (values_equal_shallow(e.first, k))
            return make_error("insert failed: key " + std::string(to_json(k, 0).dump()) +
                              " already exists");
        auto v = map_get(p, k);
        map.emplace_back(k, v ? *v : Value());
      }
    }
  }
  if (quantifier) return deferred.is_error() ? deferred : make_bool(!decisive);
  if (n.macro == Macro::kExistsOne) return make_bool(matches == 1);
  if (n.macro == Macro::kTransformList) return make_list(std::move(list));
  return make_map(std::move(map));
}

Value comprehension(const Node& n, Ctx& ctx) {
  Value range = eval(*n.args[0], ctx);
  if (range.is_error()) return range;
  ValueList keys;
  std::size_t count = 0;
  if (!comprehension_range(range, &keys, &count)) return no_overload();
  auto slot = static_cast<std::size_t>(n.slot);
  if (ctx.vars.size() <= slot + 1) ctx.vars.resize(slot + 2);
  if (!n.name2.empty()) return two_variable_comprehension(n, range, keys, count, ctx);
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
      if (quantifier_decides(p, decisive, &deferred)) return p;
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
    ctx.authorizer = options.authorizer;
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

}  // namespace vkube::cel
