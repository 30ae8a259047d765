// Issue 38's acceptance: three tenants made with `vkube create --gpu-share`
// share the 16 GPUs of `vkube host` (2 simulated nodes of 8). alpha and bravo
// each deserve 8; charlie deserves none and may hold 4. bravo borrows alpha's
// idle GPUs; alpha takes them back within the reclaim target; a gang that
// does not fit waits whole; charlie at its limit pends (no 403); a restart of
// the host (its scheduler runs in-process) loses no pod and preempts nothing.
// Real kubectl against each tenant and the host; no tenant learns another's name.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kBorrowing = "gpu.vkube.io/borrowing";  // host pod annotation
constexpr const char* kBorrowingCondition = "vkube.io/GPUBorrowing";

struct Tenant {
  std::string name;
  std::string kubeconfig;  // written by `vkube create/connect --out`
};

Result kubectl_at(Cluster& host, const Tenant& t, std::vector<std::string> args) {
  args.insert(args.begin(), {kubectl_path(), "--kubeconfig", t.kubeconfig});
  return host.run(args, seconds(30));
}

// `kubectl get ARGS -o json`'s items; null when kubectl failed (a tenant restarting).
json items(Cluster& host, const Tenant* t, std::vector<std::string> args) {
  args.insert(args.begin(), "get");
  args.insert(args.end(), {"-o", "json"});
  Result r = t ? kubectl_at(host, *t, args) : host.kubectl(args);
  if (r.exit_code != 0) return nullptr;
  json j = json::parse(r.out, nullptr, false);
  return j.is_object() ? j.value("items", json::array()) : json(nullptr);
}

json must_items(Cluster& host, const Tenant* t, std::vector<std::string> args) {
  json j = items(host, t, args);
  INFO("kubectl get " << args.front() << " failed");
  REQUIRE(j.is_array());
  return j;
}

std::string name_of(const json& o) {
  return o["metadata"].value("name", "");
}
std::string phase_of(const json& pod) {
  return pod.value("status", json::object()).value("phase", "");
}
bool terminating(const json& o) {
  return o["metadata"].contains("deletionTimestamp");
}

json condition(const json& pod, const std::string& type) {
  for (const json& c : pod.value("status", json::object()).value("conditions", json::array()))
    if (c.value("type", "") == type) return c;
  return nullptr;
}

bool condition_true(const json& obj, const std::string& type) {
  json c = condition(obj, type);
  return c.is_object() && c.value("status", "") == "True";
}

std::string scheduled_reason(const json& pod) {
  json c = condition(pod, "PodScheduled");
  return c.is_object() ? c.value("reason", "") : "";
}

std::string scheduled_message(const json& pod) {
  json c = condition(pod, "PodScheduled");
  return c.is_object() && c.value("status", "") == "False" ? c.value("message", "") : "";
}

bool uses_gpus(const json& pod) {
  for (const json& c : pod["spec"].value("containers", json::array()))
    if (c.value("resources", json::object())
            .value("limits", json::object())
            .contains("nvidia.com/gpu"))
      return true;
  return false;
}

// The GPU pods of a tenant (its own view) or of its host namespace.
json gpu_pods(Cluster& host, const Tenant& t, bool host_side) {
  json all = host_side ? items(host, nullptr, {"pods", "-n", "vkube-" + t.name})
                       : items(host, &t, {"pods", "-A"});
  json out = json::array();
  if (all.is_array())
    for (const json& p : all)
      if (uses_gpus(p)) out.push_back(p);
  return all.is_array() ? out : json(nullptr);
}

// Names of the pods in `pods` whose `pred` holds.
std::set<std::string> names_where(const json& pods, const std::function<bool(const json&)>& pred) {
  std::set<std::string> out;
  if (pods.is_array())
    for (const json& p : pods)
      if (pred(p)) out.insert(name_of(p));
  return out;
}

bool running(const json& p) {
  return phase_of(p) == "Running" && !terminating(p);
}
bool pending(const json& p) {
  return phase_of(p) == "Pending" && !terminating(p);
}
bool borrowing_host_pod(const json& p) {
  return p["metadata"].value("annotations", json::object()).contains(kBorrowing);
}
std::string tenant_name_of(const json& host_pod) {
  return host_pod["metadata"]
      .value("annotations", json::object())
      .value("vkube.io/tenant-name", "");
}

std::string gpu_pod_template(const std::string& name) {
  return "    spec:\n      containers:\n      - name: " + name + "\n        image: example.com/" +
         name + ":1\n        resources: {limits: {nvidia.com/gpu: 1}}\n";
}

std::string deployment(const std::string& name, int replicas) {
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name +
         "}\nspec:\n  replicas: " + std::to_string(replicas) +
         "\n  selector: {matchLabels: {app: " + name +
         "}}\n  template:\n    metadata: {labels: "
         "{app: " +
         name + "}}\n" + gpu_pod_template(name);
}

// An Indexed Job of `n` one-GPU pods that run together (a distributed job).
std::string indexed_job(const std::string& name, int n) {
  return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name +
         "}\nspec:\n  completionMode: Indexed\n  completions: " + std::to_string(n) +
         "\n  parallelism: " + std::to_string(n) + "\n  template:\n" +
         "    spec:\n      restartPolicy: Never\n      containers:\n      - name: worker\n"
         "        image: example.com/dist:1\n        resources: {limits: {nvidia.com/gpu: 1}}\n";
}

std::string gpu_pod(const std::string& name) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\n" +
         "spec:\n  containers:\n  - name: c\n    image: example.com/c:1\n"
         "    resources: {limits: {nvidia.com/gpu: 1}}\n";
}

// bravo's 16 workers. A Deployment, not a Job: kube's Job controller holds
// back the replacement of failed pods by an exponential backoff that counts
// disruptions too (10 s doubled per failure, up to 10 min: kubernetes#119378,
// #130881), so 8 pods reclaimed at once come back only minutes later; a
// ReplicaSet replaces them at once. Their containers take 30 s to stop, so
// they are killed at the end of their 5 s grace period.
constexpr const char* kTrain = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: train}
spec:
  replicas: 16
  selector: {matchLabels: {app: train}}
  template:
    metadata:
      labels: {app: train}
      annotations: {sim.vkube.io/termination-seconds: "30"}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: train
        image: example.com/train:1
        resources: {limits: {nvidia.com/gpu: 1}}
)";

void create(Cluster& host, const Tenant& t, const std::string& file, const std::string& yaml) {
  Result r = kubectl_at(host, t, {"create", "-f", host.file(t.name + "-" + file, yaml)});
  INFO(r);
  REQUIRE_THAT(r, Succeeded());
}

// Running pods whose PodScheduled condition still says why they wait (a
// why-pending write that landed after the bind).
std::set<std::string> running_but_unscheduled(const json& pods) {
  return names_where(pods, [](const json& p) {
    json c = condition(p, "PodScheduled");
    return running(p) && (!c.is_object() || c.value("status", "") != "True");
  });
}

// One line per GPU pod, tenant or host side: name, uid, phase, node, and
// what the scheduler said (for comparisons and failure messages).
std::string snapshot(const json& pods) {
  std::map<std::string, std::string> rows;
  for (const json& p : pods.is_array() ? pods : json::array())
    rows[name_of(p)] = p["metadata"].value("uid", "").substr(0, 8) + " " + phase_of(p) + " " +
                       p["spec"].value("nodeName", "-") + (terminating(p) ? " terminating" : "");
  std::string out;
  for (const auto& [name, row] : rows) out += name + " " + row + "\n";
  return out;
}

std::string summary(const json& pods) {
  std::string out;
  for (const json& p : pods.is_array() ? pods : json::array()) {
    json dt = condition(p, "DisruptionTarget");
    out += name_of(p) + " " + phase_of(p) + (terminating(p) ? " terminating" : "") +
           (borrowing_host_pod(p) || condition_true(p, kBorrowingCondition) ? " borrowing" : "") +
           (dt.is_object() ? " DisruptionTarget=" + dt.value("status", "") : "") + " " +
           scheduled_message(p) + "\n";
  }
  return out;
}

// After a host restart: the tenant's control plane answers again through the
// kubeconfig `vkube connect` writes.
bool reconnect(Cluster& host, const Tenant& t) {
  return eventually(
      [&] {
        return vkube_at(host, {"connect", t.name, "--out", t.kubeconfig}).exit_code == 0 &&
               items(host, &t, {"pods"}).is_array();
      },
      seconds(120));
}

// The host pods the host's Preempted events name (a pod preempted twice counts once).
std::set<std::string> preempted_pods(Cluster& host) {
  std::set<std::string> out;
  for (const json& e : must_items(host, nullptr, {"events", "-A"}))
    if (e.value("reason", "") == "Preempted") out.insert(e["involvedObject"].value("name", ""));
  return out;
}

TEST_CASE("GPU fair share: borrow, reclaim, gang, limit and a host restart with three tenants",
          "[e2e][fair-share][slow]") {
  Cluster host(Cluster::Host{{"--nodes", "2", "--gpus-per-node", "8", "--gpu-model", "H100",
                              "--gpu-sharing", "exclusive", "--sim-job-duration", "0"},
                             {}});
  Tenant alpha{"alpha", host.dir() + "/alpha.kubeconfig"};
  Tenant bravo{"bravo", host.dir() + "/bravo.kubeconfig"};
  Tenant charlie{"charlie", host.dir() + "/charlie.kubeconfig"};
  for (auto [t, share] : {std::pair{&alpha, "deserved=8"}, std::pair{&bravo, "deserved=8"},
                          std::pair{&charlie, "limit=4"}}) {
    Result r = vkube_at(host, {"create", t->name, "--gpu-share", share, "--out", t->kubeconfig});
    INFO(r);
    REQUIRE_THAT(r, Succeeded());
    json ns = host.get_json({"namespace", "vkube-" + t->name});
    CHECK_THAT(ns["metadata"].value("annotations", json::object()).value("vkube.io/gpu-share", ""),
               Catch::Contains(share));
  }
  // A tenant must never see another tenant's name (isolation of the messages).
  auto no_leak = [](const std::string& text, const std::string& other) {
    return text.find(other) == std::string::npos;
  };

  // --- charlie, alone on the pool: a gang that does not fit its limit waits whole.
  create(host, charlie, "infer.yaml", deployment("infer", 3));
  REQUIRE(
      eventually([&] { return names_where(gpu_pods(host, charlie, false), running).size() == 3; },
                 seconds(60)));
  create(host, charlie, "gang.yaml", indexed_job("gang", 4));
  auto gang_pods = [&](const std::string& job) {
    json out = json::array();
    json all = gpu_pods(host, charlie, false);
    if (all.is_array())
      for (const json& p : all)
        if (p["metadata"].value("labels", json::object()).value("job-name", "") == job)
          out.push_back(p);
    return out;
  };
  auto gang_waits = [&](const std::string& job) {
    json pods = gang_pods(job);
    return pods.size() == 4 && names_where(pods, [](const json& p) {
                                 return pending(p) && !scheduled_message(p).empty();
                               }).size() == 4;
  };
  REQUIRE(eventually([&] { return gang_waits("gang"); }, seconds(30)));
  std::this_thread::sleep_for(seconds(3));  // one of the 4 fits under the limit: none may start
  for (const json& p : gang_pods("gang")) {
    INFO(summary(json::array({p})));
    CHECK(pending(p));
    CHECK(p["spec"].value("nodeName", "").empty());
    CHECK_THAT(scheduled_message(p), Catch::Contains("4 pods"));  // why: the group, whole
  }
  for (const json& p : must_items(host, nullptr, {"pods", "-n", "vkube-charlie"}))
    if (tenant_name_of(p).rfind("gang-", 0) == 0) {
      INFO(name_of(p));
      CHECK(p["metadata"]["annotations"].value("vkube.io/pod-group-size", "") == "4");
    }
  // The GPU the gang left idle is real: a single pod takes it.
  create(host, charlie, "solo.yaml", gpu_pod("solo"));
  CHECK(
      eventually([&] { return names_where(gpu_pods(host, charlie, false), running).count("solo"); },
                 seconds(30)));
  // At its limit (4 of 4): one more pod is accepted by the tenant (no 403) and pends.
  create(host, charlie, "extra.yaml", gpu_pod("extra"));
  std::string extra_message;
  CHECK(eventually(
      [&] {
        json pods = gpu_pods(host, charlie, false);
        for (const json& p : pods.is_array() ? pods : json::array())
          if (name_of(p) == "extra" && pending(p)) extra_message = scheduled_message(p);
        return !extra_message.empty();
      },
      seconds(30)));
  CHECK_THAT(extra_message, Catch::Contains("limit"));
  CHECK(no_leak(extra_message, "alpha"));
  CHECK(no_leak(extra_message, "bravo"));
  // Room under the limit again: the gang starts, all 4.
  REQUIRE_THAT(kubectl_at(host, charlie, {"delete", "pod", "extra", "solo", "--wait"}),
               Succeeded());
  REQUIRE_THAT(kubectl_at(host, charlie, {"delete", "deployment", "infer"}), Succeeded());
  CHECK(
      eventually([&] { return names_where(gang_pods("gang"), running).size() == 4; }, seconds(60)));
  REQUIRE_THAT(kubectl_at(host, charlie, {"delete", "job", "gang", "--cascade=foreground"}),
               Succeeded());
  REQUIRE(eventually(
      [&] {
        json pods = gpu_pods(host, charlie, true);
        return pods.is_array() && pods.empty();
      },
      seconds(60)));

  // --- bravo runs 16 pods on the idle pool: 8 within its share, 8 borrowed.
  create(host, bravo, "train.yaml", kTrain);
  REQUIRE(
      eventually([&] { return names_where(gpu_pods(host, bravo, false), running).size() == 16; },
                 seconds(90)));
  json bravo_host = gpu_pods(host, bravo, true);
  std::set<std::string> borrowed;  // tenant names of the host pods marked borrowing
  for (const json& p : bravo_host)
    if (borrowing_host_pod(p)) borrowed.insert(tenant_name_of(p));
  {
    INFO("bravo on the host:\n" << summary(bravo_host));
    CHECK(borrowed.size() == 8);
  }
  std::set<std::string> seen_borrowing;
  CHECK(eventually(
      [&] {
        seen_borrowing = names_where(gpu_pods(host, bravo, false), [](const json& p) {
          return condition_true(p, kBorrowingCondition);
        });
        return seen_borrowing == borrowed;
      },
      seconds(20)));
  CHECK(seen_borrowing == borrowed);
  const std::set<std::string> bravo_kept =
      names_where(gpu_pods(host, bravo, false),
                  [&](const json& p) { return running(p) && !borrowed.count(name_of(p)); });
  CHECK(bravo_kept.size() == 8);

  // --- alpha wants its 8: bravo's borrowed pods are reclaimed, alpha's run.
  Process watch = host.kubectl_background(
      {"--kubeconfig", bravo.kubeconfig, "get", "pods", "-w", "-o",
       "jsonpath={.metadata.name}|{.status.conditions[?(@.type==\"DisruptionTarget\")].status}|"
       "{.status.conditions[?(@.type==\"DisruptionTarget\")].reason}|"
       "{.status.conditions[?(@.type==\"DisruptionTarget\")].message}{\"\\n\"}"});
  std::this_thread::sleep_for(seconds(1));  // the watch is open
  const auto t0 = Clock::now();
  create(host, alpha, "serve.yaml", deployment("serve", 8));
  const bool reclaimed = eventually(
      [&] { return names_where(gpu_pods(host, alpha, false), running).size() == 8; }, seconds(90));
  const double reclaim_s = std::chrono::duration<double>(Clock::now() - t0).count();
  WARN("alpha's 8 pods Running " << reclaim_s << " s after create (8 GPUs reclaimed from bravo)");
  REQUIRE(reclaimed);
  CHECK(reclaim_s < 30);
  for (const json& p : gpu_pods(host, alpha, true)) CHECK_FALSE(borrowing_host_pod(p));
  CHECK(running_but_unscheduled(gpu_pods(host, alpha, true)) == std::set<std::string>{});
  CHECK(running_but_unscheduled(gpu_pods(host, alpha, false)) == std::set<std::string>{});

  // bravo: the 8 within its share still run; its ReplicaSet replaced the 8 reclaimed
  // ones, which wait saying why, without naming alpha.
  json bravo_now;
  const bool replaced = eventually(
      [&] {
        bravo_now = gpu_pods(host, bravo, false);
        return names_where(bravo_now, running).size() == 8 &&
               names_where(bravo_now, [](const json& p) {
                 return pending(p) && !scheduled_message(p).empty();
               }).size() == 8;
      },
      seconds(30));
  json deploy = host.get_json({"--kubeconfig", bravo.kubeconfig, "deployment", "train"});
  {
    INFO("bravo's pods:\n"
         << summary(bravo_now) << "on the host:\n"
         << summary(gpu_pods(host, bravo, true))
         << "bravo's Deployment status: " << deploy.value("status", json::object()).dump());
    CHECK(replaced);
    CHECK(names_where(bravo_now, running) == bravo_kept);  // the pods within its share stay
    CHECK(deploy["status"].value("replicas", 0) == 16);
    CHECK(deploy["status"].value("availableReplicas", 0) == 8);
  }
  for (const json& p : bravo_now.is_array() ? bravo_now : json::array()) {
    if (!pending(p)) continue;
    CHECK(!borrowed.count(name_of(p)));  // new pods, not the reclaimed ones
    const std::string why = scheduled_message(p);
    CHECK(scheduled_reason(p) == "Unschedulable");
    CHECK_THAT(why, Catch::Contains("deserved"));
    CHECK(no_leak(why, "alpha"));
  }

  // What bravo saw go: exactly its borrowed pods, each with DisruptionTarget
  // first, and a Preempted event each; neither names alpha.
  std::set<std::string> disrupted;
  std::vector<std::string> disruptions;  // the watch's lines with DisruptionTarget=True
  CHECK(eventually(
      [&] {
        disrupted.clear();
        disruptions.clear();
        for (const std::string& line : lines(watch.out())) {
          const auto bar1 = line.find('|'), bar2 = line.find('|', bar1 + 1);
          if (bar2 == std::string::npos || line.substr(bar1 + 1, bar2 - bar1 - 1) != "True")
            continue;
          disrupted.insert(line.substr(0, bar1));
          disruptions.push_back(line);
        }
        return disrupted.size() >= 8;
      },
      seconds(10)));
  for (const std::string& line : disruptions) {
    CHECK_THAT(line, Catch::Contains("|PreemptionByScheduler|"));
    CHECK(no_leak(line, "alpha"));
  }
  CHECK(disrupted == borrowed);
  std::set<std::string> preempted;
  std::vector<std::string> preempted_messages;
  CHECK(eventually(
      [&] {
        preempted.clear();
        preempted_messages.clear();
        json evs = items(host, &bravo, {"events"});
        for (const json& e : evs.is_array() ? evs : json::array())
          if (e.value("reason", "") == "Preempted") {
            preempted.insert(e["involvedObject"].value("name", ""));
            preempted_messages.push_back(e.value("message", ""));
          }
        return preempted.size() >= 8;
      },
      seconds(20)));
  for (const std::string& m : preempted_messages) {
    CHECK_THAT(m, Catch::Contains("reclaimed"));
    CHECK(no_leak(m, "alpha"));
  }
  CHECK(preempted == borrowed);

  // The operator's books: alpha holds its 8, bravo its 8 and waits for 8 more.
  CHECK(eventually(
      [&] {
        auto a = vkube_list_row(host, "alpha");
        auto b = vkube_list_row(host, "bravo");
        return a["ALLOCATED"] == "8" && a["BORROWED"] == "0" && b["ALLOCATED"] == "8" &&
               b["BORROWED"] == "0" && b["PENDING"] == "8" && b["DESERVED"] == "8";
      },
      seconds(20)));
  const std::string metrics = host.kubectl({"get", "--raw", "/metrics"}).out;
  CHECK_THAT(
      metrics,
      Catch::Contains(
          "vkube_tenant_gpu_allocated_milli{tenant=\"alpha\",namespace=\"vkube-alpha\"} 8000"));
  CHECK_THAT(
      metrics,
      Catch::Contains(
          "vkube_tenant_gpu_pending_milli{tenant=\"bravo\",namespace=\"vkube-bravo\"} 8000"));

  // --- charlie's gang of 4 on the full pool waits whole.
  create(host, charlie, "gang2.yaml", indexed_job("gang2", 4));
  CHECK(eventually([&] { return gang_waits("gang2"); }, seconds(30)));
  for (const json& p : gang_pods("gang2")) {
    CHECK_THAT(scheduled_message(p), Catch::Contains("pod group"));
    CHECK(no_leak(scheduled_message(p), "alpha"));
    CHECK(no_leak(scheduled_message(p), "bravo"));
  }

  // --- The host restarts (a crash: its scheduler, node agent and tenants'
  // processes with it): nothing is lost, nothing more is preempted.
  auto pool_state = [&] {
    std::string out;
    for (const Tenant* t : {&alpha, &bravo, &charlie})
      out += "tenant " + t->name + ":\n" + snapshot(gpu_pods(host, *t, false)) + "host " + t->name +
             ":\n" + snapshot(gpu_pods(host, *t, true));
    return out;
  };
  std::string before = pool_state(), settled;
  eventually(
      [&] {  // what runs and waits stays put for 3 s
        std::this_thread::sleep_for(seconds(3));
        settled = pool_state();
        return std::exchange(before, settled) == settled;
      },
      seconds(20));
  const std::set<std::string> preempted_before = preempted_pods(host);
  CHECK(preempted_before.size() == 8);
  host.restart(SIGKILL);
  for (const Tenant* t : {&alpha, &bravo, &charlie}) REQUIRE(reconnect(host, *t));
  std::this_thread::sleep_for(seconds(10));  // the scheduler has looked at every pending pod
  CHECK(pool_state() == settled);
  CHECK(preempted_pods(host) == preempted_before);
  for (const json& p : gpu_pods(host, bravo, false))
    if (pending(p)) CHECK_THAT(scheduled_message(p), Catch::Contains("deserved"));

  // The restarted scheduler still hands out what frees up: alpha scales to 0,
  // the gang goes, and bravo's waiting pods run (borrowing again).
  REQUIRE_THAT(kubectl_at(host, charlie, {"delete", "job", "gang2"}), Succeeded());
  REQUIRE_THAT(kubectl_at(host, alpha, {"scale", "deployment", "serve", "--replicas=0"}),
               Succeeded());
  REQUIRE(eventually(
      [&] {
        return names_where(gpu_pods(host, bravo, false), running).size() == 16 &&
               names_where(gpu_pods(host, alpha, true), [](const json&) { return true; }).empty();
      },
      seconds(60)));
  CHECK(preempted_pods(host) == preempted_before);
  const json lent = gpu_pods(host, bravo, true);
  const std::set<std::string> borrowed_again = names_where(lent, borrowing_host_pod);
  {
    INFO(summary(lent));
    CHECK(borrowed_again.size() == 8);
    CHECK(running_but_unscheduled(lent) == std::set<std::string>{});
    CHECK(running_but_unscheduled(gpu_pods(host, bravo, false)) == std::set<std::string>{});
  }

  // --- The host crashes in the middle of a reclaim (alpha back to 8, bravo's
  // victims still terminating): once it is back, alpha's 8 run and exactly
  // the 8 victims are gone, none more.
  REQUIRE_THAT(kubectl_at(host, alpha, {"scale", "deployment", "serve", "--replicas=8"}),
               Succeeded());
  size_t terminating_at_crash = 0;
  REQUIRE(eventually(
      [&] {
        terminating_at_crash = names_where(gpu_pods(host, bravo, true), terminating).size();
        return terminating_at_crash > 0;
      },
      seconds(20)));
  host.restart(SIGKILL);
  WARN("host killed with " << terminating_at_crash << " of bravo's pods terminating");
  for (const Tenant* t : {&alpha, &bravo, &charlie}) REQUIRE(reconnect(host, *t));
  CHECK(eventually([&] { return names_where(gpu_pods(host, alpha, false), running).size() == 8; },
                   seconds(60)));
  json bravo_after;
  CHECK(eventually(
      [&] {
        bravo_after = gpu_pods(host, bravo, true);
        return names_where(bravo_after, running).size() == 8 &&
               names_where(bravo_after, pending).size() == 8;
      },
      seconds(30)));
  std::this_thread::sleep_for(seconds(5));  // any extra victim would show by now
  bravo_after = gpu_pods(host, bravo, true);
  INFO(summary(bravo_after));
  // Gone: exactly the pods marked borrowing. (Events are best effort, as
  // kube's: one the crash cut off is not sent again, but none names another pod.)
  std::set<std::string> gone = names_where(lent, [](const json&) { return true; });
  for (const json& p : bravo_after) gone.erase(name_of(p));
  CHECK(gone == borrowed_again);
  std::set<std::string> second_victims;
  for (const std::string& pod : preempted_pods(host))
    if (!preempted_before.count(pod)) second_victims.insert(pod);
  CHECK(std::includes(borrowed_again.begin(), borrowed_again.end(), second_victims.begin(),
                      second_victims.end()));
  CHECK(names_where(bravo_after, running).size() == 8);
  for (const Tenant* t : {&alpha, &bravo}) {
    INFO(t->name);
    CHECK(running_but_unscheduled(gpu_pods(host, *t, true)) == std::set<std::string>{});
    CHECK(running_but_unscheduled(gpu_pods(host, *t, false)) == std::set<std::string>{});
  }
  for (const json& p : bravo_after)
    if (borrowed_again.count(name_of(p))) CHECK_FALSE(running(p));
}

}  // namespace
}  // namespace vkube::e2e
