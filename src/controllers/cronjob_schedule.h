// The CronJob controller's schedule arithmetic (kube's
// pkg/controller/cronjob/utils.go): which scheduled time is due, how long
// until the next one, and the Job made for a scheduled time.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cron.h"

namespace vkube::controllers::cronjob {

using json = nlohmann::json;
using TimePoint = std::chrono::system_clock::time_point;
using apiserver::builtin::CronSchedule;
using apiserver::builtin::TimeZone;

enum class Missed { kNone, kFew, kMany };

struct MostRecent {
  TimePoint earliest;             // lastScheduleTime, or the creation time
  std::optional<TimePoint> time;  // the latest scheduled time <= now, if any
  Missed missed = Missed::kNone;
  std::string error;  // a schedule that cannot fire ("0 0 30 2 *")
};

// kube's mostRecentScheduleTime: the latest scheduled time after the
// CronJob's lastScheduleTime (or creation) and no later than now; with
// `use_deadline`, times before now - startingDeadlineSeconds are skipped.
MostRecent most_recent_schedule_time(const json& cronjob, TimePoint now,
                                     const CronSchedule& schedule, bool use_deadline);

// kube's nextScheduleTimeDuration: how long until the next scheduled time,
// plus 100 ms so the sync finds it due. nullopt when there is none.
std::optional<std::chrono::milliseconds> next_schedule_delay(const json& cronjob, TimePoint now,
                                                             const CronSchedule& schedule);

// The schedule spec.schedule and spec.timeZone make: "TZ=<zone> <schedule>"
// when the zone is known. `tz_in_schedule` is set when the schedule names a
// zone itself (kube warns about that).
std::string schedule_spec(const json& cronjob, bool* tz_in_schedule);

// "<cronjob>-<scheduled time in minutes since the epoch>".
std::string job_name(const json& cronjob, TimePoint scheduled);

// kube's getJobFromTemplate2: the Job for `scheduled`, with the template's
// labels and annotations, the batch.kubernetes.io/cronjob-scheduled-timestamp
// annotation (RFC 3339 in the CronJob's zone) and a controller reference.
json job_from_template(const json& cronjob, TimePoint scheduled, const TimeZone& zone);

// Go's time.RFC1123Z in UTC: "Wed, 02 Dec 2026 21:00:00 +0000".
std::string rfc1123z(TimePoint t);

}  // namespace vkube::controllers::cronjob
