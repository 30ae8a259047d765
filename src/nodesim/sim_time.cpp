#include "sim_time.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace vkube::nodesim {

namespace {

std::string format(TimePoint t, bool micro) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(us >= 0 ? us / 1000000 : (us - 999999) / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out(buf, n);
  if (micro) {
    std::snprintf(buf, sizeof buf, ".%06lld", static_cast<long long>(us - int64_t{secs} * 1000000));
    out += buf;
  }
  return out + "Z";
}

}  // namespace

std::string rfc3339(TimePoint t) {
  return format(t, false);
}
std::string rfc3339_micro(TimePoint t) {
  return format(t, true);
}

std::optional<TimePoint> parse_rfc3339(std::string_view s) {
  std::tm tm{};
  int consumed = 0;
  std::string text(s);
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != 19)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  int64_t micros = 0;
  size_t i = 19;
  if (i < text.size() && text[i] == '.') {
    int64_t scale = 100000;
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      micros += (text[i] - '0') * scale;
      scale /= 10;
    }
  }
  if (i + 1 != text.size() || text[i] != 'Z') return std::nullopt;
  std::time_t secs = timegm(&tm);
  return TimePoint(std::chrono::seconds(secs)) + std::chrono::microseconds(micros);
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double total_ms = 0;
  size_t i = 0;
  bool any_unit = false;
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == start) return std::nullopt;
    double value = 0;
    std::string number(s.substr(start, i - start));
    char* end = nullptr;
    value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return std::nullopt;
    size_t unit_start = i;
    while (i < s.size() && !std::isdigit(static_cast<unsigned char>(s[i])) && s[i] != '.') ++i;
    std::string_view unit = s.substr(unit_start, i - unit_start);
    double scale;
    if (unit.empty()) {
      if (any_unit || i != s.size() || start != 0) return std::nullopt;  // plain seconds only
      scale = 1000;
    } else if (unit == "h") {
      scale = 3600000;
    } else if (unit == "m") {
      scale = 60000;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "ms") {
      scale = 1;
    } else if (unit == "us" || unit == "\u00b5s") {
      scale = 1e-3;
    } else if (unit == "ns") {
      scale = 1e-6;
    } else {
      return std::nullopt;
    }
    any_unit |= !unit.empty();
    total_ms += value * scale;
  }
  if (!std::isfinite(total_ms) || total_ms > 1e15) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total_ms)));
}

}  // namespace vkube::nodesim
