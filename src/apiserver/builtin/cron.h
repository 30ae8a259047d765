// CronJob schedules as kube-apiserver parses them and kube-controller-manager
// runs them (robfig/cron v3's standard parser: five fields or an
// @descriptor), and the IANA time zones they run in (spec.timeZone, read
// from the system's tz database as Go's time.LoadLocation reads it).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkube::apiserver::builtin {

// nullopt when `schedule` parses; else the parser's error message, e.g.
// "expected exactly 5 fields, found 3: [* * *]".
std::optional<std::string> cron_schedule_error(std::string_view schedule);

// A time zone: UTC offsets over time, from a TZif file of the tz database
// (transitions, then the file's POSIX TZ rule for later times).
class TimeZone {
 public:
  // Seconds east of UTC in force over [start, end) (unix seconds).
  struct Period {
    int32_t offset = 0;
    int64_t start = INT64_MIN;
    int64_t end = INT64_MAX;
  };

  // The zone `name` ("" and "UTC" are UTC), loaded once from $ZONEINFO or
  // /usr/share/zoneinfo and kept for the process. Null, with *error set to
  // Go's message ("unknown time zone Mars/Base"), when there is none.
  // Thread-safe; the zone outlives every caller.
  static const TimeZone* find(std::string_view name, std::string* error = nullptr);
  static const TimeZone& utc();

  const std::string& name() const { return name_; }
  Period lookup(int64_t unix_seconds) const;
  // The unix time of a wall-clock time in this zone, resolved as Go's
  // time.Date resolves it (a skipped or repeated time picks one offset).
  int64_t from_local(int64_t local_seconds) const;

  struct Rule;  // a POSIX TZ rule ("EST5EDT,M3.2.0,M11.1.0")
  TimeZone(std::string name, std::vector<int64_t> transitions, std::vector<int32_t> offsets,
           int32_t initial_offset, std::shared_ptr<const Rule> rule);

 private:
  std::string name_;
  std::vector<int64_t> transitions_;  // ascending unix seconds
  std::vector<int32_t> offsets_;      // offset from transitions_[i] on
  int32_t initial_offset_ = 0;        // before the first transition
  std::shared_ptr<const Rule> rule_;  // after the last transition, when the file has one
};

// A parsed schedule: robfig's SpecSchedule (bit i of a field set when value
// i matches; kStarBit when the field was "*" or "?", which matters for the
// day-of-month/day-of-week rule) or, for "@every D", a constant delay.
struct CronSchedule {
  static constexpr uint64_t kStarBit = uint64_t{1} << 63;
  uint64_t second = 1;  // standard specs fire at second 0
  uint64_t minute = 0, hour = 0, dom = 0, month = 0, dow = 0;
  int64_t every_seconds = 0;  // > 0 for "@every"
  const TimeZone* zone = nullptr;
};

// Parses as robfig's ParseStandard: a "TZ=<zone> " or "CRON_TZ=<zone> "
// prefix picks the zone, else `zone` (null: UTC). nullopt with *error set to
// the parser's message when the spec is invalid.
std::optional<CronSchedule> parse_cron_schedule(std::string_view spec,
                                                const TimeZone* zone = nullptr,
                                                std::string* error = nullptr);

// The first activation strictly after `t` (robfig's Schedule.Next, whole
// seconds). nullopt when the schedule has none in the next five years
// ("0 0 30 2 *").
std::optional<std::chrono::system_clock::time_point> cron_next(
    const CronSchedule& schedule, std::chrono::system_clock::time_point t);

// RFC 3339 in `zone`, second precision: "2026-12-02T16:00:00-05:00", or
// "...Z" when the offset is 0 (Go's time.RFC3339 format).
std::string format_rfc3339_in(std::chrono::system_clock::time_point t, const TimeZone& zone);

}  // namespace vkube::apiserver::builtin
