#include "vkube/api/quantity.h"

#include <cmath>
#include <string>

namespace vkube::api {

namespace {

// The multiplier of a suffix; nullopt when unknown.
std::optional<long double> suffix_factor(std::string_view s) {
  static constexpr struct {
    std::string_view suffix;
    long double factor;
  } kSuffixes[] = {
      {"", 1},
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
      {"Ei", 1152921504606846976.0L},
  };
  for (const auto& e : kSuffixes)
    if (e.suffix == s) return e.factor;
  return std::nullopt;
}

std::optional<long double> parse(std::string_view text) {
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  size_t digits_start = i;
  long double mantissa = 0;
  int fraction_digits = 0;
  bool dot = false, any = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      mantissa = mantissa * 10 + (c - '0');
      if (dot) ++fraction_digits;
      any = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!any || i == digits_start) return std::nullopt;
  long double value = mantissa / std::pow(10.0L, fraction_digits);
  std::string_view rest = text.substr(i);
  if (!rest.empty() && (rest[0] == 'e' || rest[0] == 'E') && rest.size() > 1) {
    // An exponent ("1e3"); "E" alone is the exa suffix.
    std::string exp(rest.substr(1));
    size_t used = 0;
    try {
      int e = std::stoi(exp, &used);
      if (used != exp.size()) return std::nullopt;
      return (negative ? -1 : 1) * value * std::pow(10.0L, e);
    } catch (...) {
      return std::nullopt;
    }
  }
  auto factor = suffix_factor(rest);
  if (!factor) return std::nullopt;
  return (negative ? -1 : 1) * value * *factor;
}

}  // namespace

std::optional<int64_t> quantity_milli(std::string_view text) {
  auto v = parse(text);
  if (!v || std::fabs(*v) > 9e15L) return std::nullopt;
  return static_cast<int64_t>(std::ceil(*v * 1000 - 1e-9L));
}

std::optional<int64_t> quantity_milli(const nlohmann::json& value) {
  if (value.is_string())
    return quantity_milli(std::string_view(value.get_ref<const std::string&>()));
  if (value.is_number_integer()) return value.get<int64_t>() * 1000;
  if (value.is_number()) return static_cast<int64_t>(std::ceil(value.get<double>() * 1000 - 1e-9));
  return std::nullopt;
}

std::optional<int64_t> quantity_value(const nlohmann::json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();
  std::optional<long double> v;
  if (value.is_string())
    v = parse(value.get_ref<const std::string&>());
  else if (value.is_number())
    v = value.get<double>();
  if (!v || std::fabs(*v) > 9e18L) return std::nullopt;
  return static_cast<int64_t>(std::ceil(*v - 1e-9L));
}

}  // namespace vkube::api
