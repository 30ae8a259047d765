#include "vkube/api/quantity.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace vkube::api {

std::optional<long double> quantity_number(const nlohmann::json& q) {
  if (q.is_number()) return q.get<long double>();
  if (!q.is_string()) return std::nullopt;
  const std::string s = q.get<std::string>();
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  size_t start = i;
  bool digits = false;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) {
    digits |= s[i] != '.';
    ++i;
  }
  std::string number = s.substr(start, i - start);
  if (!digits || number.find('.') != number.rfind('.')) return std::nullopt;
  // strtold, not stold: a number too large for long double is +inf, not a throw.
  long double value = std::strtold(number.c_str(), nullptr);
  std::string suffix = s.substr(i);
  static const std::pair<const char*, long double> kSuffixes[] = {{"", 1},
                                                                  {"n", 1e-9},
                                                                  {"u", 1e-6},
                                                                  {"m", 1e-3},
                                                                  {"k", 1e3},
                                                                  {"M", 1e6},
                                                                  {"G", 1e9},
                                                                  {"T", 1e12},
                                                                  {"P", 1e15},
                                                                  {"E", 1e18},
                                                                  {"Ki", 1024.0L},
                                                                  {"Mi", 1048576.0L},
                                                                  {"Gi", 1073741824.0L},
                                                                  {"Ti", 1099511627776.0L},
                                                                  {"Pi", 1125899906842624.0L},
                                                                  {"Ei", 1152921504606846976.0L}};
  std::optional<long double> scale;
  for (const auto& [name, factor] : kSuffixes) {
    if (suffix == name) scale = factor;
  }
  if (!scale && suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    size_t j = 1;
    if (suffix[j] == '+' || suffix[j] == '-') ++j;
    bool ok = j < suffix.size();
    for (size_t k = j; k < suffix.size(); ++k)
      ok &= std::isdigit(static_cast<unsigned char>(suffix[k])) != 0;
    if (ok) scale = std::pow(10.0L, std::strtold(suffix.c_str() + 1, nullptr));
  }
  if (!scale) return std::nullopt;
  // Zero times any scale is zero ("0e72007": 10^72007 is +inf in a long
  // double, and 0 * inf would be NaN).
  if (value == 0) return 0.0L;
  return (negative ? -value : value) * *scale;
}

namespace {

// A JSON integer within [-limit, limit], or nullopt. Integers are read
// exactly (a long double would round those past 2^64), and the bound is the
// one the text forms have, so 2^63-1 CPUs cannot wrap to a negative request
// once multiplied into thousandths.
std::optional<int64_t> bounded_integer(const nlohmann::json& value, uint64_t limit) {
  if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u > limit) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  int64_t i = value.get<int64_t>();
  uint64_t magnitude = i < 0 ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
  if (magnitude > limit) return std::nullopt;
  return i;
}

// The bounds the text forms have: 9e15 units (9e18 thousandths) and 9e18 units.
constexpr uint64_t kMaxMilliUnits = 9'000'000'000'000'000;
constexpr uint64_t kMaxUnits = 9'000'000'000'000'000'000;

}  // namespace

std::optional<int64_t> quantity_milli(const nlohmann::json& value) {
  if (value.is_number_integer()) {
    auto units = bounded_integer(value, kMaxMilliUnits);
    if (!units) return std::nullopt;
    return *units * 1000;
  }
  auto v = quantity_number(value);
  if (!v || !(std::fabs(*v) <= 9e15L)) return std::nullopt;  // NaN too
  return static_cast<int64_t>(std::ceil(*v * 1000 - 1e-9L));
}

std::optional<int64_t> quantity_milli(std::string_view text) {
  return quantity_milli(nlohmann::json(std::string(text)));
}

std::optional<int64_t> quantity_value(const nlohmann::json& value) {
  if (value.is_number_integer()) return bounded_integer(value, kMaxUnits);
  auto v = quantity_number(value);
  if (!v || !(std::fabs(*v) <= 9e18L)) return std::nullopt;
  return static_cast<int64_t>(std::ceil(*v - 1e-9L));
}

}  // namespace vkube::api
