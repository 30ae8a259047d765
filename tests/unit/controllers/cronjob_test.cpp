// The CronJob controller over a real API server with an injected clock: Jobs
// at the scheduled minute with kube's names and annotations, Forbid and
// Replace, history limits, startingDeadlineSeconds, suspend and time zones.
// The test moves the clock, then touches the CronJob so that its controller
// looks at it now instead of at the (real-time) scheduled moment.
#include <catch2/catch.hpp>

#include <atomic>

#include "support/control_plane.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;
using testing::ControlPlane;
using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

const std::string kCronJobs = "/apis/batch/v1/namespaces/w/cronjobs";
const std::string kJobs = "/apis/batch/v1/namespaces/w/jobs";

struct FakeClock {
  std::atomic<int64_t> offset_s{0};
  Clock::time_point now() const { return Clock::now() + std::chrono::seconds(offset_s.load()); }
  void set(Clock::time_point t) {
    offset_s = std::chrono::duration_cast<std::chrono::seconds>(t - Clock::now()).count();
  }
  std::function<Clock::time_point()> fn() {
    return [this] { return now(); };
  }
};

json cronjob(const std::string& name, const std::string& schedule,
             const json& spec = json::object()) {
  json cj = {
      {"apiVersion", "batch/v1"},
      {"kind", "CronJob"},
      {"metadata", {{"name", name}, {"namespace", "w"}}},
      {"spec",
       {{"schedule", schedule},
        {"jobTemplate",
         {{"metadata", {{"labels", {{"app", name}}}}},
          {"spec",
           {{"template",
             {{"spec",
               {{"restartPolicy", "OnFailure"},
                {"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}}}}}}}}}};
  cj["spec"].update(spec);
  return cj;
}

// The first minute boundary after t.
Clock::time_point next_minute(Clock::time_point t) {
  return std::chrono::floor<std::chrono::minutes>(t) + 1min;
}

// metadata.creationTimestamp of a created object.
Clock::time_point created_at(const json& obj) {
  std::tm tm{};
  std::string s = obj["metadata"]["creationTimestamp"];
  strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  return Clock::from_time_t(timegm(&tm));
}

std::string minutes_of(Clock::time_point t) {
  return std::to_string(std::chrono::floor<std::chrono::minutes>(t.time_since_epoch()).count());
}

std::string rfc3339(Clock::time_point t) {
  std::time_t tt = Clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<json> jobs_of(ControlPlane& cp, const std::string& cronjob_name) {
  std::vector<json> out;
  for (const json& j : cp.items(kJobs))
    for (const json& r : j["metadata"].value("ownerReferences", json::array()))
      if (r["kind"] == "CronJob" && r["name"] == cronjob_name) out.push_back(j);
  return out;
}

std::vector<json> events(ControlPlane& cp, const std::string& reason) {
  std::vector<json> out;
  for (const json& e : cp.items("/api/v1/namespaces/w/events"))
    if (e["reason"] == reason) out.push_back(e);
  return out;
}

void poke(ControlPlane& cp, const std::string& name) {
  static int n = 0;
  ControlPlane::Answer a;
  // The API server can answer 409 while the controller writes the same object.
  for (int i = 0; i < 5 && (i == 0 || a.code == 409); ++i)
    a = cp.call("PATCH", kCronJobs + "/" + name,
                {{"metadata", {{"annotations", {{"test/poke", std::to_string(++n)}}}}}},
                "application/merge-patch+json");
  REQUIRE(a.code == 200);
}

// Moves the clock to `t` and lets the controller look.
void at(FakeClock& clock, ControlPlane& cp, const std::string& name, Clock::time_point t) {
  clock.set(t);
  poke(cp, name);
  REQUIRE(cp.manager->wait_idle(5s));
}

// What the kubelet and Job controller would report for a finished Job.
void finish(ControlPlane& cp, const json& job, const std::string& type, Clock::time_point start) {
  json status = {
      {"startTime", rfc3339(start)},
      {"conditions",
       {{{"type", type == "Complete" ? "SuccessCriteriaMet" : "FailureTarget"}, {"status", "True"}},
        {{"type", type}, {"status", "True"}}}}};
  if (type == "Complete") {
    status["completionTime"] = rfc3339(start + 30s);
    status["succeeded"] = 1;
  } else {
    status["failed"] = 1;
  }
  auto a = cp.call("PATCH", kJobs + "/" + job["metadata"]["name"].get<std::string>() + "/status",
                   {{"status", status}}, "application/merge-patch+json");
  INFO(a.body.dump());
  REQUIRE(a.code == 200);
}

TEST_CASE("a CronJob creates its Job at the scheduled minute", "[controllers][cronjob]") {
  FakeClock clock;
  ControlPlane cp({"cronjob"}, clock.fn());
  json cj = cp.create(kCronJobs, cronjob("tick", "* * * * *"));
  Clock::time_point due = next_minute(created_at(cj));
  REQUIRE(cp.manager->wait_idle(5s));
  at(clock, cp, "tick", due - 30s);
  CHECK(jobs_of(cp, "tick").empty());

  at(clock, cp, "tick", due + 5s);
  std::vector<json> jobs = jobs_of(cp, "tick");
  REQUIRE(jobs.size() == 1);
  const json& job = jobs[0];
  CHECK(job["metadata"]["name"] == "tick-" + minutes_of(due));
  CHECK(job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] ==
        rfc3339(due));
  CHECK(job["metadata"]["labels"]["app"] == "tick");
  const json& ref = job["metadata"]["ownerReferences"][0];
  CHECK(ref["uid"] == cj["metadata"]["uid"]);
  CHECK(ref["controller"] == true);
  json status = cp.get(kCronJobs + "/tick")["status"];
  CHECK(status["lastScheduleTime"] == rfc3339(due));
  REQUIRE(status["active"].size() == 1);
  CHECK(status["active"][0]["name"] == job["metadata"]["name"]);
  CHECK(status["active"][0]["kind"] == "Job");
  auto created = events(cp, "SuccessfulCreate");
  REQUIRE(created.size() == 1);
  CHECK(created[0]["message"] == "Created job " + job["metadata"]["name"].get<std::string>());
  CHECK(created[0]["source"]["component"] == "cronjob-controller");

  // Looking again within the same minute starts nothing more.
  at(clock, cp, "tick", due + 40s);
  CHECK(jobs_of(cp, "tick").size() == 1);
}

TEST_CASE("concurrencyPolicy Forbid skips a run while a Job is active", "[controllers][cronjob]") {
  FakeClock clock;
  ControlPlane cp({"cronjob"}, clock.fn());
  json cj = cp.create(kCronJobs, cronjob("solo", "* * * * *", {{"concurrencyPolicy", "Forbid"}}));
  Clock::time_point m1 = next_minute(created_at(cj));
  at(clock, cp, "solo", m1 + 5s);
  REQUIRE(jobs_of(cp, "solo").size() == 1);
  at(clock, cp, "solo", m1 + 65s);
  CHECK(jobs_of(cp, "solo").size() == 1);
  CHECK_FALSE(events(cp, "JobAlreadyActive").empty());

  finish(cp, jobs_of(cp, "solo")[0], "Complete", m1 + 5s);
  REQUIRE(cp.manager->wait_idle(5s));
  auto saw = events(cp, "SawCompletedJob");
  REQUIRE(saw.size() == 1);
  CHECK(saw[0]["message"] == "Saw completed job: solo-" + minutes_of(m1) + ", condition: Complete");
  // As in kube, the run skipped for Forbid starts once the active Job is done
  // (it is still within its starting deadline, which is unset).
  std::vector<std::string> names;
  for (const json& j : jobs_of(cp, "solo")) names.push_back(j["metadata"]["name"]);
  CHECK(names ==
        std::vector<std::string>{"solo-" + minutes_of(m1), "solo-" + minutes_of(m1 + 1min)});
  json status = cp.get(kCronJobs + "/solo")["status"];
  CHECK(status["lastSuccessfulTime"] == rfc3339(m1 + 35s));
  CHECK(status["lastScheduleTime"] == rfc3339(m1 + 1min));
  REQUIRE(status["active"].size() == 1);
  CHECK(status["active"][0]["name"] == "solo-" + minutes_of(m1 + 1min));
}

TEST_CASE("concurrencyPolicy Replace deletes the running Job", "[controllers][cronjob]") {
  FakeClock clock;
  ControlPlane cp({"cronjob"}, clock.fn());
  json cj = cp.create(kCronJobs, cronjob("swap", "* * * * *", {{"concurrencyPolicy", "Replace"}}));
  Clock::time_point m1 = next_minute(created_at(cj));
  at(clock, cp, "swap", m1 + 5s);
  REQUIRE(jobs_of(cp, "swap").size() == 1);
  at(clock, cp, "swap", m1 + 65s);
  std::vector<json> jobs = jobs_of(cp, "swap");
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0]["metadata"]["name"] == "swap-" + minutes_of(m1 + 1min));
  json status = cp.get(kCronJobs + "/swap")["status"];
  REQUIRE(status["active"].size() == 1);
  CHECK(status["active"][0]["name"] == "swap-" + minutes_of(m1 + 1min));
  auto deleted = events(cp, "SuccessfulDelete");
  REQUIRE(deleted.size() == 1);
  CHECK(deleted[0]["message"] == "Deleted job swap-" + minutes_of(m1));
}

TEST_CASE("history limits delete the oldest finished Jobs", "[controllers][cronjob]") {
  FakeClock clock;
  ControlPlane cp({"cronjob"}, clock.fn());
  json cj = cp.create(kCronJobs,
                      cronjob("hist", "* * * * *",
                              {{"successfulJobsHistoryLimit", 1}, {"failedJobsHistoryLimit", 1}}));
  Clock::time_point m1 = next_minute(created_at(cj));
  for (int i = 0; i < 4; ++i) {
    at(clock, cp, "hist", m1 + std::chrono::minutes(i) + 5s);
    for (const json& j : jobs_of(cp, "hist"))
      if (j["metadata"]["name"] == "hist-" + minutes_of(m1 + std::chrono::minutes(i)))
        finish(cp, j, i % 2 == 0 ? "Complete" : "Failed", m1 + std::chrono::minutes(i));
  }
  poke(cp, "hist");
  REQUIRE(cp.manager->wait_idle(5s));
  std::vector<std::string> names;
  for (const json& j : jobs_of(cp, "hist")) names.push_back(j["metadata"]["name"]);
  // Runs 0 and 2 succeeded, 1 and 3 failed: the newest of each is kept.
  CHECK(names ==
        std::vector<std::string>{"hist-" + minutes_of(m1 + 2min), "hist-" + minutes_of(m1 + 3min)});
  CHECK(events(cp, "SuccessfulDelete").size() == 2);
}

TEST_CASE("a run missed by more than startingDeadlineSeconds is skipped",
          "[controllers][cronjob]") {
  FakeClock clock;
  ControlPlane cp({"cronjob"}, clock.fn());
  json cj = cp.create(kCronJobs, cronjob("strict", "* * * * *", {{"startingDeadlineSeconds", 10}}));
  Clock::time_point m1 = next_minute(created_at(cj));
  at(clock, cp, "strict", m1 + 30s);
  CHECK(jobs_of(cp, "strict").empty());
  // The next run, within its deadline, starts.
  at(clock, cp, "strict", m1 + 65s);
  std::vector<json> jobs = jobs_of(cp, "strict");
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0]["metadata"]["name"] == "strict-" + minutes_of(m1 + 1min));
}

TEST_CASE("a suspended CronJob starts nothing", "[controllers][cronjob]") {
  FakeClock clock;
  ControlPlane cp({"cronjob"}, clock.fn());
  json cj = cp.create(kCronJobs, cronjob("paused", "* * * * *", {{"suspend", true}}));
  Clock::time_point m1 = next_minute(created_at(cj));
  at(clock, cp, "paused", m1 + 5s);
  CHECK(jobs_of(cp, "paused").empty());
  REQUIRE(cp.call("PATCH", kCronJobs + "/paused", {{"spec", {{"suspend", false}}}},
                  "application/merge-patch+json")
              .code == 200);
  REQUIRE(cp.manager->wait_idle(5s));
  CHECK(jobs_of(cp, "paused").size() == 1);
}

TEST_CASE("a CronJob runs in its spec.timeZone", "[controllers][cronjob]") {
  FakeClock clock;
  ControlPlane cp({"cronjob"}, clock.fn());
  json cj = cp.create(kCronJobs, cronjob("tz", "0 9 * * *", {{"timeZone", "Asia/Kolkata"}}));
  // 09:00 in Kolkata (UTC+05:30) is 03:30Z: the first one after now.
  Clock::time_point day = std::chrono::floor<std::chrono::days>(created_at(cj));
  Clock::time_point due = day + 3h + 30min;
  if (due <= created_at(cj)) due += 24h;
  at(clock, cp, "tz", due + 5s);
  std::vector<json> jobs = jobs_of(cp, "tz");
  REQUIRE(jobs.size() == 1);
  std::string stamp =
      jobs[0]["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"];
  CHECK(stamp.substr(10) == "T09:00:00+05:30");
  CHECK(jobs[0]["metadata"]["name"] == "tz-" + minutes_of(due));

  // kube's API server refuses unknown zones; one that got stored anyway is
  // reported and never run.
  auto nowhere =
      cp.call("POST", kCronJobs, cronjob("nowhere", "0 9 * * *", {{"timeZone", "Mars/Olympus"}}));
  if (nowhere.code == 201) {
    REQUIRE(cp.manager->wait_idle(5s));
    auto unknown = events(cp, "UnknownTimeZone");
    REQUIRE(unknown.size() == 1);
    CHECK(unknown[0]["message"] ==
          "invalid timeZone: \"Mars/Olympus\": unknown time zone Mars/Olympus");
  } else {
    CHECK(nowhere.code == 422);
  }
}

}  // namespace
}  // namespace vkube::controllers
