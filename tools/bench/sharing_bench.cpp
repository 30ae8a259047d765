// bench_sharing: the sharing proof through the real system. The Alibaba GPU
// trace v2023's pods, split into teams (sharing_model.h), replayed into one
// tenant per team on a fresh `vkube host` per configuration:
//
//   dedicated    each team's pods go only to its own nodes (vkube create --node-selector)
//   pooled-caps  one pool, each team capped at its slice (vkube create --gpu-quota)
//   fair-share   one pool, each team guaranteed its slice, borrowing and reclaim
//                (vkube create --gpu-share deserved=...)
//
// Prints one table line per configuration and writes CSV and SVG to --out.
//
//   bench_sharing [--quick] [--teams 4] [--from-day 130] [--days 2] [--seconds 300]
//                 [--configs dedicated,pooled-caps,fair-share] [--out DIR]
//                 [--dashboard-port P [--screenshot FILE]] [--keep] ...
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "children.h"
#include "sharing_model.h"
#include "sharing_procs.h"
#include "sharing_replay.h"
#include "vkube/hostclient/client.h"

namespace {

namespace fs = std::filesystem;
namespace sh = vkube::bench::sharing;
using Clock = std::chrono::steady_clock;

struct Flags {
  std::string vkube = VKUBE_BENCH_DEFAULT_VKUBE;
  std::string trace_dir = VKUBE_TRACE_DIR;
  sh::Options plan;
  std::vector<std::string> configs = {"dedicated", "pooled-caps", "fair-share"};
  std::string out = "bench-sharing";
  double grace = 1.0;
  int sample_ms = 250;
  bool keep = false;
  int dashboard_port = 0;
  std::string screenshot;
  std::string policy;  // vkube host --policy; empty: the host's default
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

void usage(std::FILE* to) {
  std::fprintf(to,
               "bench_sharing [--vkube PATH] [--trace-dir DIR] [--teams 4] [--from-day 130]\n"
               "              [--days 2] [--seconds 300] [--quick] [--out DIR] [--grace 1.0]\n"
               "              [--configs dedicated,pooled-caps,fair-share] [--sample-ms 250]\n"
               "              [--keep] [--dashboard-port P] [--screenshot FILE]\n"
               "              [--policy binpack|spread|fragmentation]\n"
               "--quick: --days 0.25 --seconds 40 (a smoke run of all three configurations)\n");
}

bool parse_flags(int argc, char** argv, Flags* f) {
  auto number = [](double* to) {
    return [to](const std::string& v) { *to = std::atof(v.c_str()); };
  };
  auto integer = [](int* to) { return [to](const std::string& v) { *to = std::atoi(v.c_str()); }; };
  auto text = [](std::string* to) { return [to](const std::string& v) { *to = v; }; };
  const std::map<std::string, std::function<void(const std::string&)>> valued = {
      {"--vkube", text(&f->vkube)},
      {"--trace-dir", text(&f->trace_dir)},
      {"--teams", integer(&f->plan.teams)},
      {"--from-day", number(&f->plan.from_day)},
      {"--days", number(&f->plan.days)},
      {"--seconds", number(&f->plan.seconds)},
      {"--configs", [f](const std::string& v) { f->configs = split(v); }},
      {"--out", text(&f->out)},
      {"--grace", number(&f->grace)},
      {"--sample-ms", integer(&f->sample_ms)},
      {"--dashboard-port", integer(&f->dashboard_port)},
      {"--screenshot", text(&f->screenshot)},
      {"--policy", text(&f->policy)},
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    const bool inline_value = a.find('=') != std::string::npos;
    if (inline_value) v = a.substr(a.find('=') + 1), a.resize(a.find('='));
    if (a == "--quick") {
      f->plan.days = 0.25, f->plan.seconds = 40;
    } else if (a == "--keep") {
      f->keep = true;
    } else if (auto it = valued.find(a); it != valued.end()) {
      if (!inline_value && i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        return false;
      }
      it->second(inline_value ? v : argv[++i]);
    } else {
      const bool help = a == "--help" || a == "-h";
      usage(help ? stdout : stderr);
      std::exit(help ? 0 : 2);
    }
  }
  for (const std::string& c : f->configs)
    if (c != "dedicated" && c != "pooled-caps" && c != "fair-share") {
      std::fprintf(stderr, "--configs: unknown configuration '%s'\n", c.c_str());
      return false;
    }
  if (f->plan.teams < 1 || f->plan.teams > 8 || f->plan.days <= 0 || f->plan.seconds <= 0 ||
      f->sample_ms < 10 || f->configs.empty()) {
    std::fprintf(stderr,
                 "--teams must be 1..8, --days and --seconds positive, --sample-ms >= 10\n");
    return false;
  }
  return true;
}

std::unique_ptr<vkube::hostclient::Client> client_for(const std::string& kubeconfig,
                                                      std::string* error) {
  auto config = vkube::hostclient::from_kubeconfig(kubeconfig);
  if (!config.is_ok()) {
    *error = kubeconfig + ": " + config.status().message();
    return nullptr;
  }
  vkube::hostclient::Options o;
  o.user_agent = "bench-sharing";
  o.max_connections = 8;
  o.request_timeout = std::chrono::seconds(10);
  o.retry_for = std::chrono::seconds(5);  // a stuck call must not stall the replay long
  auto c = vkube::hostclient::Client::create(std::move(config).value(), o);
  if (!c.is_ok()) {
    *error = c.status().message();
    return nullptr;
  }
  return std::move(c).value();
}

// "10" or "10.5": deserved thousandths as GPUs for --gpu-share.
std::string gpus_text(int64_t milli) {
  char b[32];
  if (milli % 1000 == 0)
    std::snprintf(b, sizeof b, "%lld", static_cast<long long>(milli / 1000));
  else
    std::snprintf(b, sizeof b, "%.3f", static_cast<double>(milli) / 1000.0);
  std::string s = b;
  if (s.find('.') != std::string::npos) s.erase(s.find_last_not_of('0') + 1);
  return s;
}

std::vector<std::string> config_flags(const std::string& config, const sh::Plan& plan, size_t k) {
  if (config == "dedicated") return {"--node-selector", "vkube.io/team=" + plan.teams[k]};
  if (config == "pooled-caps")
    return {"--gpu-quota", "milli=" + std::to_string(plan.deserved_milli[k])};
  return {"--gpu-share", "deserved=" + gpus_text(plan.deserved_milli[k])};
}

bool syncer_ready(vkube::hostclient::Client& tenant) {
  auto r = tenant.call("GET", "/metrics");
  // Not JSON: the client hands the text back as a Status message.
  const std::string text =
      r.body.is_string() ? r.body.get<std::string>() : r.body.value("message", "");
  return text.find("\nvkube_syncer_ready 1") != std::string::npos;
}

struct ConfigRun {
  sh::RunResult result;
  sh::ReplayReport report;
  double setup_s = 0;
  bool ok = false;
};

// Host, tenants, replay, teardown for one configuration.
bool run_config(const Flags& f, const sh::Plan& plan, const std::string& config, bool dashboard,
                ConfigRun* run) {
  const auto t0 = Clock::now();
  char tmpl[] = "/tmp/bench-sharing-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return std::perror("mkdtemp"), false;
  sh::Stage stage;
  stage.dir = tmpl;
  stage.keep = f.keep;
  const std::string& dir = stage.dir;
  std::ofstream(dir + "/nodes.yaml") << sh::node_config_yaml(plan);
  std::vector<std::string> host_argv = {f.vkube,           "host",          "--data-dir",
                                        dir + "/host",     "--listen",      "127.0.0.1:0",
                                        "--durable=false", "--node-config", dir + "/nodes.yaml",
                                        "--log-level",     "warn"};
  if (!f.policy.empty()) host_argv.insert(host_argv.end(), {"--policy", f.policy});
  stage.host = sh::spawn(host_argv, dir + "/host.log");
  while (sh::read_text(dir + "/host.log").find("vkube is serving ") == std::string::npos) {
    int status = 0;
    const bool ended = waitpid(stage.host, &status, WNOHANG) == stage.host;
    if (ended || seconds_since(t0) > 60) {
      std::printf("[%s] vkube host did not start:\n%s\n", config.c_str(),
                  sh::read_text(dir + "/host.log").c_str());
      if (ended) vkube::bench::untrack_child(stage.host), stage.host = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string host_kc = dir + "/host/admin.kubeconfig";
  // The teams' tenants are created side by side: each `vkube create` waits
  // for its own tenant to answer.
  std::vector<pid_t> creates;
  for (size_t k = 0; k < plan.teams.size(); ++k) {
    std::vector<std::string> argv = {f.vkube,
                                     "create",
                                     plan.teams[k],
                                     "--kubeconfig",
                                     host_kc,
                                     "--data-dir",
                                     dir,
                                     "--out",
                                     dir + "/" + plan.teams[k] + ".kubeconfig"};
    for (std::string& a : config_flags(config, plan, k)) argv.push_back(std::move(a));
    creates.push_back(sh::spawn(argv, dir + "/create-" + plan.teams[k] + ".log"));
  }
  bool created = true;
  for (size_t k = 0; k < creates.size(); ++k)
    if (int rc = sh::wait_for(creates[k], std::chrono::seconds(150)); rc != 0) {
      std::printf("[%s] vkube create %s failed (exit %d):\n%s", config.c_str(),
                  plan.teams[k].c_str(), rc,
                  sh::read_text(dir + "/create-" + plan.teams[k] + ".log").c_str());
      created = false;
    }
  if (!created) return false;

  std::string error;
  auto host = client_for(host_kc, &error);
  std::vector<std::unique_ptr<vkube::hostclient::Client>> tenants;
  std::vector<vkube::hostclient::Client*> tenant_ptrs;
  for (const std::string& team : plan.teams) {
    tenants.push_back(host ? client_for(dir + "/" + team + ".kubeconfig", &error) : nullptr);
    if (!tenants.back()) break;
    tenant_ptrs.push_back(tenants.back().get());
  }
  if (!host || tenant_ptrs.size() != plan.teams.size())
    return std::printf("[%s] client: %s\n", config.c_str(), error.c_str()), false;
  for (auto* t : tenant_ptrs)
    for (int i = 0; i < 300 && !syncer_ready(*t); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  run->setup_s = seconds_since(t0);
  std::printf("[%s] vkube host and %zu tenants up in %.1f s (%s)\n", config.c_str(),
              plan.teams.size(), run->setup_s, dir.c_str());

  const std::string url = "http://127.0.0.1:" + std::to_string(f.dashboard_port) + "/dashboard/";
  if (dashboard) {
    stage.dashboard = sh::spawn({f.vkube, "dashboard", "--kubeconfig", host_kc, "--listen",
                                 "127.0.0.1:" + std::to_string(f.dashboard_port)},
                                dir + "/dashboard.log");
    std::printf("[%s] open %s during the replay\n", config.c_str(), url.c_str());
  }
  sh::ReplayOptions ro;
  ro.config = config;
  ro.seconds = f.plan.seconds;
  ro.grace = f.grace;
  ro.sample_ms = f.sample_ms;
  sh::Replay replay(plan, tenant_ptrs, *host, ro);
  replay.start();
  if (dashboard && !f.screenshot.empty() && config == "fair-share") {
    replay.sleep_until(f.plan.seconds / 2);
    pid_t c = sh::spawn({"/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                         "--virtual-time-budget=6000", "--window-size=1400,1000",
                         "--screenshot=" + fs::absolute(f.screenshot).string(), url},
                        dir + "/chromium.log");
    int rc = sh::wait_for(c, std::chrono::seconds(60));
    std::printf("[%s] screenshot %s: %s\n", config.c_str(), f.screenshot.c_str(),
                rc == 0 ? "written" : ("chromium failed, exit " + std::to_string(rc)).c_str());
  }
  run->result = replay.finish(&run->report);
  tenants.clear();
  host.reset();
  sh::stop(stage.dashboard);
  stage.dashboard = -1;
  run->ok = true;
  run->result.wall_seconds = seconds_since(t0);  // teardown follows in ~Stage
  return true;
}

void print_health(const ConfigRun& r) {
  const sh::ReplayReport& p = r.report;
  std::printf(
      "  %-12s setup %5.1f s  wall %5.1f s  creates %d (403 answers %d, pods refused %d)  "
      "preemptions %d (%d seen only as gone)  late: max %.3f s, %d > 100 ms  errors %d\n",
      r.result.config.c_str(), r.setup_s, r.result.wall_seconds, p.creates, p.refused_answers,
      r.result.refused, r.result.preemptions, p.vanished, p.max_late_s, p.late_over_100ms,
      r.result.errors);
  if (p.running_missed || p.failed || p.samples_failed)
    std::printf("  %-12s succeeded before seen Running %d, Failed %d, /metrics reads failed %d\n",
                "", p.running_missed, p.failed, p.samples_failed);
  for (const std::string& e : p.first_errors) std::printf("    error: %s\n", e.c_str());
  for (const auto& [due, late] : p.late_examples)
    std::printf("    late: due at %.2f s, first create %.3f s later\n", due, late);
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!parse_flags(argc, argv, &f)) return 2;
  signal(SIGPIPE, SIG_IGN);
  sh::stop_children_on_signal();
  const auto t0 = Clock::now();

  std::string error;
  auto pods = sh::load_trace_pods(f.trace_dir + "/openb_pod_list_default.csv", &error);
  auto nodes = pods.empty()
                   ? std::vector<sh::TraceNode>{}
                   : sh::load_trace_nodes(f.trace_dir + "/openb_node_list_gpu_node.csv", &error);
  if (pods.empty() || nodes.empty()) {
    std::fprintf(stderr, "trace in %s: %s\n", f.trace_dir.c_str(), error.c_str());
    return 1;
  }
  const sh::Plan plan = sh::make_plan(pods, nodes, f.plan);
  sh::print_plan(stdout, plan);

  bool dashboard = false;
  if (f.dashboard_port > 0) {
    pid_t p = sh::spawn({f.vkube, "dashboard", "--help"}, "/dev/null");
    dashboard = sh::wait_for(p, std::chrono::seconds(10)) == 0;
    if (!dashboard)
      std::printf("note: %s has no `dashboard` command yet: no dashboard during the replay\n",
                  f.vkube.c_str());
  }

  std::vector<ConfigRun> runs;
  for (const std::string& config : f.configs) {
    ConfigRun run;
    if (run_config(f, plan, config, dashboard, &run)) {
      std::printf("[%s] done in %.1f s\n", config.c_str(), run.result.wall_seconds);
      runs.push_back(std::move(run));
    } else {
      std::printf("[%s] FAILED: left out of the comparison\n", config.c_str());
    }
  }
  if (runs.empty()) return 1;

  std::vector<sh::RunResult> results;
  std::vector<sh::Summary> summaries;
  for (const ConfigRun& r : runs) {
    results.push_back(r.result);
    summaries.push_back(sh::summarize(r.result, plan));
  }
  std::printf("\n");
  sh::print_table(stdout, summaries, plan);
  std::printf("\nreplay health\n");
  for (const ConfigRun& r : runs) print_health(r);
  std::error_code ec;
  fs::create_directories(f.out, ec);
  std::printf("\nwritten:\n");
  for (const std::string& file : sh::write_outputs(f.out, plan, results, summaries))
    std::printf("  %s\n", file.c_str());
  std::printf("bench_sharing: %zu of %zu configurations in %.1f s\n", runs.size(), f.configs.size(),
              seconds_since(t0));
  return runs.size() == f.configs.size() ? 0 : 1;
}
