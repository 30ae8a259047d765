// CEL durations (google.protobuf.Duration): duration("1h30m") parsed as Go's time.ParseDuration
// parses it, compared, added and subtracted (cel_operators.cpp), getHours/getMinutes/
// getSeconds/getMilliseconds, int() in nanoseconds and string() in seconds ("5400s"), as
// cel-go has them. Gateway API's timeout rules use them. Timestamps: cel_functions_time.cpp.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel::detail {

// time.ParseDuration: [-+]? then one or more decimal numbers, each with a unit; "0" alone.
std::optional<int64_t> parse_duration(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return 0;
  if (s.empty()) return std::nullopt;
  long double total = 0;
  while (!s.empty()) {
    std::size_t i = 0;
    long double value = 0;
    bool digits = false;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      value = value * 10 + (s[i++] - '0');
      digits = true;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      long double scale = 0.1L;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        value += (s[i++] - '0') * scale;
        scale /= 10;
        digits = true;
      }
    }
    if (!digits) return std::nullopt;
    s.remove_prefix(i);
    static const std::pair<std::string_view, long double> kUnits[] = {
        {"ns", 1},   {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"\xce\xbcs", 1e3},
        {"ms", 1e6}, {"s", 1e9},  {"m", 60e9},        {"h", 3600e9}};
    std::size_t unit_len = 0;
    long double unit = 0;
    for (const auto& [name, ns] : kUnits)
      if (s.substr(0, name.size()) == name && name.size() > unit_len &&
          (s.size() == name.size() || !((s[name.size()] >= 'a' && s[name.size()] <= 'z') ||
                                        static_cast<unsigned char>(s[name.size()]) >= 0x80))) {
        unit_len = name.size();
        unit = ns;
      }
    if (unit_len == 0) return std::nullopt;
    s.remove_prefix(unit_len);
    total += value * unit;
    if (total > 9223372036854775807.0L) return std::nullopt;
  }
  const auto ns = static_cast<int64_t>(total);
  return negative ? -ns : ns;
}

// strconv.FormatFloat(seconds, 'f', -1, 64) + "s": exact, from the nanoseconds.
std::string duration_text(int64_t ns) {
  const bool negative = ns < 0;
  const uint64_t magnitude =
      negative ? static_cast<uint64_t>(0) - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  return (negative ? "-" : "") + std::to_string(magnitude / 1000000000u) +
         nanos_fraction(magnitude % 1000000000u) + "s";
}

std::string nanos_fraction(uint64_t nanos) {
  if (nanos == 0) return {};
  std::string fraction = std::to_string(nanos);
  fraction.insert(0, 9 - fraction.size(), '0');
  while (fraction.back() == '0') fraction.pop_back();
  return "." + fraction;
}

Value duration_function(Fn fn, const std::vector<Value>& a) {
  if (fn == Fn::kDuration) {
    if (a[0].kind == Kind::kDuration) return a[0];
    if (a[0].kind != Kind::kString) return no_overload();
    auto ns = parse_duration(a[0].str());
    if (!ns) return make_error("type conversion error from 'string' to 'google.protobuf.Duration'");
    Value v;
    v.kind = Kind::kDuration;
    v.i = *ns;
    return v;
  }
  if (a[0].kind != Kind::kDuration) return no_overload();
  const int64_t ns = a[0].i;
  switch (fn) {
    case Fn::kGetHours:
      return make_int(ns / 3600000000000LL);
    case Fn::kGetMinutes:
      return make_int(ns / 60000000000LL);
    case Fn::kGetSeconds:
      return make_int(ns / 1000000000LL);
    case Fn::kGetMilliseconds:
      return make_int(ns / 1000000LL);
    default:
      return no_overload();
  }
}

}  // namespace vkube::cel::detail
