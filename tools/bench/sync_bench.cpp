// bench_sync: the syncer through the real system. Starts `vkube host` (64
// simulated nodes) and one tenant (`vkube serve --host-kubeconfig`) as
// processes and talks to both over HTTPS with vkube's own host client.
//
//   latency   tenant pod created -> host pod exists, and host pod Running ->
//             tenant pod Running (p50, p99 over --pods sequential pods)
//   burst     --burst pods created at once: time until all are Running in
//             the tenant
//   restart   --restart-pods pods synced, the tenant stopped and started
//             again: time until the syncer has converged, and the writes it
//             made doing so (read from its /metrics)
//
//   bench_sync [--vkube PATH] [--pods 200] [--burst 1000] [--restart-pods 5000]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "children.h"
#include "vkube/hostclient/client.h"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double ms_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A vkube process with stdout in a file.
struct Proc {
  pid_t pid = -1;
  std::string out;
  Clock::time_point started;

  void start(const std::vector<std::string>& argv, const std::string& out_path) {
    out = out_path;
    started = Clock::now();
    pid = vkube::bench::spawn_to_files(argv, out_path, out_path + ".log");
  }
  // Waits for "vkube is serving URL".
  bool wait_serving(std::chrono::seconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (read_file(out).find("vkube is serving ") != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  void stop(int sig = SIGTERM) {
    if (pid <= 0) return;
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
  }
  ~Proc() { stop(); }
};

std::unique_ptr<vkube::hostclient::Client> client_for(const std::string& kubeconfig) {
  auto config = vkube::hostclient::from_kubeconfig(kubeconfig);
  if (!config.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", kubeconfig.c_str(), config.status().message().c_str());
    std::exit(1);
  }
  vkube::hostclient::Options o;
  o.user_agent = "bench-sync";
  o.max_connections = 64;
  auto c = vkube::hostclient::Client::create(std::move(config).value(), o);
  if (!c.is_ok()) {
    std::fprintf(stderr, "client: %s\n", c.status().message().c_str());
    std::exit(1);
  }
  return std::move(c).value();
}

json pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"bench", "sync"}}}}},
          {"spec",
           {{"containers",
             {{{"name", "main"},
               {"image", "busybox:1.36"},
               {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}}}}}}};
}

// Watches pods at `path` and records, per name, when it was first seen and
// first seen Running.
struct PodWatch {
  std::mutex mu;
  std::map<std::string, Clock::time_point> seen, running;
  std::thread thread;
  std::atomic<bool> stop{false};

  void start(vkube::hostclient::Client& c, const std::string& path, const std::string& suffix) {
    thread = std::thread([this, &c, path, suffix] {
      std::string rv;
      while (!stop) {
        auto list = c.call("GET", path + "?limit=0");
        if (list.ok()) rv = list.body["metadata"].value("resourceVersion", "");
        c.watch(path + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv,
                [&](std::string_view type, json obj) {
                  if (stop) return false;
                  if (type == "BOOKMARK" || type == "ERROR") return true;
                  std::string name = obj["metadata"].value("name", "");
                  if (!suffix.empty()) {
                    if (name.size() < suffix.size() ||
                        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
                      return true;
                    name = name.substr(0, name.size() - suffix.size());
                  }
                  const auto now = Clock::now();
                  std::lock_guard lock(mu);
                  seen.try_emplace(name, now);
                  if (obj.value("status", json::object()).value("phase", "") == "Running")
                    running.try_emplace(name, now);
                  return true;
                });
      }
    });
  }
  size_t running_count() {
    std::lock_guard lock(mu);
    return running.size();
  }
  void finish(vkube::hostclient::Client& c) {
    stop = true;
    c.stop();
    if (thread.joinable()) thread.join();
  }
};

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Scrapes the tenant's /metrics for a sample's value (-1 when absent).
double metric(vkube::hostclient::Client& c, const std::string& sample) {
  auto r = c.call("GET", "/metrics");
  std::string text = r.body.is_string() ? r.body.get<std::string>() : r.body.value("message", "");
  auto at = text.find("\n" + sample + " ");
  if (at == std::string::npos) return -1;
  return std::atof(text.c_str() + at + sample.size() + 2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string vkube = VKUBE_BENCH_DEFAULT_VKUBE;
  int pods_n = 200, burst_n = 1000, restart_n = 5000;
  bool keep = false;  // --keep true: leave the processes' logs in /tmp
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string f = argv[i];
    if (f == "--vkube")
      vkube = argv[i + 1];
    else if (f == "--pods")
      pods_n = std::atoi(argv[i + 1]);
    else if (f == "--burst")
      burst_n = std::atoi(argv[i + 1]);
    else if (f == "--restart-pods")
      restart_n = std::atoi(argv[i + 1]);
    else if (f == "--keep")
      keep = std::string(argv[i + 1]) == "true";
    else {
      std::fprintf(stderr,
                   "usage: bench_sync [--vkube PATH] [--pods N] [--burst N] [--restart-pods N]\n");
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/vkube-bench-sync-XXXXXX";
  const std::string dir = mkdtemp(tmpl);

  Proc host;
  host.start({vkube, "host", "--data-dir", dir + "/host", "--listen", "127.0.0.1:0", "--nodes",
              "64", "--durable=false", "--log-level", "debug"},
             dir + "/host.out");
  if (!host.wait_serving(std::chrono::seconds(60))) {
    std::fprintf(stderr, "vkube host did not start\n");
    return 1;
  }
  const std::vector<std::string> tenant_argv = {
      vkube,         "serve",  "--data-dir", dir + "/tenant",     "--listen",
      "127.0.0.1:0", "--name", "bench",      "--host-kubeconfig", dir + "/host/admin.kubeconfig",
      "--log-level", "debug"};
  Proc tenant;
  tenant.start(tenant_argv, dir + "/tenant.out");
  if (!tenant.wait_serving(std::chrono::seconds(60))) {
    std::fprintf(stderr, "vkube serve did not start\n");
    return 1;
  }
  auto h = client_for(dir + "/host/admin.kubeconfig");
  auto t = client_for(dir + "/tenant/admin.kubeconfig");
  auto hw_client = client_for(dir + "/host/admin.kubeconfig");
  auto tw_client = client_for(dir + "/tenant/admin.kubeconfig");
  // Wait for the syncer to be ready.
  for (int i = 0; i < 600 && metric(*t, "vkube_syncer_ready") != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));

  PodWatch hostw, tenantw;
  hostw.start(*hw_client, "/api/v1/namespaces/vkube-bench/pods", "-x-default-x-bench");
  tenantw.start(*tw_client, "/api/v1/namespaces/default/pods", "");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  // 1. Latency, one pod at a time.
  std::map<std::string, Clock::time_point> created;
  for (int i = 0; i < pods_n; ++i) {
    const std::string name = "lat-" + std::to_string(i);
    auto r = t->call("POST", "/api/v1/namespaces/default/pods", pod(name));
    created[name] = Clock::now();
    if (!r.ok())
      std::fprintf(stderr, "create %s: %d %s\n", name.c_str(), r.code, r.message().c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int i = 0; i < 500 && tenantw.running_count() < static_cast<size_t>(pods_n); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::vector<double> down, up;
  {
    std::scoped_lock lock(hostw.mu, tenantw.mu);
    for (const auto& [name, at] : created) {
      if (auto it = hostw.seen.find(name); it != hostw.seen.end())
        down.push_back(ms_since(at, it->second));
      auto hr = hostw.running.find(name);
      auto tr = tenantw.running.find(name);
      if (hr != hostw.running.end() && tr != tenantw.running.end())
        up.push_back(ms_since(hr->second, tr->second));
    }
  }
  std::printf("latency over %d pods\n", pods_n);
  std::printf("  tenant create -> host pod exists:  p50 %.1f ms  p99 %.1f ms  (%zu seen)\n",
              pct(down, 0.5), pct(down, 0.99), down.size());
  std::printf("  host Running -> tenant Running:    p50 %.1f ms  p99 %.1f ms  (%zu seen)\n",
              pct(up, 0.5), pct(up, 0.99), up.size());

  // 2. A burst.
  const size_t before = tenantw.running_count();
  const auto b0 = Clock::now();
  {
    std::atomic<int> next{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < 16; ++w)
      threads.emplace_back([&] {
        for (int i; (i = next++) < burst_n;)
          t->call("POST", "/api/v1/namespaces/default/pods", pod("burst-" + std::to_string(i)));
      });
    for (auto& th : threads) th.join();
  }
  const auto created_all = Clock::now();
  while (tenantw.running_count() < before + static_cast<size_t>(burst_n) &&
         ms_since(b0, Clock::now()) < 120000)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::printf(
      "burst of %d pods: created in %.0f ms, all Running in the tenant after %.0f ms (%zu)\n",
      burst_n, ms_since(b0, created_all), ms_since(b0, Clock::now()),
      tenantw.running_count() - before);
  hostw.finish(*hw_client);
  tenantw.finish(*tw_client);

  // 3. Restart with many synced pods.
  const int have = pods_n + burst_n;
  if (restart_n > have) {
    std::atomic<int> next{have};
    std::vector<std::thread> threads;
    for (int w = 0; w < 16; ++w)
      threads.emplace_back([&] {
        for (int i; (i = next++) < restart_n;)
          t->call("POST", "/api/v1/namespaces/default/pods", pod("many-" + std::to_string(i)));
      });
    for (auto& th : threads) th.join();
  }
  // Wait until everything is synced (the syncer idle).
  for (int quiet = 0, i = 0; quiet < 20 && i < 12000; ++i) {
    quiet = metric(*t, "vkube_syncer_busy") == 0 ? quiet + 1 : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  auto list = t->call("GET", "/api/v1/namespaces/default/pods");
  auto hlist =
      h->call("GET", "/api/v1/namespaces/vkube-bench/pods?labelSelector=vkube.io/tenant%3Dbench");
  std::printf("restart: %zu tenant pods, %zu host pods\n",
              list.body.value("items", json::array()).size(),
              hlist.body.value("items", json::array()).size());
  t->stop();
  tenant.stop(SIGTERM);
  fs::rename(dir + "/tenant.out", dir + "/tenant.out.1");
  tenant.start(tenant_argv, dir + "/tenant.out");
  if (!tenant.wait_serving(std::chrono::seconds(60))) {
    std::fprintf(stderr, "vkube serve did not restart\n");
    return 1;
  }
  const double serving_ms = ms_since(tenant.started, Clock::now());
  auto t2 = client_for(dir + "/tenant/admin.kubeconfig");
  double converged_ms = -1;
  for (int i = 0; i < 60000; ++i) {
    if (metric(*t2, "vkube_syncer_ready") == 1 && metric(*t2, "vkube_syncer_busy") == 0) {
      converged_ms = ms_since(tenant.started, Clock::now());
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  // Writes counted by the restarted process (the samples carry labels).
  auto r = t2->call("GET", "/metrics");
  std::string text = r.body.is_string() ? r.body.get<std::string>() : r.body.value("message", "");
  auto sample = [&](const std::string& s) {
    auto at = text.find(s);
    return at == std::string::npos ? -1.0 : std::atof(text.c_str() + at + s.size());
  };
  std::printf(
      "restart: serving after %.0f ms, syncer converged after %.0f ms; writes: host %.0f, tenant "
      "%.0f\n",
      serving_ms, converged_ms, sample("vkube_syncer_writes_total{cluster=\"host\"} "),
      sample("vkube_syncer_writes_total{cluster=\"tenant\"} "));
  t2->stop();
  tenant.stop();
  host.stop();
  if (keep)
    std::printf("logs kept in %s\n", dir.c_str());
  else
    fs::remove_all(dir);
  return 0;
}
