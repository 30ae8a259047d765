// bench_tenants: how fast tenants spawn and how little they hold, through
// the real system. Starts `vkube host`, then creates tenants one after
// another with `vkube create` (the host's node agent runs each as a local
// `vkube serve` process) and, for each, runs the real kubectl against the
// new tenant until `kubectl get ns` succeeds.
//
//   A         --latency-tenants tenants one at a time: `vkube create NAME`
//             started -> `kubectl get ns` in it succeeded (p50, p90, max)
//   B         --tenants tenants created one after another (--wait=false):
//             the time from the first create until every one is up
//   memory    after --settle-seconds: RSS of one tenant (median), its anon
//             and file parts and PSS (the binary's pages are shared, so PSS
//             is what each tenant really adds); the sum over all tenants
//   idle CPU  CPU seconds all tenants (and the host) used over --idle-seconds
//   delete    `vkube delete NAME` of one tenant, to the namespace gone
//
//   bench_tenants [--vkube PATH] [--kubectl PATH] [--latency-tenants 10] [--tenants 100]
//                 [--settle-seconds 10] [--idle-seconds 10] [--keep false]
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "children.h"
#include "vkube/hostclient/client.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs argv to its end with stdout and stderr in `log`; the exit code.
int run(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = vkube::bench::spawn_to_files(argv, log, log);
  if (pid < 0) return 127;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A field of /proc/<pid>/<file> in KiB ("VmRSS:  1234 kB").
int64_t proc_kib(pid_t pid, const std::string& file, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1);
  return 0;
}

// User + system CPU seconds of a process (all its threads).
double cpu_seconds(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The children of `parent` (the tenants `vkube host` runs).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::string stat = read_file(e.path().string() + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream in(stat.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    in >> state >> ppid;
    if (ppid == parent && state != "Z") out.push_back(std::stoi(name));
  }
  return out;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string mib(int64_t kib) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(kib) / 1024.0);
  return b;
}

volatile sig_atomic_t g_host = 0;

void on_signal(int) {
  if (g_host > 0) kill(g_host, SIGTERM);
  _exit(130);
}

}  // namespace

int main(int argc, char** argv) {
  std::string vkube = VKUBE_BENCH_DEFAULT_VKUBE;
  std::string kubectl = "/usr/bin/kubectl";
  int tenants = 100;
  int latency_tenants = 10;
  int settle = 10, idle = 10;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--vkube")
      vkube = value();
    else if (a == "--kubectl")
      kubectl = value();
    else if (a == "--tenants")
      tenants = std::atoi(value().c_str());
    else if (a == "--latency-tenants")
      latency_tenants = std::atoi(value().c_str());
    else if (a == "--settle-seconds")
      settle = std::atoi(value().c_str());
    else if (a == "--idle-seconds")
      idle = std::atoi(value().c_str());
    else if (a == "--keep")
      keep = value() == "true";
    else {
      std::printf(
          "bench_tenants [--vkube PATH] [--kubectl PATH] [--latency-tenants 10] [--tenants 100]\n"
          "              [--settle-seconds 10] [--idle-seconds 10] [--keep false]\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (tenants < 1) tenants = 1;

  char tmpl[] = "/tmp/bench-tenants-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string host_dir = dir + "/host";
  const std::string host_kubeconfig = host_dir + "/admin.kubeconfig";
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  // The host, with the default pool of simulated GPU nodes.
  std::fflush(stdout);
  pid_t host = fork();
  if (host == 0) {
    FILE* o = std::freopen((dir + "/host.out").c_str(), "w", stdout);
    FILE* e = std::freopen((dir + "/host.log").c_str(), "w", stderr);
    (void)o;
    (void)e;
    execl(vkube.c_str(), "vkube", "host", "--data-dir", host_dir.c_str(), "--listen", "127.0.0.1:0",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  g_host = host;
  vkube::bench::track_child(host);
  for (auto t0 = Clock::now();
       read_file(dir + "/host.out").find("vkube is serving") == std::string::npos;) {
    if (ms_since(t0) > 30000) {
      std::fprintf(stderr, "vkube host did not start; see %s/host.log\n", dir.c_str());
      kill(host, SIGTERM);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  std::printf("bench_tenants: vkube host in %s\n", dir.c_str());
  auto fail_with_log = [&](const std::string& what, const std::string& log) {
    std::fprintf(stderr, "%s:\n%s", what.c_str(), read_file(log).c_str());
    kill(host, SIGTERM);
    waitpid(host, nullptr, 0);
    return 1;
  };

  // A: one tenant at a time, each to a working `kubectl get ns`.
  std::vector<double> create_ms, ready_ms;
  for (int i = 0; i < latency_tenants; ++i) {
    const std::string name = "lat-" + std::to_string(i);
    const std::string out = dir + "/" + name + ".kubeconfig";
    const std::string log = dir + "/create-" + name + ".log";
    const auto t0 = Clock::now();
    if (run({vkube, "create", name, "--kubeconfig", host_kubeconfig, "--out", out}, log) != 0)
      return fail_with_log("vkube create " + name + " failed", log);
    create_ms.push_back(ms_since(t0));
    // The user's view: kubectl works against the new tenant.
    while (run({kubectl, "--kubeconfig", out, "get", "ns"}, dir + "/kubectl.log") != 0) {
      if (ms_since(t0) > 60000)
        return fail_with_log("kubectl get ns failed for " + name, dir + "/kubectl.log");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ready_ms.push_back(ms_since(t0));
  }
  if (latency_tenants > 0) {
    std::printf("  A: %d tenants, one at a time\n", latency_tenants);
    std::printf("  vkube create (returns ready)  p50 %.0f ms, max %.0f ms\n",
                percentile(create_ms, 0.5), percentile(create_ms, 1.0));
    std::printf("  create -> kubectl get ns ok   p50 %.0f ms, p90 %.0f ms, max %.0f ms\n",
                percentile(ready_ms, 0.5), percentile(ready_ms, 0.9), percentile(ready_ms, 1.0));
  }

  // B: `tenants` tenants created one after another (vkube create --wait=false),
  // then until every one is up: it has written its kubeconfig Secret, which
  // it does once it serves with its controllers and syncer running.
  auto host_client = [&] {
    auto config = vkube::hostclient::from_kubeconfig(host_kubeconfig);
    vkube::hostclient::Options o;
    o.user_agent = "bench-tenants";
    return vkube::hostclient::Client::create(std::move(config).value(), o);
  }();
  if (!host_client.is_ok()) return fail_with_log("host client", dir + "/host.log");
  const auto all0 = Clock::now();
  for (int i = 0; i < tenants; ++i) {
    const std::string name = "t-" + std::to_string(i);
    const std::string log = dir + "/create-" + name + ".log";
    if (run({vkube, "create", name, "--kubeconfig", host_kubeconfig, "--wait=false"}, log) != 0)
      return fail_with_log("vkube create " + name + " failed", log);
  }
  const double issued_ms = ms_since(all0);
  // Listed once, then watched: polling a cluster-wide list every few
  // milliseconds would itself load the host being measured.
  std::set<std::string> up;
  const std::string secrets = "/api/v1/secrets?fieldSelector=metadata.name%3Dvkube-kubeconfig";
  auto note = [&](const vkube::hostclient::json& secret) {
    const auto& meta = secret["metadata"];
    std::string ns = meta.is_object() ? meta.value("namespace", "") : "";
    if (ns.rfind("vkube-t-", 0) == 0) up.insert(ns);
  };
  std::string rv;
  while (up.size() < static_cast<size_t>(tenants)) {
    if (ms_since(all0) > 300000) return fail_with_log("not every tenant came up", dir + "/host.log");
    if (rv.empty()) {
      auto r = (*host_client)->call("GET", secrets);
      if (!r.ok()) return fail_with_log("listing secrets: " + r.message(), dir + "/host.log");
      for (const auto& item : r.body["items"]) note(item);
      rv = r.body["metadata"].value("resourceVersion", "");
      continue;
    }
    auto w = (*host_client)
                 ->watch(secrets + "&watch=1&timeoutSeconds=30&resourceVersion=" + rv,
                         [&](std::string_view type, vkube::hostclient::json obj) {
                           if (type == "ERROR") {
                             rv.clear();  // relist (410 Gone)
                             return false;
                           }
                           rv = obj["metadata"].value("resourceVersion", rv);
                           if (type != "DELETED") note(obj);
                           return up.size() < static_cast<size_t>(tenants);
                         });
    if (!w.ok()) rv.clear();
  }
  const double all_ms = ms_since(all0);
  // Where the machine's time went while they came up.
  double tenants_start_cpu = 0;
  for (pid_t p : children_of(host)) tenants_start_cpu += cpu_seconds(p);
  rusage self{};
  getrusage(RUSAGE_CHILDREN, &self);
  const double commands_cpu = static_cast<double>(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
                              (self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6;
  // And a sample answers kubectl.
  int answered = 0, sampled = 0;
  for (int i = 0; i < tenants; i += std::max(1, tenants / 5)) {
    const std::string name = "t-" + std::to_string(i);
    const std::string out = dir + "/" + name + ".kubeconfig";
    ++sampled;
    if (run({vkube, "connect", name, "--kubeconfig", host_kubeconfig, "--out", out},
            dir + "/connect.log") == 0 &&
        run({kubectl, "--kubeconfig", out, "get", "ns"}, dir + "/kubectl.log") == 0)
      ++answered;
  }
  std::printf("  B: %d tenants created one after another\n", tenants);
  std::printf(
      "  CPU so far                    tenants %.1f s (%.0f ms each), host %.1f s, vkube/kubectl "
      "commands %.1f s\n",
      tenants_start_cpu, 1000.0 * tenants_start_cpu / (tenants + latency_tenants),
      cpu_seconds(host), commands_cpu);
  std::printf("  all created                   %.2f s (%.0f ms each)\n", issued_ms / 1000.0,
              issued_ms / tenants);
  std::printf(
      "  all up                        %.2f s after the first create (kubectl get ns: %d of %d "
      "sampled)\n",
      all_ms / 1000.0, answered, sampled);

  std::this_thread::sleep_for(std::chrono::seconds(settle));
  std::vector<pid_t> pids = children_of(host);
  std::vector<double> rss, anon, file, pss;
  int64_t rss_sum = 0, pss_sum = 0;
  for (pid_t p : pids) {
    int64_t r = proc_kib(p, "status", "VmRSS");
    int64_t s = proc_kib(p, "smaps_rollup", "Pss");
    rss.push_back(static_cast<double>(r));
    anon.push_back(static_cast<double>(proc_kib(p, "status", "RssAnon")));
    file.push_back(static_cast<double>(proc_kib(p, "status", "RssFile")));
    pss.push_back(static_cast<double>(s));
    rss_sum += r;
    pss_sum += s;
  }
  std::printf("  tenant processes              %zu (threads of one: %lld)\n", pids.size(),
              pids.empty() ? 0LL : static_cast<long long>(proc_kib(pids[0], "status", "Threads")));
  std::printf("  idle RSS of one tenant        %s (median; anon %s, file %s; PSS %s)\n",
              mib(static_cast<int64_t>(percentile(rss, 0.5))).c_str(),
              mib(static_cast<int64_t>(percentile(anon, 0.5))).c_str(),
              mib(static_cast<int64_t>(percentile(file, 0.5))).c_str(),
              mib(static_cast<int64_t>(percentile(pss, 0.5))).c_str());
  std::printf("  all tenants                   RSS sum %s, PSS sum %s; host RSS %s\n",
              mib(rss_sum).c_str(), mib(pss_sum).c_str(),
              mib(proc_kib(host, "status", "VmRSS")).c_str());

  double cpu0 = cpu_seconds(host);
  std::map<pid_t, double> before;
  for (pid_t p : pids) before[p] = cpu_seconds(p);
  std::this_thread::sleep_for(std::chrono::seconds(idle));
  double tenants_cpu = 0;
  for (pid_t p : pids) tenants_cpu += cpu_seconds(p) - before[p];
  double host_cpu = cpu_seconds(host) - cpu0;
  std::printf(
      "  idle CPU over %d s             tenants %.2f s in all (%.3f %% of one core), host %.2f s\n",
      idle, tenants_cpu, 100.0 * tenants_cpu / idle, host_cpu);

  const auto d0 = Clock::now();
  int rc = run({vkube, "delete", "t-0", "--kubeconfig", host_kubeconfig}, dir + "/delete.log");
  std::printf("  vkube delete t-0              %s in %.0f ms\n", rc == 0 ? "done" : "FAILED",
              ms_since(d0));

  kill(host, SIGTERM);
  waitpid(host, nullptr, 0);
  vkube::bench::untrack_child(host);
  if (!keep) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return 0;
}
