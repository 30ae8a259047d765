// CEL timestamps (google.protobuf.Timestamp), as cel-go has them: timestamp("2023-06-01T10:00:00Z")
// parsed as Go's time.Parse(time.RFC3339, ...) parses it, timestamp(int) from Unix seconds,
// compared, moved by a duration and subtracted (cel_operators.cpp), int() in Unix seconds,
// string() in RFC 3339 with nanoseconds, and the calendar accessors (getFullYear, getMonth,
// getDate, getDayOfMonth, getDayOfWeek, getDayOfYear, getHours, getMinutes, getSeconds,
// getMilliseconds), in UTC or in the time zone their argument names: "UTC" or a fixed offset
// ("-08:00", "+05:30"). Time zone database names ("Europe/Paris") are refused with a clear
// error. The value is normalized to UTC, as the CEL spec describes it.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel::detail {
namespace {

namespace chr = std::chrono;

// cel-go's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
constexpr int64_t kMinSeconds = -62135596800LL;
constexpr int64_t kMaxSeconds = 253402300799LL;

int digits(std::string_view s, std::size_t at, std::size_t n) {
  if (at + n > s.size()) return -1;
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

int64_t days_from_civil(int y, unsigned m, unsigned d) {
  return chr::sys_days(chr::year(y) / chr::month(m) / chr::day(d)).time_since_epoch().count();
}

// RFC 3339 as Go's parser takes it: YYYY-MM-DDTHH:MM:SS, an optional fraction, then Z or ±HH:MM.
std::optional<std::pair<int64_t, int64_t>> parse_rfc3339(std::string_view s) {
  const int y = digits(s, 0, 4), mo = digits(s, 5, 2), d = digits(s, 8, 2);
  const int h = digits(s, 11, 2), mi = digits(s, 14, 2), sec = digits(s, 17, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 ||
      sec > 59 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
    return std::nullopt;
  const chr::year_month_day ymd{chr::year(y), chr::month(static_cast<unsigned>(mo)),
                                chr::day(static_cast<unsigned>(d))};
  if (!ymd.ok()) return std::nullopt;
  std::size_t at = 19;
  int64_t nanos = 0;
  if (at < s.size() && s[at] == '.') {
    ++at;
    const std::size_t start = at;
    int64_t scale = 100000000;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
      nanos += (s[at++] - '0') * scale;
      scale /= 10;
    }
    if (at == start) return std::nullopt;
  }
  int64_t offset = 0;
  if (at + 1 == s.size() && s[at] == 'Z') {
    ++at;
  } else if (at + 6 == s.size() && (s[at] == '+' || s[at] == '-') && s[at + 3] == ':') {
    const int oh = digits(s, at + 1, 2), om = digits(s, at + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return std::nullopt;
    offset = (oh * 3600 + om * 60) * (s[at] == '-' ? -1 : 1);
    at += 6;
  } else {
    return std::nullopt;  // a zone is required
  }
  if (at != s.size()) return std::nullopt;
  const int64_t seconds =
      days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 +
      mi * 60 + sec - offset;
  return std::pair{seconds, nanos};
}

// The time zone argument of an accessor: seconds east of UTC, or an error value.
std::optional<Value> zone_offset(const Value& tz, int64_t* east) {
  if (tz.kind != Kind::kString) return no_overload();
  const std::string_view z = tz.str();
  const std::size_t colon = z.find(':');
  if (colon == std::string_view::npos) {
    if (z.empty() || z == "UTC") {
      *east = 0;
      return std::nullopt;
    }
    return make_error("time zone " + std::string(z) +
                      " is not supported by vkube: use \"UTC\" or an offset such as \"-08:00\"");
  }
  // As cel-go reads an offset: strconv.Atoi of the hours (a sign allowed), then of the minutes.
  auto atoi = [](std::string_view s, int* out) {
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
      negative = s[0] == '-';
      s.remove_prefix(1);
    }
    if (s.empty() || s.size() > 4) return false;
    int v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    *out = negative ? -v : v;
    return true;
  };
  int hours = 0, minutes = 0;
  if (!atoi(z.substr(0, colon), &hours) || !atoi(z.substr(colon + 1), &minutes))
    return make_error("invalid time zone offset \"" + std::string(z) + "\"");
  const int offset = z[0] == '-' ? hours * 60 - minutes : hours * 60 + minutes;
  *east = static_cast<int64_t>(offset) * 60;
  return std::nullopt;
}

Value timestamp_value(int64_t seconds, int64_t nanos) {
  if (seconds < kMinSeconds || seconds > kMaxSeconds) return make_error("timestamp overflow");
  Value v;
  v.kind = Kind::kTimestamp;
  v.i = seconds;
  v.u = static_cast<uint64_t>(nanos);
  return v;
}

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}

}  // namespace

Value make_timestamp(int64_t seconds, int64_t nanos) {
  seconds += floor_div(nanos, 1000000000);
  nanos -= floor_div(nanos, 1000000000) * 1000000000;
  return timestamp_value(seconds, nanos);
}

std::optional<Value> formatted_string(std::string_view format, std::string_view text) {
  if (format == "date-time") {
    auto parsed = parse_rfc3339(text);
    if (!parsed) return make_error("Invalid date-time formatted string " + std::string(text));
    return timestamp_value(parsed->first, parsed->second);
  }
  if (format == "date") {  // midnight UTC of a full-date (YYYY-MM-DD)
    auto parsed =
        text.size() == 10 ? parse_rfc3339(std::string(text) + "T00:00:00Z") : std::nullopt;
    if (!parsed) return make_error("Invalid date formatted string " + std::string(text));
    return timestamp_value(parsed->first, 0);
  }
  if (format == "duration") {
    auto ns = parse_duration(text);
    if (!ns) return make_error("Invalid duration " + std::string(text));
    Value v;
    v.kind = Kind::kDuration;
    v.i = *ns;
    return v;
  }
  return std::nullopt;
}

// Go's t.UTC().Format(time.RFC3339Nano): the fraction without trailing zeros, then Z.
std::string timestamp_text(const Value& t) {
  const int64_t days = floor_div(t.i, 86400);
  const int64_t rest = t.i - days * 86400;
  const chr::year_month_day ymd{chr::sys_days(chr::days(days))};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(rest / 3600), static_cast<int>(rest / 60 % 60),
                static_cast<int>(rest % 60));
  return buf + nanos_fraction(t.u) + "Z";
}

Value timestamp_function(Fn fn, const std::vector<Value>& a) {
  if (fn == Fn::kTimestamp) {
    if (a[0].kind == Kind::kTimestamp) return a[0];
    if (a[0].kind == Kind::kInt) return timestamp_value(a[0].i, 0);
    if (a[0].kind != Kind::kString) return no_overload();
    auto parsed = parse_rfc3339(a[0].str());
    if (!parsed)
      return make_error("type conversion error from 'string' to 'google.protobuf.Timestamp'");
    return timestamp_value(parsed->first, parsed->second);
  }
  if (a.empty() || a[0].kind != Kind::kTimestamp || a.size() > 2) return no_overload();
  int64_t east = 0;
  if (a.size() == 2)
    if (auto err = zone_offset(a[1], &east)) return *err;
  const int64_t local = a[0].i + east;
  const int64_t days = floor_div(local, 86400);
  const int64_t second_of_day = local - days * 86400;
  const chr::sys_days day{chr::days(days)};
  const chr::year_month_day ymd{day};
  switch (fn) {
    case Fn::kGetFullYear:
      return make_int(static_cast<int>(ymd.year()));
    case Fn::kGetMonth:
      return make_int(static_cast<int64_t>(static_cast<unsigned>(ymd.month())) - 1);
    case Fn::kGetDate:
      return make_int(static_cast<unsigned>(ymd.day()));
    case Fn::kGetDayOfMonth:
      return make_int(static_cast<int64_t>(static_cast<unsigned>(ymd.day())) - 1);
    case Fn::kGetDayOfWeek:
      return make_int(chr::weekday(day).c_encoding());
    case Fn::kGetDayOfYear:
      return make_int((day - chr::sys_days(ymd.year() / chr::January / 1)).count());
    case Fn::kGetHours:
      return make_int(second_of_day / 3600);
    case Fn::kGetMinutes:
      return make_int(second_of_day / 60 % 60);
    case Fn::kGetSeconds:
      return make_int(second_of_day % 60);
    case Fn::kGetMilliseconds:
      return make_int(static_cast<int64_t>(a[0].u / 1000000));
    default:
      return no_overload();
  }
}

}  // namespace vkube::cel::detail
