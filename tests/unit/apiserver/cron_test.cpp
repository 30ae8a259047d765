// CronJob schedules: when robfig/cron's standard parser (kube's) next fires
// them, in UTC and in IANA time zones across daylight-saving changes.
#include <catch2/catch.hpp>

#include "cron.h"

namespace vkube::apiserver::builtin {
namespace {

using Clock = std::chrono::system_clock;
using namespace std::chrono;

Clock::time_point utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  return sys_days(year(y) / mo / d) + hours(h) + minutes(mi) + seconds(s);
}

std::string show(Clock::time_point t, const TimeZone& zone = TimeZone::utc()) {
  return format_rfc3339_in(t, zone);
}

// The next `n` activations of `spec` after `from`, in `zone_name`'s wall time.
std::vector<std::string> next(const std::string& spec, Clock::time_point from, int n = 3,
                              const std::string& zone_name = "UTC") {
  std::string err;
  const TimeZone* zone = TimeZone::find(zone_name, &err);
  INFO(err);
  REQUIRE(zone != nullptr);
  auto s = parse_cron_schedule(spec, zone, &err);
  INFO(spec << ": " << err);
  REQUIRE(s.has_value());
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    auto t = cron_next(*s, from);
    if (!t) break;
    out.push_back(show(*t, *zone));
    from = *t;
  }
  return out;
}

using Times = std::vector<std::string>;

TEST_CASE("cron: every minute and steps fire strictly after the given time", "[apiserver][cron]") {
  CHECK(next("* * * * *", utc(2026, 12, 2, 21, 0, 0)) ==
        Times{"2026-12-02T21:01:00Z", "2026-12-02T21:02:00Z", "2026-12-02T21:03:00Z"});
  CHECK(next("*/15 * * * *", utc(2026, 12, 2, 21, 7, 30)) ==
        Times{"2026-12-02T21:15:00Z", "2026-12-02T21:30:00Z", "2026-12-02T21:45:00Z"});
  CHECK(next("5/20 * * * *", utc(2026, 12, 2, 21, 0)) ==
        Times{"2026-12-02T21:05:00Z", "2026-12-02T21:25:00Z", "2026-12-02T21:45:00Z"});
}

TEST_CASE("cron: ranges, lists and names", "[apiserver][cron]") {
  // 2026-01-01 is a Thursday.
  CHECK(next("30 9-17/4 * jan,jul mon-fri", utc(2026, 1, 1), 5) ==
        Times{"2026-01-01T09:30:00Z", "2026-01-01T13:30:00Z", "2026-01-01T17:30:00Z",
              "2026-01-02T09:30:00Z", "2026-01-02T13:30:00Z"});
  CHECK(next("0 0 1 */6 *", utc(2026, 2, 10)) ==
        Times{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-07-01T00:00:00Z"});
  CHECK(next("0 12 * * SAT,sun", utc(2026, 1, 1)) ==
        Times{"2026-01-03T12:00:00Z", "2026-01-04T12:00:00Z", "2026-01-10T12:00:00Z"});
}

TEST_CASE("cron: day of month OR day of week unless one is a star", "[apiserver][cron]") {
  // 2026-03-01 is a Sunday; the 13th is a Friday.
  CHECK(next("0 0 13 * 5", utc(2026, 3, 1), 6) ==
        Times{"2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z", "2026-03-20T00:00:00Z",
              "2026-03-27T00:00:00Z", "2026-04-03T00:00:00Z", "2026-04-10T00:00:00Z"});
  CHECK(next("0 0 13 * 5", utc(2026, 4, 11), 1) == Times{"2026-04-13T00:00:00Z"});
  // A star in either field makes it AND: only Mondays.
  CHECK(next("0 0 * * 1", utc(2026, 3, 1)) ==
        Times{"2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z", "2026-03-16T00:00:00Z"});
  // "*/1" is still a star, "*/2" is not.
  CHECK(next("0 0 * * */1", utc(2026, 3, 1)) ==
        Times{"2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z", "2026-03-04T00:00:00Z"});
  CHECK(next("0 0 */10 * 0", utc(2026, 3, 1, 1), 4) ==
        Times{"2026-03-08T00:00:00Z", "2026-03-11T00:00:00Z", "2026-03-15T00:00:00Z",
              "2026-03-21T00:00:00Z"});
}

TEST_CASE("cron: descriptors", "[apiserver][cron]") {
  Clock::time_point from = utc(2026, 12, 2, 21, 10);  // a Wednesday
  CHECK(next("@hourly", from, 2) == Times{"2026-12-02T22:00:00Z", "2026-12-02T23:00:00Z"});
  CHECK(next("@daily", from, 1) == Times{"2026-12-03T00:00:00Z"});
  CHECK(next("@midnight", from, 1) == Times{"2026-12-03T00:00:00Z"});
  CHECK(next("@weekly", from, 2) == Times{"2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z"});
  CHECK(next("@monthly", from, 2) == Times{"2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z"});
  CHECK(next("@yearly", from, 1) == Times{"2027-01-01T00:00:00Z"});
  CHECK(next("@annually", from, 1) == Times{"2027-01-01T00:00:00Z"});
  CHECK(next("@every 1h30m", from, 2) == Times{"2026-12-02T22:40:00Z", "2026-12-03T00:10:00Z"});
}

TEST_CASE("cron: a schedule that never fires has no next time", "[apiserver][cron]") {
  auto s = parse_cron_schedule("0 0 30 2 *");
  REQUIRE(s.has_value());
  CHECK_FALSE(cron_next(*s, utc(2026, 1, 1)).has_value());
  // Leap days come every four years.
  CHECK(next("0 0 29 2 *", utc(2026, 1, 1), 2) ==
        Times{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"});
}

TEST_CASE("cron: invalid schedules report robfig's messages", "[apiserver][cron]") {
  std::string err;
  CHECK_FALSE(parse_cron_schedule("* * * *", nullptr, &err));
  CHECK(err == "expected exactly 5 fields, found 4: [* * * *]");
  CHECK_FALSE(parse_cron_schedule("61 * * * *", nullptr, &err));
  CHECK(err == "end of range (61) above maximum (59): 61");
  CHECK_FALSE(parse_cron_schedule("@fortnightly", nullptr, &err));
  CHECK(err == "unrecognized descriptor: @fortnightly");
  CHECK_FALSE(parse_cron_schedule("TZ=Mars/Olympus 0 * * * *", nullptr, &err));
  CHECK(err == "provided bad location Mars/Olympus: unknown time zone Mars/Olympus");
  CHECK(cron_schedule_error("0 9 * * 1-5") == std::nullopt);
}

TEST_CASE("cron: time zones, including daylight-saving changes", "[apiserver][cron]") {
  // 09:00 in New York: 14:00Z in winter, 13:00Z once DST starts (2026-03-08).
  CHECK(
      next("0 9 * * *", utc(2026, 3, 6, 15), 3, "America/New_York") ==
      Times{"2026-03-07T09:00:00-05:00", "2026-03-08T09:00:00-04:00", "2026-03-09T09:00:00-04:00"});
  // 02:30 does not exist on 2026-03-08 in New York: that day is skipped.
  CHECK(next("30 2 * * *", utc(2026, 3, 7, 12), 2, "America/New_York") ==
        Times{"2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"});
  // 01:00 happens twice on 2026-11-01, and robfig fires at both.
  CHECK(
      next("0 1 * * *", utc(2026, 11, 1), 3, "America/New_York") ==
      Times{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-02T01:00:00-05:00"});
  CHECK(next("0 0 * * *", utc(2026, 12, 2), 1, "Asia/Kolkata") ==
        Times{"2026-12-03T00:00:00+05:30"});
  // Far beyond the zone file's transitions its POSIX rule applies.
  CHECK(next("0 12 * * *", utc(2045, 3, 11, 12), 2, "America/New_York") ==
        Times{"2045-03-11T12:00:00-05:00", "2045-03-12T12:00:00-04:00"});
  // A TZ= prefix picks the zone; the time is the same instant in UTC.
  auto tokyo = parse_cron_schedule("TZ=Asia/Tokyo 0 9 * * *");
  REQUIRE(tokyo.has_value());
  CHECK(show(*cron_next(*tokyo, utc(2026, 12, 2, 1))) == "2026-12-03T00:00:00Z");
  std::string err;
  CHECK(TimeZone::find("Mars/Olympus", &err) == nullptr);
  CHECK(err == "unknown time zone Mars/Olympus");
  CHECK(TimeZone::find("../etc/passwd", &err) == nullptr);
}

// Found by tests/fuzz/fuzz_cron.cpp: "@every 1h<64 digits>s" was converted
// to whole seconds unchecked (undefined behaviour, a garbage period). Go's
// ParseDuration refuses what int64 nanoseconds cannot hold.
TEST_CASE("@every durations past int64 nanoseconds are refused as Go refuses them", "[apiserver]") {
  std::string huge = "@every 1h" + std::string(64, '5') + "s";
  CHECK(cron_schedule_error(huge) ==
        "failed to parse duration " + huge + ": time: invalid duration \"" + huge.substr(7) + "\"");
  CHECK(cron_schedule_error("@every 2562048h").has_value());
  CHECK(cron_schedule_error("@every 2562047h") == std::nullopt);
  // Found by fuzz_cron too: a next time past the clock's range (the year 2262) overflowed.
  auto every = parse_cron_schedule("@every 2562047h");
  REQUIRE(every.has_value());
  CHECK_FALSE(cron_next(*every, Clock::from_time_t(1700000000)).has_value());
  auto daily = parse_cron_schedule("@every 24h");
  REQUIRE(daily.has_value());
  CHECK(cron_next(*daily, Clock::from_time_t(1700000000)) == Clock::from_time_t(1700086400));
}

}  // namespace
}  // namespace vkube::apiserver::builtin
