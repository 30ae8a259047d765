#include "sharing_replay.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

namespace vkube::bench::sharing {

namespace {

using Clock = std::chrono::steady_clock;
using hostclient::json;

constexpr const char* kPods = "/api/v1/namespaces/default/pods";
constexpr auto kRetryEvery = std::chrono::milliseconds(100);
constexpr size_t kErrorsKept = 5;
constexpr int kCreators = 3;  // creates in flight per team

// "1.250s": the simulated node runs the pod this long (sim.vkube.io/duration).
std::string go_duration(double seconds) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3fs", seconds);
  return b;
}

json pod_object(const std::string& name, const Arrival& a) {
  json requests = {{"cpu", std::to_string(a.cpu_milli) + "m"},
                   {"memory", std::to_string(a.memory_mib) + "Mi"}};
  json limits = json::object();
  if (a.gpu_share_milli > 0)
    limits["vkube.io/gpu-milli"] = std::to_string(a.gpu_share_milli);
  else
    limits["nvidia.com/gpu"] = std::to_string(a.num_gpu);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"labels", {{"app", "bench-sharing"}}},
            {"annotations", {{"sim.vkube.io/duration", go_duration(a.run_s)}}}}},
          {"spec",
           {{"restartPolicy", "Never"},
            {"containers",
             {{{"name", "work"},
               {"image", "registry.k8s.io/pause:3.10"},
               {"resources", {{"requests", requests}, {"limits", limits}}}}}}}}};
}

bool disrupted(const json& pod) {
  const json status = pod.value("status", json::object());
  for (const json& c : status.value("conditions", json::array()))
    if (c.is_object() && c.value("type", "") == "DisruptionTarget" &&
        c.value("status", "") == "True")
      return true;
  return false;
}

// A sample's value in Prometheus text ("name 123" or "name{labels} 123"); 0 when absent.
double metric(const std::string& text, const std::string& series) {
  for (size_t at = text.find(series); at != std::string::npos; at = text.find(series, at + 1))
    if ((at == 0 || text[at - 1] == '\n') && at + series.size() < text.size() &&
        text[at + series.size()] == ' ')
      return std::atof(text.c_str() + at + series.size() + 1);
  return 0;
}

}  // namespace

struct Replay::Impl {
  // Beyond the PodRecord: where its spec comes from and how far it got.
  struct Extra {
    size_t arrival = 0;  // index into plan.arrivals
    int attempt = 0;     // 0: the trace's pod; N: its N-th re-creation (NAME-rN)
    bool attempted = false, refused = false, done = false;
    // Due while its team's queue waited on a refusal: its wait is the
    // quota's, not the replay's lateness.
    bool behind_refusal = false;
  };
  struct Team {
    hostclient::Client* client = nullptr;
    std::vector<size_t> arrivals;  // indices into plan.arrivals, by at_s
    size_t next = 0;
    std::set<size_t> queue;  // records to create, oldest (lowest id) first
    // After a 403 the queue waits until then, head first (a FIFO client
    // retrying a full quota).
    Clock::time_point retry_at;
    int refused_waiting = 0;  // refused pods not created yet (queued or in flight)
    std::condition_variable cv;
    std::unordered_map<std::string, size_t> by_name;
    std::vector<std::thread> creators;
    std::thread watcher;
  };

  const Plan& plan;
  hostclient::Client& host;
  ReplayOptions o;
  std::vector<Team> teams;
  Clock::time_point start, end;

  std::mutex mu;  // everything below, and the teams' queues
  std::atomic<bool> stopping{false};
  std::condition_variable stop_cv, delete_cv;
  std::vector<PodRecord> records;
  std::vector<Extra> extra;
  std::vector<Sample> samples;
  std::deque<std::pair<int, std::string>> deletes;
  ReplayReport report;
  int preemptions = 0, refused_pods = 0, errors = 0;
  std::thread sampler, deleter;

  Impl(const Plan& p, std::vector<hostclient::Client*> tenants, hostclient::Client& h,
       ReplayOptions opts)
      : plan(p), host(h), o(std::move(opts)), teams(tenants.size()) {
    for (size_t k = 0; k < tenants.size(); ++k) teams[k].client = tenants[k];
    for (size_t i = 0; i < plan.arrivals.size(); ++i)
      if (static_cast<size_t>(plan.arrivals[i].team) < teams.size())
        teams[plan.arrivals[i].team].arrivals.push_back(i);
  }

  double now_s() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
  Clock::time_point at(double s) const {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  void error_locked(const std::string& what) {
    ++errors;
    if (report.first_errors.size() < kErrorsKept) report.first_errors.push_back(what);
  }

  // A new record, due now (at `arrived`), at the back of its team's queue.
  size_t admit_locked(int team, size_t arrival, int attempt, double arrived) {
    const Arrival& a = plan.arrivals[arrival];
    PodRecord r;
    r.team = team;
    r.name = attempt == 0 ? a.name : a.name + "-r" + std::to_string(attempt);
    r.gpu_milli = a.gpu_milli();
    r.arrived = arrived;
    records.push_back(r);
    extra.push_back({arrival, attempt});
    const size_t id = records.size() - 1;
    Team& tm = teams[team];
    extra[id].behind_refusal = tm.refused_waiting > 0;
    tm.by_name[r.name] = id;
    tm.queue.insert(id);
    tm.cv.notify_all();
    return id;
  }

  // One of the team's creators (kCreators of them, so that a burst of
  // arrivals is not created one round trip after another): admits what is
  // due and creates the queue's head, until the replay stops.
  void creator(int k) {
    Team& tm = teams[k];
    std::unique_lock lock(mu);
    while (!stopping) {
      for (const double now = now_s();
           tm.next < tm.arrivals.size() && plan.arrivals[tm.arrivals[tm.next]].at_s <= now;
           ++tm.next)
        admit_locked(k, tm.arrivals[tm.next], 0, plan.arrivals[tm.arrivals[tm.next]].at_s);
      if (!tm.queue.empty() && Clock::now() >= tm.retry_at) {
        create_head_locked(k, lock);
        continue;
      }
      Clock::time_point due = end;
      if (tm.next < tm.arrivals.size())
        due = std::min(due, at(plan.arrivals[tm.arrivals[tm.next]].at_s));
      if (!tm.queue.empty()) due = std::min(due, tm.retry_at);
      tm.cv.wait_until(lock, due);
    }
  }

  // A 403 puts the pod back at its place and holds the queue for
  // kRetryEvery (the quota is full: what follows waits its turn).
  void create_head_locked(int k, std::unique_lock<std::mutex>& lock) {
    Team& tm = teams[k];
    const size_t id = *tm.queue.begin();
    tm.queue.erase(tm.queue.begin());
    Extra& ex = extra[id];
    if (!ex.attempted && !ex.behind_refusal) {
      const double late = now_s() - records[id].arrived;
      report.max_late_s = std::max(report.max_late_s, late);
      if (late > 0.1 && ++report.late_over_100ms <= static_cast<int>(kErrorsKept))
        report.late_examples.emplace_back(records[id].arrived, late);
    }
    ex.attempted = true;
    const std::string name = records[id].name;
    const json body = pod_object(name, plan.arrivals[ex.arrival]);
    lock.unlock();
    hostclient::Response r = tm.client->call("POST", kPods, body);
    lock.lock();
    ++report.creates;
    if (r.code == 403) {
      ++report.refused_answers;
      if (!extra[id].refused) ++refused_pods, ++tm.refused_waiting;
      extra[id].refused = true;
      tm.queue.insert(id);
      tm.retry_at = Clock::now() + kRetryEvery;
      return;
    }
    if (extra[id].refused) --tm.refused_waiting;
    // 409: an earlier attempt that timed out did create it.
    if (!r.ok() && r.code != 409 && !stopping)
      error_locked("create " + plan.teams[k] + "/" + name + ": " + std::to_string(r.code) + " " +
                   r.message());
  }

  // Preempted work is lost: it runs again in full, as a new pod arriving now.
  void preempt_locked(int k, size_t id, double now, bool seen) {
    records[id].preempted = true;
    records[id].finished = now;
    extra[id].done = true;
    ++preemptions;
    if (!seen) ++report.vanished;
    admit_locked(k, extra[id].arrival, extra[id].attempt + 1, now);
  }

  void on_event(int k, std::string_view type, const json& pod) {
    const std::string name = pod.value("metadata", json::object()).value("name", "");
    const std::string phase = pod.value("status", json::object()).value("phase", "");
    std::lock_guard lock(mu);
    Team& tm = teams[k];
    auto it = tm.by_name.find(name);
    if (it == tm.by_name.end() || extra[it->second].done) return;
    const size_t id = it->second;
    PodRecord& rec = records[id];
    const double now = now_s();
    // Gone without our DELETE: the host pod was deleted under it (a
    // reclaim whose DisruptionTarget the syncer had no time to copy).
    if (type == "DELETED") return preempt_locked(k, id, now, false);
    if (phase == "Running" && rec.started < 0) rec.started = now;
    if (disrupted(pod)) return preempt_locked(k, id, now, true);
    if (phase != "Succeeded" && phase != "Failed") return;
    extra[id].done = true;
    rec.finished = now;
    if (phase == "Succeeded" && rec.started < 0) {
      rec.started = std::max(rec.arrived, now - plan.arrivals[extra[id].arrival].run_s);
      ++report.running_missed;
    }
    if (phase == "Failed") {
      ++report.failed;
      const json status = pod.value("status", json::object());
      error_locked("pod " + plan.teams[k] + "/" + name + " Failed: " + status.value("reason", "") +
                   " " + status.value("message", ""));
    }
    deletes.emplace_back(k, name);
    delete_cv.notify_one();
  }

  void watcher(int k) {
    hostclient::Client& c = *teams[k].client;
    std::string rv;
    while (!stopping) {
      if (rv.empty()) {
        hostclient::Response list = c.call("GET", kPods);
        if (!list.ok()) {
          if (!stopping) {
            std::lock_guard lock(mu);
            error_locked("list " + plan.teams[k] + " pods: " + std::to_string(list.code) + " " +
                         list.message());
          }
          std::unique_lock lock(mu);
          stop_cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return stopping.load(); });
          continue;
        }
        for (const json& p : list.body.value("items", json::array())) on_event(k, "MODIFIED", p);
        rv = list.body.value("metadata", json::object()).value("resourceVersion", "");
      }
      hostclient::Response w =
          c.watch(std::string(kPods) +
                      "?watch=1&allowWatchBookmarks=true&timeoutSeconds=3600&resourceVersion=" + rv,
                  [&](std::string_view type, json obj) {
                    if (stopping) return false;
                    if (type == "ERROR") {  // 410 Gone: relist
                      rv.clear();
                      return false;
                    }
                    rv = obj.value("metadata", json::object()).value("resourceVersion", rv);
                    if (type != "BOOKMARK") on_event(k, type, obj);
                    return true;
                  });
      if (stopping) break;
      if (!w.ok()) {
        if (w.code == 410) rv.clear();
        std::unique_lock lock(mu);
        if (w.code != 410)
          error_locked("watch " + plan.teams[k] + " pods: " + std::to_string(w.code) + " " +
                       w.message());
        stop_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping.load(); });
      }
    }
  }

  // Succeeded pods are deleted, as a Job controller's would be cleaned up.
  void delete_loop() {
    std::unique_lock lock(mu);
    while (!stopping) {
      delete_cv.wait(lock, [&] { return stopping || !deletes.empty(); });
      if (stopping) break;
      auto [k, name] = deletes.front();
      deletes.pop_front();
      lock.unlock();
      hostclient::Response r = teams[k].client->call("DELETE", std::string(kPods) + "/" + name);
      lock.lock();
      if (!r.ok() && r.code != 404 && !stopping)
        error_locked("delete " + plan.teams[k] + "/" + name + ": " + std::to_string(r.code) + " " +
                     r.message());
    }
  }

  void sample_once() {
    hostclient::Response r = host.call("GET", "/metrics");
    const std::string text =
        r.body.is_string() ? r.body.get<std::string>() : r.body.value("message", "");
    std::lock_guard lock(mu);
    if (!r.ok() || text.find("vkube_cluster_gpu_capacity_milli") == std::string::npos) {
      if (stopping) return;
      ++report.samples_failed;
      return error_locked("GET host /metrics: " + std::to_string(r.code) + " " +
                          text.substr(0, 200));
    }
    Sample s;
    s.t = now_s();
    s.capacity_milli = static_cast<int64_t>(metric(text, "vkube_cluster_gpu_capacity_milli"));
    s.allocated_milli = static_cast<int64_t>(metric(text, "vkube_cluster_gpu_allocated_milli"));
    s.fragmented_milli = static_cast<int64_t>(metric(text, "vkube_cluster_gpu_fragmented_milli"));
    const size_t n = teams.size();
    s.team_allocated_milli.assign(n, 0);
    s.team_demand_milli.assign(n, 0);
    s.team_pending_milli.assign(n, 0);
    s.team_min_waiting_milli.assign(n, 0);
    for (size_t k = 0; k < n; ++k)
      s.team_allocated_milli[k] = static_cast<int64_t>(metric(
          text, "vkube_namespace_gpu_allocated_milli{namespace=\"vkube-" + plan.teams[k] + "\"}"));
    for (const PodRecord& rec : records) {
      if (rec.arrived > s.t || rec.finished >= 0) continue;
      s.team_demand_milli[rec.team] += rec.gpu_milli;
      if (rec.started >= 0) continue;
      s.team_pending_milli[rec.team] += rec.gpu_milli;
      int64_t& least = s.team_min_waiting_milli[rec.team];
      if (s.t - rec.arrived > o.grace && (least == 0 || rec.gpu_milli < least))
        least = rec.gpu_milli;
    }
    samples.push_back(std::move(s));
  }

  void progress_locked(const Sample& s) const {
    int64_t demand = 0, pending = 0;
    for (int64_t d : s.team_demand_milli) demand += d;
    for (int64_t p : s.team_pending_milli) pending += p;
    std::printf(
        "  [%s] t=%5.1f s  allocated %6.1f / %.0f GPUs  demand %6.1f  pending %6.1f  "
        "preemptions %d\n",
        o.config.c_str(), s.t, s.allocated_milli / 1000.0, s.capacity_milli / 1000.0,
        demand / 1000.0, pending / 1000.0, preemptions);
    std::fflush(stdout);
  }

  void sample_loop() {
    auto next = start;
    double next_progress = o.progress_s;
    while (!stopping) {
      next += std::chrono::milliseconds(o.sample_ms);
      {
        std::unique_lock lock(mu);
        if (stop_cv.wait_until(lock, next, [&] { return stopping.load(); })) break;
      }
      sample_once();
      std::lock_guard lock(mu);
      if (o.progress_s > 0 && !samples.empty() && samples.back().t >= next_progress) {
        progress_locked(samples.back());
        next_progress += o.progress_s;
      }
      // A slow /metrics read skips ticks rather than bunching them up.
      if (Clock::now() > next) next = Clock::now();
    }
  }
};

Replay::Replay(const Plan& plan, std::vector<hostclient::Client*> tenants, hostclient::Client& host,
               ReplayOptions options)
    : impl_(std::make_unique<Impl>(plan, std::move(tenants), host, std::move(options))) {}

Replay::~Replay() = default;

void Replay::start() {
  Impl& m = *impl_;
  m.start = Clock::now();
  m.end = m.at(m.o.seconds);
  for (size_t k = 0; k < m.teams.size(); ++k) {
    m.teams[k].watcher = std::thread([&m, k] { m.watcher(static_cast<int>(k)); });
    for (int i = 0; i < kCreators; ++i)
      m.teams[k].creators.emplace_back([&m, k] { m.creator(static_cast<int>(k)); });
  }
  m.deleter = std::thread([&m] { m.delete_loop(); });
  m.sampler = std::thread([&m] { m.sample_loop(); });
}

void Replay::sleep_until(double t) const {
  std::this_thread::sleep_until(std::min(impl_->at(t), impl_->end));
}

RunResult Replay::finish(ReplayReport* report) {
  Impl& m = *impl_;
  std::this_thread::sleep_until(m.end);
  {
    std::lock_guard lock(m.mu);
    m.stopping = true;
    for (auto& tm : m.teams) tm.cv.notify_all();
    m.stop_cv.notify_all();
    m.delete_cv.notify_all();
  }
  // Ends the watches and any call in flight.
  for (auto& tm : m.teams) tm.client->stop();
  m.host.stop();
  for (auto& tm : m.teams) {
    for (auto& t : tm.creators) t.join();
    if (tm.watcher.joinable()) tm.watcher.join();
  }
  if (m.deleter.joinable()) m.deleter.join();
  if (m.sampler.joinable()) m.sampler.join();
  RunResult r;
  r.config = m.o.config;
  r.samples = std::move(m.samples);
  r.pods = std::move(m.records);
  r.preemptions = m.preemptions;
  r.refused = m.refused_pods;
  r.errors = m.errors;
  if (report) *report = m.report;
  return r;
}

}  // namespace vkube::bench::sharing
