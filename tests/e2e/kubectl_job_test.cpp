// Jobs and CronJobs through kubectl against the in-process controllers:
// `create job` run to completion (the test plays the kubelet through the
// status subresource) and `wait --for=condition=complete`, `create job
// --from=cronjob/...`, and a CronJob firing on the real clock.
#include "fixture.h"

#include <algorithm>
#include <thread>

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

// The names of the pods of Job `job` in the default namespace.
std::vector<std::string> job_pods(Cluster& c, const std::string& job) {
  std::vector<std::string> out;
  const json pods = c.get_json({"pods", "-l", "job-name=" + job});
  for (const json& p : pods["items"]) out.push_back(p["metadata"]["name"]);
  return out;
}

// The reasons of the Events about `name` in the default namespace.
std::vector<std::string> event_reasons(Cluster& c, const std::string& name) {
  std::vector<std::string> out;
  const json events = c.get_json({"events"});
  for (const json& e : events["items"])
    if (e["involvedObject"]["name"] == name) out.push_back(e["reason"]);
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_CASE("kubectl create job runs to completion and kubectl wait sees it", "[e2e][job]") {
  Cluster c;
  Result created = c.kubectl({"create", "job", "pi", "--image=busybox", "--", "echo", "hi"});
  INFO(created);
  REQUIRE_THAT(created, Succeeded());
  CHECK(lines(created.out) == std::vector<std::string>{"job.batch/pi created"});
  REQUIRE(eventually([&] { return job_pods(c, "pi").size() == 1; }));
  const std::string pod = job_pods(c, "pi")[0];

  Process wait =
      c.kubectl_background({"wait", "--for=condition=complete", "job/pi", "--timeout=30s"});
  Result done = c.kubectl({"patch", "pod", pod, "--subresource=status", "--type=merge", "-p",
                           R"({"status":{"phase":"Succeeded"}})"});
  INFO(done);
  REQUIRE_THAT(done, Succeeded());
  std::optional<int> code = wait.wait_for(seconds(40));
  Result waited = wait.result(!code.has_value());
  INFO(waited);
  REQUIRE_THAT(waited, Succeeded());
  CHECK(waited.out.find("job.batch/pi condition met") != std::string::npos);

  Result table = c.kubectl({"get", "job", "pi"});
  INFO(table);
  REQUIRE_THAT(table, Succeeded());
  std::vector<std::string> rows = lines(table.out);
  REQUIRE(rows.size() == 2);
  CHECK(columns(rows[0])[2] == "COMPLETIONS");
  CHECK(columns(rows[1])[1] == "Complete");
  CHECK(columns(rows[1])[2] == "1/1");

  json job = c.get_json({"job", "pi"});
  CHECK(job["status"]["succeeded"] == 1);
  CHECK(job["status"].contains("completionTime"));
  CHECK(eventually([&] {
    std::vector<std::string> reasons = event_reasons(c, "pi");
    return contains(reasons, "SuccessfulCreate") && contains(reasons, "Completed");
  }));
  // The pod no longer carries the tracking finalizer: it can be deleted.
  REQUIRE_THAT(c.kubectl({"delete", "pod", pod, "--wait=true", "--timeout=20s"}), Succeeded());
}

TEST_CASE("kubectl create job --from=cronjob makes a Job from the CronJob's template",
          "[e2e][job]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *",
                          "--", "date"}),
               Succeeded());
  Result r = c.kubectl({"create", "job", "by-hand", "--from=cronjob/nightly"});
  INFO(r);
  REQUIRE_THAT(r, Succeeded());
  json job = c.get_json({"job", "by-hand"});
  CHECK(job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual");
  json cj = c.get_json({"cronjob", "nightly"});
  CHECK(job["metadata"]["ownerReferences"][0]["uid"] == cj["metadata"]["uid"]);
  CHECK(job["spec"]["template"]["spec"]["containers"][0]["command"] == json::array({"date"}));
  // The Job controller runs it like any other.
  CHECK(eventually([&] { return job_pods(c, "by-hand").size() == 1; }));
  // Not due until 03:00: the CronJob itself has scheduled nothing.
  Result table = c.kubectl({"get", "cronjob", "nightly"});
  INFO(table);
  REQUIRE(lines(table.out).size() == 2);
  CHECK(columns(lines(table.out)[1])[1] == "0");
}

TEST_CASE("a CronJob scheduled every minute fires within 65 s", "[e2e][job][slow]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "cronjob", "every", "--image=busybox", "--schedule=* * * * *",
                          "--", "date"}),
               Succeeded());
  std::vector<json> jobs;
  bool fired = eventually(
      [&] {
        jobs.clear();
        json list = c.get_json({"jobs"});
        for (json& j : list["items"])
          if (j["metadata"]["name"].get<std::string>().rfind("every-", 0) == 0)
            jobs.push_back(std::move(j));
        if (jobs.empty()) std::this_thread::sleep_for(seconds(1));
        return !jobs.empty();
      },
      seconds(65));
  REQUIRE(fired);
  REQUIRE(jobs.size() == 1);
  const json& job = jobs[0];
  CHECK(job["metadata"]["ownerReferences"][0]["kind"] == "CronJob");
  CHECK(job["metadata"]["annotations"].contains("batch.kubernetes.io/cronjob-scheduled-timestamp"));
  json cj = c.get_json({"cronjob", "every"});
  CHECK(cj["status"]["active"][0]["name"] == job["metadata"]["name"]);
  CHECK(cj["status"].contains("lastScheduleTime"));
  // The Job's name is the scheduled minute since the epoch.
  std::string minutes = job["metadata"]["name"].get<std::string>().substr(6);
  CHECK(std::to_string(std::stoll(minutes)) == minutes);
}

}  // namespace
}  // namespace vkube::e2e
