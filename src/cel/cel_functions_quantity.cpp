// kube's CEL quantity library: quantity("1.5Gi"), isQuantity(), and on a Quantity sign(),
// isInteger(), asInteger(), asApproximateFloat(), add() and sub() (of a Quantity or an int),
// isLessThan(), isGreaterThan() and compareTo(). Values are read as resource.ParseQuantity
// reads them (vkube/api/quantity.h) and held as doubles, exact for every integer below 2^53
// and for the binary suffixes.
#include <cmath>
#include <string>
#include <vector>

#include "cel_internal.h"
#include "vkube/api/quantity.h"

namespace vkube::cel::detail {
namespace {

constexpr std::string_view kQuantityError =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

Value make_quantity(double d, std::string text) {
  Value v = make_text(Kind::kQuantity, std::move(text));
  v.d = d;
  return v;
}

std::optional<double> parse(std::string_view text) {
  auto q = api::quantity_number(nlohmann::json(std::string(text)));
  if (!q || !std::isfinite(static_cast<double>(*q))) return std::nullopt;
  return static_cast<double>(*q);
}

// A result's text: an integer as such, else the shortest decimal that reads back.
std::string quantity_text(double d) {
  if (std::trunc(d) == d && std::fabs(d) < 9.2e18) return format_int(static_cast<int64_t>(d));
  return format_double(d);
}

bool integral(double d) {
  return std::trunc(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0;
}

}  // namespace

Value quantity_function(Fn fn, const std::vector<Value>& a) {
  if (fn == Fn::kQuantity || fn == Fn::kIsQuantity) {
    if (a[0].kind != Kind::kString) return no_overload();
    auto q = parse(a[0].str());
    if (fn == Fn::kIsQuantity) return make_bool(q.has_value());
    if (!q) return make_error(kQuantityError);
    return make_quantity(*q, std::string(a[0].str()));
  }
  if (a[0].kind != Kind::kQuantity) return no_overload();
  const double q = a[0].d;
  switch (fn) {
    case Fn::kQSign:
      return make_int(q > 0 ? 1 : (q < 0 ? -1 : 0));
    case Fn::kQIsInteger:
      return make_bool(integral(q));
    case Fn::kQAsInteger:
      if (!integral(q)) return make_error("cannot convert value to integer");
      return make_int(static_cast<int64_t>(q));
    case Fn::kQAsFloat:
      return make_double(q);
    default:
      break;
  }
  // The binary methods take a Quantity (add and sub an int too).
  double other = 0;
  if (a[1].kind == Kind::kQuantity) {
    other = a[1].d;
  } else if (a[1].kind == Kind::kInt && (fn == Fn::kQAdd || fn == Fn::kQSub)) {
    other = static_cast<double>(a[1].i);
  } else {
    return no_overload();
  }
  switch (fn) {
    case Fn::kQAdd:
      return make_quantity(q + other, quantity_text(q + other));
    case Fn::kQSub:
      return make_quantity(q - other, quantity_text(q - other));
    case Fn::kQIsLessThan:
      return make_bool(q < other);
    case Fn::kQIsGreaterThan:
      return make_bool(q > other);
    case Fn::kQCompareTo:
      return make_int(q < other ? -1 : (q > other ? 1 : 0));
    default:
      return no_overload();
  }
}

}  // namespace vkube::cel::detail
