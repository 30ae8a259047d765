// bench_controllers: how fast the tenant's controllers turn a Deployment
// into pods, each figure printed next to its target (issue 5):
//   - create: a Deployment of N (1,000) replicas has its ReplicaSet and N
//     pods (target < 2 s);
//   - rollout: a new image rolled out over those N pods, with a simulated
//     kubelet marking each pod Running and Ready as it appears, until the
//     Deployment reports the rollout complete as `kubectl rollout status`
//     reads it (target < 5 s);
//   - idle CPU: what the whole control plane burns afterwards, doing nothing
//     (target ~0).
// It runs the real thing in one process: RocksDB (durable, synced WAL), the
// watch cache, the API server's handler chain and every controller, wired
// as `vkube serve` wires them; requests skip only the HTTP transport.
// A benchmark, not a test: a missed target prints MISS and exits 0.

#include <stdlib.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/apiserver/apiserver.h"
#include "vkube/common/log.h"
#include "vkube/controllers/manager.h"
#include "vkube/storage/rocksdb_backend.h"
#include "vkube/storage/watch_cache.h"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using namespace vkube;

struct Flags {
  int replicas = 1000;
  int idle_seconds = 10;
  bool sync = true;
  int kubelet_threads = 8;
};

int64_t count(storage::Backend& b, const std::string& prefix) {
  auto n = b.count(prefix);
  return n.is_ok() ? *n : 0;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Cluster {
  std::unique_ptr<storage::Backend> store;
  std::unique_ptr<storage::Backend> cache;
  std::unique_ptr<apiserver::ApiServer> api;
  std::unique_ptr<controllers::ControllerManager> manager;

  http::Response call(const std::string& method, const std::string& target, const json& body = nullptr,
                      const std::string& type = "application/json") {
    http::Request req;
    req.method = method;
    req.target = req.path = target;
    req.peer = http::PeerCertificate{"bench", {"system:masters"}};
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.push_back({"Content-Type", type});
    }
    return api->handle(req);
  }
  json get(const std::string& target) {
    http::Response r = call("GET", target);
    json j = json::parse(r.body, nullptr, false);
    return r.status == 200 && !j.is_discarded() ? j : json();
  }
};

// The kubelet's part: every pod that appears is marked Running and Ready
// (through pods/status, as a kubelet reports), by a few threads.
class Kubelet {
 public:
  Kubelet(Cluster& c, int threads) : c_(c) {
    auto w = c.cache->watch("/registry/core/pods/bench/", c.cache->current_revision());
    if (!w.is_ok()) {
      std::fprintf(stderr, "watch: %s\n", w.status().message().c_str());
      std::exit(1);
    }
    watch_ = std::move(w).value();
    watcher_ = std::thread([this] { follow(); });
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { mark(); });
  }
  ~Kubelet() {
    stop_ = true;
    watch_->cancel();
    cv_.notify_all();
    watcher_.join();
    for (auto& t : workers_) t.join();
  }

 private:
  void follow() {
    std::vector<storage::EventPtr> events;
    while (!stop_) {
      events.clear();
      if (!watch_->poll(&events, 100ms).is_ok()) return;
      std::lock_guard lock(mu_);
      for (const auto& e : events) {
        if (e->type != storage::EventType::kPut || e->prev_kv) continue;  // creates only
        json pod = json::parse(e->kv.value, nullptr, false);
        if (pod.is_discarded()) continue;
        todo_.push_back(pod["metadata"].value("name", ""));
      }
      cv_.notify_all();
    }
  }
  void mark() {
    static std::atomic<int> ip{0};
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !todo_.empty(); });
      if (stop_) return;
      std::string name = std::move(todo_.front());
      todo_.pop_front();
      lock.unlock();
      int n = ip.fetch_add(1);
      json status = {{"status",
                      {{"phase", "Running"},
                       {"podIP", "10.244." + std::to_string(n / 250 % 250) + "." + std::to_string(n % 250 + 1)},
                       {"conditions",
                        {{{"type", "Ready"}, {"status", "True"}},
                         {{"type", "ContainersReady"}, {"status", "True"}}}}}}};
      // The watch can deliver a create a moment before reads include it.
      for (int attempt = 0; attempt < 50; ++attempt) {
        if (c_.call("PATCH", "/api/v1/namespaces/bench/pods/" + name + "/status", status,
                    "application/merge-patch+json").status != 404)
          break;
        std::this_thread::sleep_for(1ms);
      }
      lock.lock();
    }
  }

  Cluster& c_;
  std::unique_ptr<storage::Watch> watch_;
  std::thread watcher_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> todo_;
  std::atomic<bool> stop_{false};
};

void report(const char* what, double value, const char* unit, double target, bool lower_is_better = true) {
  bool ok = lower_is_better ? value < target : value > target;
  std::printf("%-46s %10.3f %-4s (target %s %g) %s\n", what, value, unit, lower_is_better ? "<" : ">",
              target, ok ? "ok" : "MISS");
  std::fflush(stdout);
}

// Deployment status as `kubectl rollout status` requires it to be complete.
bool rollout_complete(const json& d, int replicas) {
  if (d.is_null()) return false;
  const json& s = d.value("status", json::object());
  return d["metadata"].value("generation", 0) <= s.value("observedGeneration", 0) &&
         s.value("updatedReplicas", 0) == replicas && s.value("replicas", 0) == replicas &&
         s.value("availableReplicas", 0) == replicas;
}

int run(const Flags& f) {
  char tmpl[] = "/tmp/vkube-bench-controllers-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string dir = tmpl;
  Cluster c;
  storage::RocksDbOptions so;
  so.path = dir + "/store";
  so.sync = f.sync;
  auto store = storage::open_rocksdb(so);
  if (!store.is_ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().message().c_str());
    return 1;
  }
  c.store = std::move(store).value();
  c.cache = std::move(storage::make_watch_cache(*c.store)).value();
  apiserver::Options ao;
  ao.backend = c.cache.get();
  ao.max_requests_inflight = 10000;
  ao.max_mutating_inflight = 10000;
  c.api = apiserver::ApiServer::create(ao);
  auto m = controllers::ControllerManager::start(*c.api, *c.cache);
  if (!m.is_ok()) {
    std::fprintf(stderr, "controllers: %s\n", m.status().message().c_str());
    return 1;
  }
  c.manager = std::move(m).value();
  c.call("POST", "/api/v1/namespaces", {{"metadata", {{"name", "bench"}}}});

  std::printf("bench_controllers: %d replicas, %s WAL\n", f.replicas, f.sync ? "synced" : "unsynced");
  const std::string deploy = "/apis/apps/v1/namespaces/bench/deployments/web";
  json d = {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", {{"name", "web"}, {"namespace", "bench"}}},
            {"spec",
             {{"replicas", f.replicas},
              {"selector", {{"matchLabels", {{"app", "web"}}}}},
              {"template",
               {{"metadata", {{"labels", {{"app", "web"}}}}},
                {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx:1.27"}}}}}}}}}}};

  // 1. Create: the ReplicaSet and every pod.
  auto t0 = Clock::now();
  if (c.call("POST", "/apis/apps/v1/namespaces/bench/deployments", d).status != 201) return 1;
  double rs_at = -1;
  while (seconds_since(t0) < 60) {
    if (rs_at < 0 && count(*c.cache, "/registry/apps/replicasets/bench/") > 0)
      rs_at = seconds_since(t0);
    if (count(*c.cache, "/registry/core/pods/bench/") >= f.replicas) break;
    std::this_thread::sleep_for(2ms);
  }
  double created = seconds_since(t0);
  std::printf("%-46s %10.3f s\n", "ReplicaSet created after", rs_at);
  report(("deployment -> RS + " + std::to_string(f.replicas) + " pods").c_str(), created, "s", 2.0);

  // All ready before the rollout (not timed).
  {
    Kubelet kubelet(c, f.kubelet_threads);
    auto t1 = Clock::now();
    // Pods created before the kubelet started are marked here.
    const json pods = c.get("/api/v1/namespaces/bench/pods");
    for (const json& p : pods.value("items", json::array()))
      c.call("PATCH", "/api/v1/namespaces/bench/pods/" + p["metadata"].value("name", "") + "/status",
             {{"status", {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}},
             "application/merge-patch+json");
    while (!rollout_complete(c.get(deploy), f.replicas) && seconds_since(t1) < 60)
      std::this_thread::sleep_for(5ms);
    std::printf("%-46s %10.3f s\n", "all pods ready and deployment available after", seconds_since(t1));

    // 2. Rolling update with the kubelet marking new pods ready.
    auto t2 = Clock::now();
    json patch = {{"spec", {{"template", {{"spec", {{"containers", {{{"name", "web"}, {"image", "nginx:1.28"}}}}}}}}}}};
    if (c.call("PATCH", deploy, patch, "application/strategic-merge-patch+json").status != 200) return 1;
    bool done = false;
    while (seconds_since(t2) < 120) {
      json cur = c.get(deploy);
      if (rollout_complete(cur, f.replicas) &&
          cur["metadata"].value("generation", 0) > 1) {
        done = true;
        break;
      }
      std::this_thread::sleep_for(5ms);
    }
    double rolled = seconds_since(t2);
    if (!done) std::printf("rollout did not complete within 120 s\n");
    report(("rolling update of " + std::to_string(f.replicas) + " pods").c_str(), rolled, "s", 5.0);
    c.manager->wait_idle(30s);
  }

  // 3. Idle CPU of the whole control plane.
  std::this_thread::sleep_for(1s);
  double cpu0 = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(f.idle_seconds));
  double idle_pct = (cpu_seconds() - cpu0) / f.idle_seconds * 100;
  report("CPU while idle (% of one core)", idle_pct, "%", 0.5);

  c.manager->stop();
  c.api->shutdown();
  c.manager.reset();
  c.api.reset();
  c.cache.reset();
  c.store.reset();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--replicas") f.replicas = std::atoi(value().c_str());
    else if (a == "--idle-seconds") f.idle_seconds = std::atoi(value().c_str());
    else if (a == "--no-sync") f.sync = false;
    else if (a == "--help") {
      std::printf("bench_controllers [--replicas N] [--idle-seconds S] [--no-sync]\n");
      return 0;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  if (f.replicas <= 0 || f.idle_seconds <= 0) return 2;
  vkube::log::set_level(vkube::log::Level::warn);
  return run(f);
}
