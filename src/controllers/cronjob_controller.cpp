// The CronJob controller (kube's ControllerV2, 1.32 behaviour): a Job named
// "<cronjob>-<minutes since the epoch>" at each scheduled time in the
// CronJob's zone, concurrencyPolicy Allow/Forbid/Replace,
// startingDeadlineSeconds, suspend, status.active/lastScheduleTime/
// lastSuccessfulTime, and the successful/failed Jobs history limits.
// A CronJob is looked at again exactly when its next time is due
// (add_after), never polled.
#include <algorithm>
#include <set>

#include "controller.h"
#include "cronjob_schedule.h"
#include "util.h"
#include "workload_common.h"

namespace vkube::controllers {

namespace cronjob {

namespace {

using std::chrono::milliseconds;

const ResourceKey kCronJobs{"batch", "cronjobs"};
const ResourceKey kJobs{"batch", "jobs"};
constexpr const char* kComponent = "cronjob-controller";

const json& section(const json& obj, const char* name) {
  static const json empty = json::object();
  auto it = obj.find(name);
  return it != obj.end() && it->is_object() ? *it : empty;
}

// Complete or Failed, when one is True (kube's jobutil.FinishedCondition).
std::string finished_condition(const json& job) {
  auto conditions = section(job, "status").find("conditions");
  if (conditions == section(job, "status").end() || !conditions->is_array()) return {};
  for (const json& c : *conditions) {
    std::string type = c.value("type", "");
    if ((type == "Complete" || type == "Failed") && c.value("status", "") == "True") return type;
  }
  return {};
}

const json& active_list(const json& cj) {
  static const json empty = json::array();
  auto it = section(cj, "status").find("active");
  return it != section(cj, "status").end() && it->is_array() ? *it : empty;
}

bool in_active_list(const json& cj, const std::string& uid) {
  for (const json& ref : active_list(cj))
    if (ref.value("uid", "") == uid) return true;
  return false;
}

void delete_from_active_list(json& cj, const std::string& uid) {
  json kept = json::array();
  for (const json& ref : active_list(cj))
    if (ref.value("uid", "") != uid) kept.push_back(ref);
  if (kept.empty())
    cj["status"].erase("active");
  else
    cj["status"]["active"] = std::move(kept);
}

bool namespace_terminating(const ApiResult& r) {
  if (r.code != 403 || !r.body.is_object()) return false;
  auto causes = section(r.body, "details").find("causes");
  if (causes == section(r.body, "details").end() || !causes->is_array()) return false;
  for (const json& c : *causes)
    if (c.is_object() && c.value("reason", "") == "NamespaceTerminating") return true;
  return false;
}

json job_ref(const json& job) {
  return {{"kind", "Job"},
          {"namespace", meta(job, "namespace")},
          {"name", meta(job, "name")},
          {"uid", meta(job, "uid")},
          {"apiVersion", "batch/v1"},
          {"resourceVersion", meta(job, "resourceVersion")}};
}

// Oldest first: by status.startTime (unstarted last), then name.
void sort_by_start_time(std::vector<ObjectPtr>& jobs) {
  std::stable_sort(jobs.begin(), jobs.end(), [](const ObjectPtr& a, const ObjectPtr& b) {
    auto sa = parse_rfc3339(section(*a, "status").value("startTime", ""));
    auto sb = parse_rfc3339(section(*b, "status").value("startTime", ""));
    if (!sa || !sb) return sa.has_value() && !sb.has_value();
    if (*sa == *sb) return meta(*a, "name") < meta(*b, "name");
    return *sa < *sb;
  });
}

}  // namespace

class CronJobController final : public Controller {
 public:
  explicit CronJobController(Context& ctx)
      : Controller(ctx, "cronjob"),
        cronjobs_(ctx.informers.cache(kCronJobs)),
        jobs_(ctx.informers.cache(kJobs)) {
    ctx.informers.on_event(kCronJobs, [this](const ObjectEvent& e) { on_cronjob(e); });
    ctx.informers.on_event(kJobs, [this](const ObjectEvent& e) { on_job(e); });
  }

 protected:
  Status reconcile(const std::string& key) override;

 private:
  struct Outcome {
    std::optional<milliseconds> requeue;
    bool update_status = false;
    Status error;
  };

  void on_cronjob(const ObjectEvent& e);
  void on_job(const ObjectEvent& e);
  bool cleanup_finished_jobs(json& cj, const std::vector<ObjectPtr>& jobs);
  bool remove_oldest(json& cj, std::vector<ObjectPtr> jobs, int64_t keep);
  bool delete_job(json& cj, const json& job);
  Outcome sync_cronjob(json& cj, const std::vector<ObjectPtr>& jobs);
  // The schedule to run, in its zone; nullopt (with a warning Event where
  // kube records one) when the zone is unknown, the CronJob is suspended or
  // the schedule does not parse.
  std::optional<CronSchedule> usable_schedule(const json& cj);
  void track_children(json& cj, const std::vector<ObjectPtr>& jobs, Outcome& out);
  Outcome start_job(json& cj, TimePoint scheduled, const CronSchedule& schedule, TimePoint now);
  void warn(const json& cj, const std::string& reason, const std::string& message) {
    ctx_.events.record(cj, kComponent, "Warning", reason, message);
  }

  const Lister& cronjobs_;
  const Lister& jobs_;
};

void CronJobController::on_cronjob(const ObjectEvent& e) {
  if (e.type == EventType::kModified && e.old) {
    const json& spec = section(*e.object, "spec");
    const json& old_spec = section(*e.old, "spec");
    if (spec.value("schedule", "") != old_spec.value("schedule", "") ||
        spec.value("timeZone", json()) != old_spec.value("timeZone", json())) {
      // A new schedule is first looked at when it is next due, so that it
      // does not fire at once for a time the old schedule had not.
      bool tz = false;
      auto schedule = apiserver::builtin::parse_cron_schedule(schedule_spec(*e.object, &tz));
      if (!schedule) {
        warn(*e.object, "UnParseableCronJobSchedule",
             "unparseable schedule for cronjob: " + spec.value("schedule", ""));
        return;
      }
      if (auto delay = next_schedule_delay(*e.object, ctx_.now(), *schedule))
        queue().add_after(e.key, *delay);
      return;
    }
  }
  queue().add(e.key);
}

void CronJobController::on_job(const ObjectEvent& e) {
  for (const ObjectPtr& obj : {e.object, e.old}) {
    if (obj == nullptr) continue;
    const json* ref = controller_ref(*obj);
    if (ref != nullptr && ref->value("kind", "") == "CronJob")
      queue().add(meta(*obj, "namespace") + "/" + ref->value("name", ""));
  }
}

Status CronJobController::reconcile(const std::string& key) {
  ObjectPtr cached = cronjobs_.get(key);
  if (cached == nullptr) return Status::ok();
  std::vector<ObjectPtr> jobs = jobs_.controlled_by(meta(*cached, "uid"));
  json cj = workload::with_type(*cached, "batch/v1", "CronJob");
  bool cleaned = cleanup_finished_jobs(cj, jobs);
  Outcome out = sync_cronjob(cj, jobs);
  if (cleaned || out.update_status) {
    auto [ns, name] = split_key(key);
    ApiResult r = ctx_.client.call("PUT", api_path("batch/v1", "cronjobs", ns, name, "status"), cj);
    ctx_.informers.sync();
    VKUBE_RETURN_IF_ERROR(workload::api_status(r));
  }
  if (out.requeue) {
    queue().add_after(key, *out.requeue);
    return Status::ok();
  }
  return out.error;
}

bool CronJobController::delete_job(json& cj, const json& job) {
  json options = {
      {"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", "Background"}};
  ApiResult r = ctx_.client.call(
      "DELETE", api_path("batch/v1", "jobs", meta(job, "namespace"), meta(job, "name")), options);
  if (!r.ok()) {
    warn(cj, "FailedDelete", "Deleted job: " + workload::api_status(r).message());
    return false;
  }
  delete_from_active_list(cj, meta(job, "uid"));
  ctx_.events.record(cj, kComponent, "Normal", "SuccessfulDelete",
                     "Deleted job " + meta(job, "name"));
  return true;
}

bool CronJobController::remove_oldest(json& cj, std::vector<ObjectPtr> jobs, int64_t keep) {
  if (static_cast<int64_t>(jobs.size()) <= keep) return false;
  sort_by_start_time(jobs);
  bool changed = false;
  size_t n = jobs.size() - static_cast<size_t>(std::max<int64_t>(keep, 0));
  for (size_t i = 0; i < n; ++i) changed |= delete_job(cj, *jobs[i]);
  ctx_.informers.sync();
  return changed;
}

bool CronJobController::cleanup_finished_jobs(json& cj, const std::vector<ObjectPtr>& jobs) {
  const json& spec = section(cj, "spec");
  auto successful_limit = spec.find("successfulJobsHistoryLimit");
  auto failed_limit = spec.find("failedJobsHistoryLimit");
  std::vector<ObjectPtr> successful, failed;
  for (const ObjectPtr& job : jobs) {
    std::string finished = finished_condition(*job);
    if (finished == "Complete")
      successful.push_back(job);
    else if (finished == "Failed")
      failed.push_back(job);
  }
  bool changed = false;
  if (successful_limit != spec.end() && successful_limit->is_number_integer())
    changed |= remove_oldest(cj, successful, successful_limit->get<int64_t>());
  if (failed_limit != spec.end() && failed_limit->is_number_integer())
    changed |= remove_oldest(cj, failed, failed_limit->get<int64_t>());
  return changed;
}

void CronJobController::track_children(json& cj, const std::vector<ObjectPtr>& jobs, Outcome& out) {
  std::set<std::string> children;
  for (const ObjectPtr& job : jobs) {
    const std::string uid = meta(*job, "uid");
    children.insert(uid);
    const bool found = in_active_list(cj, uid);
    const std::string finished = finished_condition(*job);
    if (!found && finished.empty()) {
      // The cache may trail our own status write: ask the server.
      ApiResult fresh = ctx_.client.call(
          "GET", api_path("batch/v1", "cronjobs", meta(cj, "namespace"), meta(cj, "name")));
      if (fresh.ok() && in_active_list(fresh.body, uid)) {
        cj = workload::with_type(fresh.body, "batch/v1", "CronJob");
        continue;
      }
      warn(cj, "UnexpectedJob",
           "Saw a job that the controller did not create or forgot: " + meta(*job, "name"));
    } else if (!finished.empty()) {
      if (found) {
        delete_from_active_list(cj, uid);
        ctx_.events.record(cj, kComponent, "Normal", "SawCompletedJob",
                           "Saw completed job: " + meta(*job, "name") + ", condition: " + finished);
        out.update_status = true;
      }
      if (finished != "Complete") continue;
      std::string completed = section(*job, "status").value("completionTime", "");
      auto at = parse_rfc3339(completed);
      auto last = parse_rfc3339(section(cj, "status").value("lastSuccessfulTime", ""));
      if (at && (!last || *at > *last)) {
        cj["status"]["lastSuccessfulTime"] = completed;
        out.update_status = true;
      }
    }
  }
  // Active Jobs that are gone (checked with the server, not the cache).
  const json active = active_list(cj);
  for (const json& ref : active) {
    if (children.count(ref.value("uid", ""))) continue;
    ApiResult r = ctx_.client.call(
        "GET", api_path("batch/v1", "jobs", ref.value("namespace", ""), ref.value("name", "")));
    if (r.code == 404) {
      ctx_.events.record(cj, kComponent, "Normal", "MissingJob",
                         "Active job went missing: " + ref.value("name", ""));
      delete_from_active_list(cj, ref.value("uid", ""));
      out.update_status = true;
    } else if (!r.ok()) {
      out.error = workload::api_status(r);
    }
  }
}

std::optional<CronSchedule> CronJobController::usable_schedule(const json& cj) {
  const json& spec = section(cj, "spec");
  if (auto tz = spec.find("timeZone"); tz != spec.end() && tz->is_string()) {
    std::string err;
    if (TimeZone::find(tz->get<std::string>(), &err) == nullptr) {
      warn(cj, "UnknownTimeZone", "invalid timeZone: \"" + tz->get<std::string>() + "\": " + err);
      return std::nullopt;
    }
  }
  if (spec.value("suspend", false)) return std::nullopt;
  bool tz_in_schedule = false;
  std::string spec_text = schedule_spec(cj, &tz_in_schedule);
  if (tz_in_schedule)
    warn(cj, "UnsupportedSchedule",
         "CRON_TZ or TZ used in schedule \"" + spec.value("schedule", "") +
             "\" is not officially supported, see "
             "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more "
             "details");
  std::string err;
  auto schedule = apiserver::builtin::parse_cron_schedule(spec_text, nullptr, &err);
  if (!schedule)
    warn(cj, "UnparseableSchedule",
         "unparseable schedule: \"" + spec.value("schedule", "") + "\" : " + err);
  return schedule;
}

CronJobController::Outcome CronJobController::sync_cronjob(json& cj,
                                                           const std::vector<ObjectPtr>& jobs) {
  Outcome out;
  const TimePoint now = ctx_.now();
  track_children(cj, jobs, out);
  if (!out.error.is_ok() || is_terminating(cj)) return out;
  const json& spec = section(cj, "spec");
  std::optional<CronSchedule> schedule = usable_schedule(cj);
  if (!schedule) return out;
  MostRecent due = most_recent_schedule_time(cj, now, *schedule, true);
  if (due.missed == Missed::kMany && due.time)
    warn(cj, "TooManyMissedTimes",
         "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check "
         "clock skew");
  if (!due.error.empty()) {
    warn(cj, "InvalidSchedule",
         "invalid schedule: " + spec.value("schedule", "") + " : " + due.error);
    return out;
  }
  out.requeue = next_schedule_delay(cj, now, *schedule);
  if (!due.time) return out;
  const TimePoint scheduled = *due.time;
  auto deadline = spec.find("startingDeadlineSeconds");
  if (deadline != spec.end() && deadline->is_number_integer() &&
      scheduled + std::chrono::seconds(deadline->get<int64_t>()) < now) {
    warn(cj, "MissSchedule", "Missed scheduled time to start a job: " + rfc1123z(scheduled));
    return out;
  }
  const std::string name = job_name(cj, scheduled);
  bool processed = false;
  for (const json& ref : active_list(cj)) processed |= ref.value("name", "") == name;
  auto last = parse_rfc3339(section(cj, "status").value("lastScheduleTime", ""));
  if (processed || (last && *last == scheduled)) return out;
  const std::string policy = spec.value("concurrencyPolicy", "Allow");
  if (policy == "Forbid" && !active_list(cj).empty()) {
    ctx_.events.record(cj, kComponent, "Normal", "JobAlreadyActive",
                       "Not starting job because prior execution is running and concurrency "
                       "policy is Forbid");
    return out;
  }
  if (policy == "Replace") {
    const json active = active_list(cj);
    for (const json& ref : active) {
      ApiResult r = ctx_.client.call(
          "GET", api_path("batch/v1", "jobs", ref.value("namespace", ""), ref.value("name", "")));
      if (!r.ok()) {
        Status st = workload::api_status(r);
        warn(cj, "FailedGet", "Get job: " + st.message());
        return Outcome{std::nullopt, out.update_status, st};
      }
      if (!delete_job(cj, r.body))
        return Outcome{std::nullopt, out.update_status,
                       Status::internal("could not replace job " + ref.value("name", ""))};
      out.update_status = true;
    }
  }
  Outcome started = start_job(cj, scheduled, *schedule, now);
  started.update_status |= out.update_status;
  return started;
}

CronJobController::Outcome CronJobController::start_job(json& cj, TimePoint scheduled,
                                                        const CronSchedule& schedule,
                                                        TimePoint now) {
  Outcome out;
  const std::string ns = meta(cj, "namespace");
  json job = job_from_template(cj, scheduled, *schedule.zone);
  ApiResult r = ctx_.client.call("POST", api_path("batch/v1", "jobs", ns), job);
  json created;
  if (r.ok()) {
    created = std::move(r.body);
    ctx_.events.record(cj, kComponent, "Normal", "SuccessfulCreate",
                       "Created job " + meta(created, "name"));
  } else if (r.code == 409 && r.body.value("reason", "") == "AlreadyExists") {
    // Created before, but the status update after it was lost.
    ApiResult existing =
        ctx_.client.call("GET", api_path("batch/v1", "jobs", ns, meta(job, "name")));
    if (!existing.ok()) return Outcome{std::nullopt, false, workload::api_status(existing)};
    created = std::move(existing.body);
    if (!is_controlled_by(created, meta(cj, "uid")) || in_active_list(cj, meta(created, "uid")))
      return out;
  } else {
    Status st = workload::api_status(r);
    if (!namespace_terminating(r)) warn(cj, "FailedCreate", "Error creating job: " + st.message());
    return Outcome{std::nullopt, false, st};
  }
  cj["status"]["active"].push_back(job_ref(created));
  cj["status"]["lastScheduleTime"] = rfc3339(scheduled);
  out.update_status = true;
  out.requeue = next_schedule_delay(cj, now, schedule);
  return out;
}

}  // namespace cronjob

std::unique_ptr<Controller> make_cronjob_controller(Context& ctx) {
  return std::make_unique<cronjob::CronJobController>(ctx);
}

}  // namespace vkube::controllers
