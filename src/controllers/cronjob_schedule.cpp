#include "cronjob_schedule.h"

#include <ctime>

#include "util.h"
#include "workload_common.h"

namespace vkube::controllers::cronjob {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const json& field(const json& obj, const char* name) {
  static const json empty = json::object();
  auto it = obj.find(name);
  return it != obj.end() && it->is_object() ? *it : empty;
}

std::optional<TimePoint> time_at(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_string()) return std::nullopt;
  return parse_rfc3339(it->get<std::string>());
}

}  // namespace

MostRecent most_recent_schedule_time(const json& cronjob, TimePoint now,
                                     const CronSchedule& schedule, bool use_deadline) {
  MostRecent r;
  r.earliest = time_at(field(cronjob, "metadata"), "creationTimestamp").value_or(TimePoint{});
  if (auto last = time_at(field(cronjob, "status"), "lastScheduleTime")) r.earliest = *last;
  const json& spec = field(cronjob, "spec");
  auto deadline = spec.find("startingDeadlineSeconds");
  if (use_deadline && deadline != spec.end() && deadline->is_number_integer()) {
    // Nothing before this point is scheduled any more.
    TimePoint limit = now - seconds(deadline->get<int64_t>());
    if (limit > r.earliest) r.earliest = limit;
  }
  std::optional<TimePoint> t1 = cron_next(schedule, r.earliest);
  std::optional<TimePoint> t2 = t1 ? cron_next(schedule, *t1) : std::nullopt;
  if (t1 && now < *t1) return r;
  if (t1 && t2 && now < *t2) {
    r.time = t1;
    return r;
  }
  int64_t between = t1 && t2 ? std::chrono::round<seconds>(*t2 - *t1).count() : 0;
  if (between < 1) {
    r.error = "time difference between two schedules is less than 1 second";
    return r;
  }
  // Roughly how many times were missed; then walk the last few exactly
  // (irregular schedules such as "30 6-16/4 * * 1-5" need the walk).
  int64_t elapsed = std::chrono::duration_cast<seconds>(now - *t1).count();
  int64_t missed = elapsed / between + 1;
  TimePoint from = *t1 + seconds((missed - 2) * between);
  for (std::optional<TimePoint> t = cron_next(schedule, from); t && *t <= now;
       t = cron_next(schedule, *t))
    r.time = t;
  r.missed = missed > 100 ? Missed::kMany : missed > 0 ? Missed::kFew : Missed::kNone;
  return r;
}

std::optional<milliseconds> next_schedule_delay(const json& cronjob, TimePoint now,
                                                const CronSchedule& schedule) {
  MostRecent r = most_recent_schedule_time(cronjob, now, schedule, false);
  TimePoint from = now;
  if (r.error.empty()) {
    if (r.time)
      from = *r.time;
    else if (r.missed == Missed::kNone)
      from = r.earliest;
  }
  std::optional<TimePoint> next = cron_next(schedule, from);
  if (!next) return std::nullopt;
  auto delay = std::chrono::ceil<milliseconds>(*next + milliseconds(100) - now);
  return std::max(delay, milliseconds(0));
}

std::string schedule_spec(const json& cronjob, bool* tz_in_schedule) {
  const json& spec = field(cronjob, "spec");
  std::string schedule = spec.value("schedule", "");
  *tz_in_schedule = schedule.find("TZ") != std::string::npos;
  if (*tz_in_schedule) return schedule;
  auto tz = spec.find("timeZone");
  if (tz != spec.end() && tz->is_string() && TimeZone::find(tz->get<std::string>()) != nullptr)
    return "TZ=" + tz->get<std::string>() + " " + schedule;
  return schedule;
}

std::string job_name(const json& cronjob, TimePoint scheduled) {
  int64_t minutes = std::chrono::floor<std::chrono::minutes>(scheduled.time_since_epoch()).count();
  return meta(cronjob, "name") + "-" + std::to_string(minutes);
}

json job_from_template(const json& cronjob, TimePoint scheduled, const TimeZone& zone) {
  const json& job_template = field(field(cronjob, "spec"), "jobTemplate");
  const json& template_meta = field(job_template, "metadata");
  json metadata = {{"name", job_name(cronjob, scheduled)},
                   {"namespace", meta(cronjob, "namespace")}};
  metadata["labels"] = field(template_meta, "labels");
  json annotations = field(template_meta, "annotations");
  annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] =
      apiserver::builtin::format_rfc3339_in(scheduled, zone);
  metadata["annotations"] = std::move(annotations);
  if (metadata["labels"].empty()) metadata.erase("labels");
  metadata["ownerReferences"] =
      json::array({controller_owner_ref(workload::with_type(cronjob, "batch/v1", "CronJob"))});
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", std::move(metadata)},
          {"spec", field(job_template, "spec")}};
}

std::string rfc1123z(TimePoint t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S +0000", &tm);
  return buf;
}

}  // namespace vkube::controllers::cronjob
