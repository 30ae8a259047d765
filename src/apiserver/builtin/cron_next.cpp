// When a schedule next fires: robfig/cron v3's SpecSchedule.Next, run on
// wall-clock fields in the schedule's zone with Go's time arithmetic
// (time.Date normalisation, AddDate, Add), so that daylight-saving edges
// behave as in kube-controller-manager.
#include <cstdio>

#include "cron.h"

namespace vkube::apiserver::builtin {

namespace {

using namespace std::chrono;

constexpr int64_t kDay = 86400;

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - (a % b < 0 ? 1 : 0);
}

// A time as Go's time.Time in a location: an instant and its wall clock.
class ZonedTime {
 public:
  ZonedTime(const TimeZone& zone, int64_t unix) : zone_(zone) { set(unix); }

  int64_t unix() const { return unix_; }
  int64_t year() const { return year_; }
  int64_t month() const { return month_; }
  int64_t day() const { return day_; }
  int64_t hour() const { return hour_; }
  int64_t minute() const { return minute_; }
  int64_t second() const { return second_; }
  int64_t weekday() const { return weekday_; }  // 0 = Sunday

  // time.Date(y, m, d, h, min, s, 0, loc), out-of-range fields normalised.
  void set_date(int64_t y, int64_t m, int64_t d, int64_t h, int64_t min, int64_t s) {
    y += floor_div(m - 1, 12);
    m = (m - 1) - floor_div(m - 1, 12) * 12 + 1;
    int64_t days_since_epoch =
        sys_days(year_month_day(std::chrono::year(static_cast<int>(y)),
                                std::chrono::month(static_cast<unsigned>(m)), std::chrono::day(1)))
            .time_since_epoch()
            .count() +
        d - 1;
    set(zone_.from_local(days_since_epoch * kDay + h * 3600 + min * 60 + s));
  }
  void add_seconds(int64_t s) { set(unix_ + s); }

 private:
  void set(int64_t unix) {
    unix_ = unix;
    int64_t local = unix + zone_.lookup(unix).offset;
    int64_t days = floor_div(local, kDay);
    int64_t secs = local - days * kDay;
    year_month_day ymd{sys_days(std::chrono::days(days))};
    year_ = static_cast<int>(ymd.year());
    month_ = static_cast<unsigned>(ymd.month());
    day_ = static_cast<unsigned>(ymd.day());
    hour_ = secs / 3600;
    minute_ = secs / 60 % 60;
    second_ = secs % 60;
    weekday_ = (days % 7 + 11) % 7;  // 1970-01-01 was a Thursday
  }

  const TimeZone& zone_;
  int64_t unix_ = 0;
  int64_t year_ = 0, month_ = 0, day_ = 0, hour_ = 0, minute_ = 0, second_ = 0, weekday_ = 0;
};

bool has(uint64_t bits, int64_t v) {
  return (bits >> v & 1) != 0;
}

// robfig's dayMatches: with a "*" in either day field both must match,
// else either may (cron's day-of-month OR day-of-week rule).
bool day_matches(const CronSchedule& s, const ZonedTime& t) {
  bool dom = has(s.dom, t.day());
  bool dow = has(s.dow, t.weekday());
  if ((s.dom & CronSchedule::kStarBit) != 0 || (s.dow & CronSchedule::kStarBit) != 0)
    return dom && dow;
  return dom || dow;
}

std::optional<int64_t> spec_next(const CronSchedule& s, int64_t after) {
  ZonedTime t(s.zone != nullptr ? *s.zone : TimeZone::utc(), after + 1);
  bool added = false;
  const int64_t year_limit = t.year() + 5;
  // Each loop restarts the search ("goto WRAP") when a field wraps around.
  for (;;) {
    if (t.year() > year_limit) return std::nullopt;
    bool wrapped = false;
    while (!has(s.month, t.month())) {
      if (!added) {
        added = true;
        t.set_date(t.year(), t.month(), 1, 0, 0, 0);
      }
      t.set_date(t.year(), t.month() + 1, t.day(), t.hour(), t.minute(), t.second());
      if (t.month() == 1) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;
    while (!day_matches(s, t)) {
      if (!added) {
        added = true;
        t.set_date(t.year(), t.month(), t.day(), 0, 0, 0);
      }
      t.set_date(t.year(), t.month(), t.day() + 1, t.hour(), t.minute(), t.second());
      // Midnight may not exist on a daylight-saving day.
      if (t.hour() != 0) t.add_seconds(t.hour() > 12 ? (24 - t.hour()) * 3600 : -t.hour() * 3600);
      if (t.day() == 1) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;
    while (!has(s.hour, t.hour())) {
      if (!added) {
        added = true;
        t.set_date(t.year(), t.month(), t.day(), t.hour(), 0, 0);
      }
      t.add_seconds(3600);
      if (t.hour() == 0) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;
    while (!has(s.minute, t.minute())) {
      if (!added) {
        added = true;
        t.add_seconds(-(t.unix() - floor_div(t.unix(), 60) * 60));  // Truncate(time.Minute)
      }
      t.add_seconds(60);
      if (t.minute() == 0) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;
    while (!has(s.second, t.second())) {
      added = true;
      t.add_seconds(1);
      if (t.second() == 0) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;
    return t.unix();
  }
}

}  // namespace

std::optional<system_clock::time_point> cron_next(const CronSchedule& s,
                                                  system_clock::time_point t) {
  int64_t after = floor<seconds>(t.time_since_epoch()).count();
  if (s.every_seconds > 0) {
    // A period reaching past what the clock's nanoseconds hold (the year 2262) has no next time
    // to return: the addition would overflow.
    constexpr int64_t kMaxSeconds = duration_cast<seconds>(system_clock::duration::max()).count();
    if (after > kMaxSeconds - s.every_seconds) return std::nullopt;
    return system_clock::time_point(seconds(after + s.every_seconds));
  }
  std::optional<int64_t> next = spec_next(s, after);
  if (!next) return std::nullopt;
  return system_clock::time_point(seconds(*next));
}

std::string format_rfc3339_in(system_clock::time_point t, const TimeZone& zone) {
  int64_t unix = floor<seconds>(t.time_since_epoch()).count();
  int32_t offset = zone.lookup(unix).offset;
  int64_t local = unix + offset;
  int64_t days = floor_div(local, kDay);
  int64_t secs = local - days * kDay;
  year_month_day ymd{sys_days(std::chrono::days(days))};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02lld:%02lld:%02lld",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<long long>(secs / 3600),
                static_cast<long long>(secs / 60 % 60), static_cast<long long>(secs % 60));
  std::string out = buf;
  if (offset == 0) return out + "Z";
  int32_t a = offset < 0 ? -offset : offset;
  std::snprintf(buf, sizeof buf, "%c%02d:%02d", offset < 0 ? '-' : '+', a / 3600, a / 60 % 60);
  return out + buf;
}

}  // namespace vkube::apiserver::builtin
