// The Job controller over a real API server: pods up to parallelism and
// completions, success and failure counting, backoffLimit and its pod
// recreation backoff, activeDeadlineSeconds, Indexed Jobs, suspend, and the
// ttl-after-finished deletion. The tests act as the kubelet.
#include <catch2/catch.hpp>

#include <atomic>

#include "support/control_plane.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;
using testing::ControlPlane;
using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

const std::string kJobs = "/apis/batch/v1/namespaces/w/jobs";
const std::string kPods = "/api/v1/namespaces/w/pods";

// A clock the test moves: the real time plus an offset.
struct FakeClock {
  std::atomic<int64_t> offset_s{0};
  Clock::time_point now() const { return Clock::now() + std::chrono::seconds(offset_s.load()); }
  void set(Clock::time_point t) {
    offset_s = std::chrono::duration_cast<std::chrono::seconds>(t - Clock::now()).count();
  }
  void advance(std::chrono::seconds d) { offset_s += d.count(); }
  std::function<Clock::time_point()> fn() {
    return [this] { return now(); };
  }
};

json job(const std::string& name, const json& spec) {
  json j = {{"apiVersion", "batch/v1"},
            {"kind", "Job"},
            {"metadata", {{"name", name}, {"namespace", "w"}}},
            {"spec",
             {{"template",
               {{"spec",
                 {{"restartPolicy", "Never"},
                  {"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}}}}}};
  j["spec"].update(spec);
  return j;
}

std::vector<json> pods_of(ControlPlane& cp, const std::string& job_name) {
  return cp.items(kPods + "?labelSelector=batch.kubernetes.io%2Fjob-name%3D" + job_name);
}

std::vector<json> active_pods(ControlPlane& cp, const std::string& job_name) {
  std::vector<json> out;
  for (const json& p : pods_of(cp, job_name)) {
    std::string phase = p["status"].value("phase", "");
    if (!p["metadata"].contains("deletionTimestamp") && phase != "Succeeded" && phase != "Failed")
      out.push_back(p);
  }
  return out;
}

std::string name_of(const json& obj) {
  return obj["metadata"]["name"];
}

// The Job's condition of `type` (null when absent).
json condition(const json& j, const std::string& type) {
  for (const json& c : j["status"].value("conditions", json::array()))
    if (c["type"] == type) return c;
  return nullptr;
}

bool has_condition(ControlPlane& cp, const std::string& name, const std::string& type) {
  json c = condition(cp.get(kJobs + "/" + name), type);
  return !c.is_null() && c["status"] == "True";
}

std::vector<std::string> condition_types(const json& j) {
  std::vector<std::string> out;
  for (const json& c : j["status"].value("conditions", json::array())) out.push_back(c["type"]);
  return out;
}

std::vector<json> events(ControlPlane& cp, const std::string& reason) {
  std::vector<json> out;
  for (const json& e : cp.items("/api/v1/namespaces/w/events"))
    if (e["reason"] == reason) out.push_back(e);
  return out;
}

// Touches the Job so that its controller looks at it now (after the clock moved).
void poke(ControlPlane& cp, const std::string& name) {
  static int n = 0;
  ControlPlane::Answer a;
  // The API server can answer 409 while the controller writes the same object.
  for (int i = 0; i < 5 && (i == 0 || a.code == 409); ++i)
    a = cp.call("PATCH", kJobs + "/" + name,
                {{"metadata", {{"annotations", {{"test/poke", std::to_string(++n)}}}}}},
                "application/merge-patch+json");
  REQUIRE(a.code == 200);
}

TEST_CASE("a Job runs parallelism pods at a time until completions succeed", "[controllers][job]") {
  ControlPlane cp({"job"});
  cp.create(kJobs, job("calc", {{"completions", 3}, {"parallelism", 2}}));
  REQUIRE(ControlPlane::eventually([&] { return active_pods(cp, "calc").size() == 2; }));
  std::vector<json> pods = pods_of(cp, "calc");
  REQUIRE(pods.size() == 2);
  for (const json& p : pods) {
    CHECK(name_of(p).rfind("calc-", 0) == 0);
    CHECK(p["metadata"]["finalizers"] == json::array({"batch.kubernetes.io/job-tracking"}));
    CHECK(p["metadata"]["ownerReferences"][0]["kind"] == "Job");
    CHECK(p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "calc");
  }
  CHECK(ControlPlane::eventually([&] {
    json s = cp.get(kJobs + "/calc")["status"];
    return s.value("active", 0) == 2 && s.contains("startTime");
  }));

  cp.set_pod_status("w", name_of(pods[0]), "Succeeded", false);
  // The success is counted, its finalizer goes, and a third pod starts.
  CHECK(ControlPlane::eventually([&] {
    json s = cp.get(kJobs + "/calc")["status"];
    return s.value("succeeded", 0) == 1 && active_pods(cp, "calc").size() == 2;
  }));
  CHECK_FALSE(cp.get(kPods + "/" + name_of(pods[0]))["metadata"].contains("finalizers"));
  CHECK(pods_of(cp, "calc").size() == 3);
  for (const json& p : active_pods(cp, "calc"))
    cp.set_pod_status("w", name_of(p), "Succeeded", false);

  REQUIRE(ControlPlane::eventually([&] { return has_condition(cp, "calc", "Complete"); }));
  json done = cp.get(kJobs + "/calc");
  CHECK(done["status"]["succeeded"] == 3);
  CHECK_FALSE(done["status"].contains("failed"));
  CHECK_FALSE(done["status"].contains("active"));
  CHECK(done["status"]["ready"] == 0);
  CHECK(done["status"]["terminating"] == 0);
  CHECK(done["status"]["uncountedTerminatedPods"] == json::object());
  CHECK(done["status"].contains("completionTime"));
  // 1.32: SuccessCriteriaMet first, then Complete, both CompletionsReached.
  CHECK(condition_types(done) == std::vector<std::string>{"SuccessCriteriaMet", "Complete"});
  CHECK(condition(done, "Complete")["reason"] == "CompletionsReached");
  CHECK(condition(done, "Complete")["message"] == "Reached expected number of succeeded pods");
  CHECK(pods_of(cp, "calc").size() == 3);
  REQUIRE(cp.manager->wait_idle(5s));
  CHECK(events(cp, "SuccessfulCreate").size() == 3);
  auto completed = events(cp, "Completed");
  REQUIRE(completed.size() == 1);
  CHECK(completed[0]["message"] == "Job completed");
  CHECK(completed[0]["source"]["component"] == "job-controller");
}

TEST_CASE("a Job whose failures exceed backoffLimit fails", "[controllers][job]") {
  ControlPlane cp({"job"});
  cp.create(kJobs, job("flaky", {{"backoffLimit", 1}}));
  REQUIRE(ControlPlane::eventually([&] { return active_pods(cp, "flaky").size() == 1; }));
  // The kubelet's failure time (set_pod_status) is long past: no backoff wait.
  cp.set_pod_status("w", name_of(active_pods(cp, "flaky")[0]), "Failed", false);
  REQUIRE(ControlPlane::eventually([&] {
    return cp.get(kJobs + "/flaky")["status"].value("failed", 0) == 1 &&
           active_pods(cp, "flaky").size() == 1;
  }));
  CHECK_FALSE(has_condition(cp, "flaky", "Failed"));
  cp.set_pod_status("w", name_of(active_pods(cp, "flaky")[0]), "Failed", false);
  REQUIRE(ControlPlane::eventually([&] { return has_condition(cp, "flaky", "Failed"); }));
  json j = cp.get(kJobs + "/flaky");
  CHECK(j["status"]["failed"] == 2);
  CHECK(condition_types(j) == std::vector<std::string>{"FailureTarget", "Failed"});
  CHECK(condition(j, "Failed")["reason"] == "BackoffLimitExceeded");
  CHECK(condition(j, "Failed")["message"] == "Job has reached the specified backoff limit");
  CHECK_FALSE(j["status"].contains("completionTime"));
  CHECK(pods_of(cp, "flaky").size() == 2);  // no third attempt
  REQUIRE(cp.manager->wait_idle(5s));
  auto warning = events(cp, "BackoffLimitExceeded");
  REQUIRE(warning.size() == 1);
  CHECK(warning[0]["type"] == "Warning");
}

TEST_CASE("a failed pod is replaced only after the 10 s backoff", "[controllers][job]") {
  // set_pod_status reports the failure at 2026-01-01T00:00:00Z (Ready turned False).
  FakeClock clock;
  Clock::time_point failed_at = std::chrono::sys_days(std::chrono::year(2026) / 1 / 1);
  clock.set(failed_at + 4s);
  ControlPlane cp({"job"}, clock.fn());
  cp.create(kJobs, job("slow", {{"backoffLimit", 3}}));
  REQUIRE(ControlPlane::eventually([&] { return active_pods(cp, "slow").size() == 1; }));
  cp.set_pod_status("w", name_of(active_pods(cp, "slow")[0]), "Failed", false);
  REQUIRE(ControlPlane::eventually(
      [&] { return cp.get(kJobs + "/slow")["status"].value("failed", 0) == 1; }));
  REQUIRE(cp.manager->wait_idle(5s));
  CHECK(active_pods(cp, "slow").empty());
  clock.set(failed_at + 11s);
  poke(cp, "slow");
  CHECK(ControlPlane::eventually([&] { return active_pods(cp, "slow").size() == 1; }));
}

TEST_CASE("a Job active longer than activeDeadlineSeconds fails and its pods go",
          "[controllers][job]") {
  ControlPlane cp({"job"});
  cp.create(kJobs,
            job("late", {{"activeDeadlineSeconds", 2}, {"parallelism", 2}, {"completions", 4}}));
  REQUIRE(ControlPlane::eventually([&] { return active_pods(cp, "late").size() == 2; }));
  // No event happens: the controller must look again when the deadline passes.
  REQUIRE(ControlPlane::eventually([&] { return has_condition(cp, "late", "Failed"); }, 8s));
  json j = cp.get(kJobs + "/late");
  CHECK(condition(j, "FailureTarget")["reason"] == "DeadlineExceeded");
  CHECK(condition(j, "Failed")["reason"] == "DeadlineExceeded");
  CHECK(condition(j, "Failed")["message"] == "Job was active longer than specified deadline");
  CHECK(j["status"]["failed"] == 2);  // the deleted pods count as failed
  CHECK(pods_of(cp, "late").empty());
}

TEST_CASE("an Indexed Job runs one pod per index and reports completed indexes",
          "[controllers][job]") {
  ControlPlane cp({"job"});
  cp.create(kJobs,
            job("idx", {{"completions", 3}, {"parallelism", 3}, {"completionMode", "Indexed"}}));
  REQUIRE(ControlPlane::eventually([&] { return active_pods(cp, "idx").size() == 3; }));
  std::map<std::string, json> by_index;
  for (const json& p : active_pods(cp, "idx")) {
    std::string index = p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"];
    CHECK(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == index);
    CHECK(p["spec"]["hostname"] == "idx-" + index);
    CHECK(name_of(p).rfind("idx-" + index + "-", 0) == 0);
    CHECK(p["spec"]["containers"][0]["env"][0]["name"] == "JOB_COMPLETION_INDEX");
    by_index[index] = p;
  }
  REQUIRE(by_index.size() == 3);
  cp.set_pod_status("w", name_of(by_index["1"]), "Succeeded", false);
  cp.set_pod_status("w", name_of(by_index["0"]), "Failed", false);
  REQUIRE(ControlPlane::eventually([&] {
    json s = cp.get(kJobs + "/idx")["status"];
    return s.value("completedIndexes", "") == "1" && s.value("failed", 0) == 1 &&
           active_pods(cp, "idx").size() == 2;
  }));
  // Index 0 gets a new pod; index 1 does not.
  for (const json& p : active_pods(cp, "idx")) {
    std::string index = p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"];
    CHECK(index != "1");
    cp.set_pod_status("w", name_of(p), "Succeeded", false);
  }
  REQUIRE(ControlPlane::eventually([&] { return has_condition(cp, "idx", "Complete"); }));
  json s = cp.get(kJobs + "/idx")["status"];
  CHECK(s["completedIndexes"] == "0-2");
  CHECK(s["succeeded"] == 3);
}

TEST_CASE("a suspended Job has no pods until it is resumed", "[controllers][job]") {
  ControlPlane cp({"job"});
  cp.create(kJobs, job("later", {{"suspend", true}, {"parallelism", 2}, {"completions", 2}}));
  REQUIRE(ControlPlane::eventually([&] { return has_condition(cp, "later", "Suspended"); }));
  CHECK(pods_of(cp, "later").empty());
  CHECK_FALSE(cp.get(kJobs + "/later")["status"].contains("startTime"));
  auto patch = [&](bool suspend) {
    REQUIRE(cp.call("PATCH", kJobs + "/later", {{"spec", {{"suspend", suspend}}}},
                    "application/merge-patch+json")
                .code == 200);
  };
  patch(false);
  REQUIRE(ControlPlane::eventually([&] { return active_pods(cp, "later").size() == 2; }));
  json resumed = condition(cp.get(kJobs + "/later"), "Suspended");
  CHECK(resumed["status"] == "False");
  CHECK(resumed["reason"] == "JobResumed");
  CHECK(cp.get(kJobs + "/later")["status"].contains("startTime"));
  patch(true);
  REQUIRE(ControlPlane::eventually(
      [&] { return pods_of(cp, "later").empty() && has_condition(cp, "later", "Suspended"); }));
  // Pods removed by suspension are neither successes nor failures.
  CHECK_FALSE(cp.get(kJobs + "/later")["status"].contains("failed"));
}

TEST_CASE("a finished Job is deleted when ttlSecondsAfterFinished expires", "[controllers][job]") {
  FakeClock clock;
  ControlPlane cp({"job", "garbage-collector"}, clock.fn());
  cp.create(kJobs, job("short", {{"ttlSecondsAfterFinished", 100}}));
  REQUIRE(ControlPlane::eventually([&] { return active_pods(cp, "short").size() == 1; }));
  cp.set_pod_status("w", name_of(active_pods(cp, "short")[0]), "Succeeded", false);
  REQUIRE(ControlPlane::eventually([&] { return has_condition(cp, "short", "Complete"); }));
  REQUIRE(cp.manager->wait_idle(5s));
  CHECK(cp.call("GET", kJobs + "/short").code == 200);
  clock.advance(101s);
  poke(cp, "short");
  CHECK(ControlPlane::eventually([&] { return cp.call("GET", kJobs + "/short").code == 404; }));
  CHECK(ControlPlane::eventually([&] { return pods_of(cp, "short").empty(); }));

  // A TTL of 0 deletes the Job as soon as it finishes.
  cp.create(kJobs, job("instant", {{"ttlSecondsAfterFinished", 0}}));
  REQUIRE(ControlPlane::eventually([&] { return active_pods(cp, "instant").size() == 1; }));
  cp.set_pod_status("w", name_of(active_pods(cp, "instant")[0]), "Succeeded", false);
  CHECK(ControlPlane::eventually([&] { return cp.call("GET", kJobs + "/instant").code == 404; }));
}

json annotations_of(const json& pod) {
  return pod["metadata"].value("annotations", json::object());
}

TEST_CASE("the pods of an Indexed Job running every index at once are one gang", "[job-gang]") {
  ControlPlane cp({"job"});
  cp.create(kJobs,
            job("ranks", {{"completions", 3}, {"parallelism", 3}, {"completionMode", "Indexed"}}));
  json asked = job("burst", {{"completions", 4}, {"parallelism", 2}});
  asked["metadata"]["annotations"] = {{"vkube.io/gang", "true"}};
  cp.create(kJobs, asked);
  // Not gangs: a plain Job, and an Indexed one that runs its indexes in turns.
  cp.create(kJobs, job("plain", {{"completions", 2}, {"parallelism", 2}}));
  cp.create(kJobs,
            job("turns", {{"completions", 4}, {"parallelism", 2}, {"completionMode", "Indexed"}}));
  REQUIRE(ControlPlane::eventually([&] {
    return active_pods(cp, "ranks").size() == 3 && active_pods(cp, "burst").size() == 2 &&
           active_pods(cp, "plain").size() == 2 && active_pods(cp, "turns").size() == 2;
  }));
  for (const json& p : pods_of(cp, "ranks")) {
    CHECK(annotations_of(p)["vkube.io/pod-group"] == "ranks");
    CHECK(annotations_of(p)["vkube.io/pod-group-size"] == "3");
  }
  for (const json& p : pods_of(cp, "burst")) {
    CHECK(annotations_of(p)["vkube.io/pod-group"] == "burst");
    CHECK(annotations_of(p)["vkube.io/pod-group-size"] == "2");
  }
  for (const char* name : {"plain", "turns"})
    for (const json& p : pods_of(cp, name))
      CHECK_FALSE(annotations_of(p).contains("vkube.io/pod-group"));
  // A replacement joins the same gang.
  json first = active_pods(cp, "ranks")[0];
  cp.set_pod_status("w", name_of(first), "Failed", false);
  REQUIRE(ControlPlane::eventually(
      [&] { return pods_of(cp, "ranks").size() == 4 && active_pods(cp, "ranks").size() == 3; }));
  for (const json& p : active_pods(cp, "ranks"))
    CHECK(annotations_of(p)["vkube.io/pod-group"] == "ranks");
}

// The status a preempted pod reaches its tenant with: the host scheduler's
// DisruptionTarget, then the kubelet's (syncer's) Failed phase.
void preempt(ControlPlane& cp, const std::string& pod) {
  const std::string then = "2026-01-01T00:00:00Z";
  json status = {{"phase", "Failed"},
                 {"conditions",
                  {{{"type", "DisruptionTarget"},
                    {"status", "True"},
                    {"reason", "PreemptionByScheduler"},
                    {"lastTransitionTime", then}},
                   {{"type", "Ready"}, {"status", "False"}, {"lastTransitionTime", then}}}}};
  REQUIRE(cp.call("PATCH", kPods + "/" + pod + "/status", {{"status", status}},
                  "application/merge-patch+json")
              .code == 200);
  REQUIRE(cp.call("DELETE", kPods + "/" + pod, {{"gracePeriodSeconds", 0}}).code == 200);
}

TEST_CASE("a preempted Job pod is replaced; podFailurePolicy decides whether it counts",
          "[job-gang]") {
  ControlPlane cp({"job"});
  json ignore = {
      {"rules", {{{"action", "Ignore"}, {"onPodConditions", {{{"type", "DisruptionTarget"}}}}}}}};
  json fail = {{"rules",
                {{{"action", "FailJob"}, {"onExitCodes", {{"operator", "In"}, {"values", {42}}}}},
                 {{"action", "FailJob"}, {"onPodConditions", {{{"type", "DisruptionTarget"}}}}}}}};
  cp.create(kJobs, job("tolerant", {{"backoffLimit", 0}, {"podFailurePolicy", ignore}}));
  cp.create(kJobs, job("counted", {{"backoffLimit", 1}}));
  cp.create(kJobs, job("strict", {{"backoffLimit", 5}, {"podFailurePolicy", fail}}));
  REQUIRE(ControlPlane::eventually([&] {
    return active_pods(cp, "tolerant").size() == 1 && active_pods(cp, "counted").size() == 1 &&
           active_pods(cp, "strict").size() == 1;
  }));
  const std::string strict_pod = name_of(active_pods(cp, "strict")[0]);
  for (const char* name : {"tolerant", "counted", "strict"})
    preempt(cp, name_of(active_pods(cp, name)[0]));

  // Ignore: not a failure, even with backoffLimit 0; a new pod runs.
  CHECK(ControlPlane::eventually([&] {
    return active_pods(cp, "tolerant").size() == 1 && pods_of(cp, "tolerant").size() == 1;
  }));
  CHECK_FALSE(cp.get(kJobs + "/tolerant")["status"].contains("failed"));
  CHECK_FALSE(has_condition(cp, "tolerant", "Failed"));
  // No policy: a failure toward backoffLimit, as kube counts it, then replaced.
  CHECK(ControlPlane::eventually([&] {
    return cp.get(kJobs + "/counted")["status"].value("failed", 0) == 1 &&
           active_pods(cp, "counted").size() == 1;
  }));
  // FailJob on the condition: the Job fails at once, saying which rule.
  REQUIRE(ControlPlane::eventually([&] { return has_condition(cp, "strict", "Failed"); }));
  json j = cp.get(kJobs + "/strict");
  CHECK(condition(j, "Failed")["reason"] == "PodFailurePolicy");
  CHECK(condition(j, "Failed")["message"] ==
        "Pod w/" + strict_pod + " has condition DisruptionTarget matching FailJob rule at index 1");
  CHECK(j["status"]["failed"] == 1);
  CHECK(active_pods(cp, "strict").empty());
}

}  // namespace
}  // namespace vkube::controllers
