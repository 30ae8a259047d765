// bench_scheduler: the host's GPU scheduler, run as `vkube host` wires it
// (RocksDB, watch cache, the API server's handler chain, the controllers,
// the scheduler, and for traces the simulated nodes), requests skipping only
// the HTTP transport. Each figure is printed next to its target (issue 6).
//
//   bench_scheduler throughput [--nodes 1000] [--pods 10000] [--policy P]
//     Pods/s to bind N pods on M simulated 8-GPU nodes. The pods (a mix of
//     1-GPU, half-GPU and CPU-only pods) exist before the scheduler starts,
//     as kube-scheduler's scheduler_perf measures; then the same again with
//     the pods created while the scheduler runs. Target >= 1,500 pods/s
//     (upstream kube-scheduler: 792-909 pods/s on 500 nodes).
//
//   bench_scheduler trace [--pods CSV] [--nodes-csv CSV] [--policy P|all]
//                         [--mode replay|fill] [--seconds S] [--load X]
//     The Alibaba GPU trace v2023 (Weng et al., ATC '23) through the API.
//     replay: pods created and deleted at their timestamps, compressed into
//       S seconds; prints the GPU allocation ratio, GPUs stranded by
//       fragmentation and pending pods over time.
//     fill: pods created in trace order, never deleted, the list repeated
//       until the GPUs asked for reach X times the cluster's (the paper's
//       experiment); prints allocation and fragmentation as demand grows.
//     Tenants: each pod goes to namespace tenant-<h % 4>, h = FNV-1a of its name.
//
//   bench_scheduler reclaim [--reclaims 100] [--nodes 2] [--grace 0]
//   bench_scheduler queues [--tenants 50] [--nodes 1000] [--pods 10000]
//     Tenants' GPU shares (issue 38): scheduler_share_bench.cpp says what
//     they measure.
// A benchmark, not a test: a missed target prints MISS and exits 0.

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "scheduler_bench_host.h"

namespace {

using namespace vkube;
using namespace vkube::bench;

// --- throughput ---

int run_throughput(const Flags& f, gpu::Policy policy) {
  std::printf("scheduling %d pods on %d nodes of 8 A100-80GB (policy %s, %s writes)\n", f.pods,
              f.nodes, std::string(gpu::policy_name(policy)).c_str(),
              f.sync ? "durable" : "unsynced");
  scheduler::Options so;
  so.policy = policy;
  {
    Host h(f.sync);
    create_nodes(h, f.nodes);
    parallel(f.pods, 16,
             [&](int i) { h.call("POST", "/api/v1/namespaces/default/pods", throughput_pod(i)); });
    auto t0 = Clock::now();
    h.start(so, nullptr);
    if (!wait_scheduled(h, f.pods, 300))
      std::printf("timed out: %lld bound\n", (long long)h.sched->gpu_state().scheduled);
    double s = seconds_since(t0);
    report("pods queued before start: bound per second", f.pods / s, "pods/s", 1500);
    auto st = h.sched->gpu_state();
    std::printf("  %d pods in %.2f s; GPU allocation %.1f%%\n", f.pods, s,
                100.0 * st.allocated_milli / std::max<int64_t>(1, st.capacity_milli));
  }
  {
    Host h(f.sync);
    create_nodes(h, f.nodes);
    h.start(so, nullptr);
    auto t0 = Clock::now();
    parallel(f.pods, 16,
             [&](int i) { h.call("POST", "/api/v1/namespaces/default/pods", throughput_pod(i)); });
    double created = seconds_since(t0);
    if (!wait_scheduled(h, f.pods, 300)) std::printf("timed out\n");
    double s = seconds_since(t0);
    report("pods created while running: created+bound per second", f.pods / s, "pods/s", 1500);
    std::printf("  creates took %.2f s (%.0f/s), last binding at %.2f s\n", created,
                f.pods / created, s);
  }
  return 0;
}

// --- trace ---

struct TracePod {
  std::string name;
  int64_t cpu_milli = 0, memory_mib = 0;
  int num_gpu = 0, gpu_milli = 0;
  std::vector<std::string> products;
  int64_t created = 0, deleted = -1;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

std::vector<TracePod> load_pods(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(1);
  }
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header = split(line, ',');
  auto col = [&](const char* name) {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  int c_name = col("name"), c_cpu = col("cpu_milli"), c_mem = col("memory_mib"),
      c_gpu = col("num_gpu"), c_milli = col("gpu_milli"), c_spec = col("gpu_spec"),
      c_created = col("creation_time"), c_deleted = col("deletion_time");
  std::vector<TracePod> pods;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto v = split(line, ',');
    auto num = [&](int c) -> int64_t {
      return c >= 0 && c < (int)v.size() && !v[c].empty() ? std::stoll(v[c]) : 0;
    };
    TracePod p;
    p.name = v[c_name];
    p.cpu_milli = num(c_cpu);
    p.memory_mib = num(c_mem);
    p.num_gpu = static_cast<int>(num(c_gpu));
    p.gpu_milli = static_cast<int>(num(c_milli));
    if (c_spec >= 0 && c_spec < (int)v.size() && !v[c_spec].empty())
      for (const auto& m : split(v[c_spec], '|'))
        if (auto model = gpu::find_model(m); model.is_ok()) p.products.push_back(model->product);
    p.created = num(c_created);
    p.deleted =
        c_deleted >= 0 && c_deleted < (int)v.size() && !v[c_deleted].empty() ? num(c_deleted) : -1;
    pods.push_back(std::move(p));
  }
  std::stable_sort(pods.begin(), pods.end(),
                   [](const TracePod& a, const TracePod& b) { return a.created < b.created; });
  return pods;
}

std::string tenant_of(const std::string& name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return "tenant-" + std::to_string(h % 4);
}

int64_t gpu_demand_milli(const TracePod& p) {
  if (p.num_gpu <= 0) return 0;
  return p.gpu_milli > 0 && p.gpu_milli < 1000 ? p.gpu_milli : 1000LL * p.num_gpu;
}

struct Outcome {
  std::string policy;
  double alloc_pct = 0, fragmented_gpus = 0, unallocated_gpus = 0;
  int pending = 0;
  double mean_alloc = 0, mean_frag = 0;
  double peak_alloc = 0, peak_frag = 0;  // the sample with the most GPUs allocated
};

void print_state(const char* label, const scheduler::ClusterGpuState& s) {
  std::printf(
      "  %-22s alloc %5.1f%%  unallocated %7.1f GPUs  stranded by fragmentation %7.1f GPUs  "
      "pending %5d\n",
      label, 100.0 * s.allocated_milli / std::max<int64_t>(1, s.capacity_milli),
      (s.capacity_milli - s.allocated_milli) / 1000.0, s.fragmented_milli / 1000.0, s.pending);
  std::fflush(stdout);
}

Outcome run_trace(const Flags& f, gpu::Policy policy, const std::vector<TracePod>& pods,
                  std::vector<gpu::NodeSpec> nodes) {
  std::printf("\n== policy %s: %zu nodes, %zu trace pods, mode %s ==\n",
              std::string(gpu::policy_name(policy)).c_str(), nodes.size(), pods.size(),
              f.trace_mode.c_str());
  Host h(f.sync);
  scheduler::Options so;
  so.policy = policy;
  auto t_start = Clock::now();
  h.start(so, &nodes);
  std::printf("  %zu simulated nodes up in %.2f s\n", nodes.size(), seconds_since(t_start));
  auto settle = [&] {
    h.manager->wait_idle(30s);
    h.sched->wait_idle(30s);
  };
  Outcome out;
  out.policy = std::string(gpu::policy_name(policy));
  // The scheduler has seen every node before the first pod arrives.
  for (int i = 0; i < 3000 && h.sched->gpu_state().nodes < static_cast<int>(nodes.size()); ++i)
    std::this_thread::sleep_for(10ms);
  const int64_t capacity = h.sched->gpu_state().capacity_milli;
  std::printf("  %.0f GPUs\n", capacity / 1000.0);
  auto create = [&](const TracePod& p, const std::string& name) {
    auto r = h.call("POST", "/api/v1/namespaces/" + tenant_of(name) + "/pods",
                    pod_object(tenant_of(name), name, p.cpu_milli, p.memory_mib, p.num_gpu,
                               p.gpu_milli, p.products));
    if (r.status != 201)
      std::fprintf(stderr, "create %s: %d %s\n", name.c_str(), r.status, r.body.c_str());
  };
  if (f.trace_mode == "fill") {
    // Arrivals in trace order until demand reaches load x capacity.
    const int64_t goal = static_cast<int64_t>(f.load * static_cast<double>(capacity));
    int64_t demand = 0;
    std::vector<double> marks = {0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.5};
    size_t mark = 0;
    int n = 0;
    for (int round = 0; demand < goal; ++round) {
      for (const TracePod& p : pods) {
        if (demand >= goal) break;
        create(p, round == 0 ? p.name : p.name + "-r" + std::to_string(round));
        demand += gpu_demand_milli(p);
        ++n;
        // Arrivals wait for the previous ones' placement at each mark, so
        // the printed state is the placement of exactly that demand.
        if (mark < marks.size() && demand >= marks[mark] * capacity) {
          settle();
          char label[64];
          std::snprintf(label, sizeof label, "demand %3.0f%% (%d pods)", 100 * marks[mark], n);
          print_state(label, h.sched->gpu_state());
          ++mark;
        }
      }
    }
    settle();
    auto s = h.sched->gpu_state();
    print_state("final", s);
    out.alloc_pct = 100.0 * s.allocated_milli / std::max<int64_t>(1, capacity);
    out.unallocated_gpus = (capacity - s.allocated_milli) / 1000.0;
    out.fragmented_gpus = s.fragmented_milli / 1000.0;
    out.pending = s.pending;
    return out;
  }
  // replay: creations and deletions at their timestamps, compressed.
  struct Ev {
    int64_t t;
    bool create;
    size_t pod;
  };
  std::vector<Ev> events;
  // --from-day: pods gone before it are skipped, those alive then start at it.
  const int64_t t_from = static_cast<int64_t>(f.from_day * 86400);
  int64_t t_max = t_from;
  for (size_t i = 0; i < pods.size(); ++i) {
    if (pods[i].deleted >= 0 && pods[i].deleted <= t_from) continue;
    const int64_t created = std::max(pods[i].created, t_from);
    events.push_back({created, true, i});
    if (pods[i].deleted > created) events.push_back({pods[i].deleted, false, i});
    t_max = std::max(t_max, std::max(created, pods[i].deleted));
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Ev& a, const Ev& b) { return a.t < b.t; });
  // Trace seconds per wall second.
  const double scale = std::max(1.0, static_cast<double>(t_max - t_from) / f.seconds);
  std::printf("  %zu events over trace days %.1f-%.1f, compressed into %.0f s (x%.0f)\n",
              events.size(), t_from / 86400.0, t_max / 86400.0, f.seconds, scale);
  auto t0 = Clock::now();
  double next_print = 0, sum_alloc = 0, sum_frag = 0;
  int samples = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const Ev& e = events[i];
    double due = static_cast<double>(e.t - t_from) / scale;
    double now = seconds_since(t0);
    if (due > now) std::this_thread::sleep_for(std::chrono::duration<double>(due - now));
    const TracePod& p = pods[e.pod];
    if (e.create)
      create(p, p.name);
    else if (auto r =
                 h.call("DELETE", "/api/v1/namespaces/" + tenant_of(p.name) + "/pods/" + p.name);
             r.status != 200 && r.status != 202)
      std::fprintf(stderr, "delete %s: %d %s\n", p.name.c_str(), r.status,
                   r.body.substr(0, 200).c_str());
    if (seconds_since(t0) >= next_print) {
      auto s = h.sched->gpu_state();
      char label[64];
      std::snprintf(label, sizeof label, "t=%5.1f d (%4.0f s)", e.t / 86400.0, seconds_since(t0));
      print_state(label, s);
      const double alloc = 100.0 * s.allocated_milli / std::max<int64_t>(1, capacity);
      sum_alloc += alloc;
      sum_frag += s.fragmented_milli / 1000.0;
      if (alloc > out.peak_alloc) {
        out.peak_alloc = alloc;
        out.peak_frag = s.fragmented_milli / 1000.0;
      }
      ++samples;
      next_print += f.seconds / 20;
    }
  }
  settle();
  auto s = h.sched->gpu_state();
  print_state("end", s);
  // The scheduler's books against the pods the API holds.
  int64_t held = 0;
  int live = 0;
  json all = json::parse(h.call("GET", "/api/v1/pods").body, nullptr, false);
  for (const json& p : all.value("items", json::array())) {
    std::string a =
        p["metadata"].value("annotations", json::object()).value("gpu.vkube.io/allocation", "");
    if (auto parsed = gpu::Allocation::parse(a); parsed.is_ok()) held += parsed->milli();
    ++live;
  }
  std::printf("  books: scheduler holds %.1f GPUs, the %d pods the API holds record %.1f\n",
              s.allocated_milli / 1000.0, live, held / 1000.0);
  out.mean_alloc = sum_alloc / std::max(1, samples);
  out.mean_frag = sum_frag / std::max(1, samples);
  out.alloc_pct = 100.0 * s.allocated_milli / std::max<int64_t>(1, capacity);
  out.fragmented_gpus = s.fragmented_milli / 1000.0;
  out.unallocated_gpus = (capacity - s.allocated_milli) / 1000.0;
  out.pending = s.pending;
  return out;
}

int run_traces(const Flags& f) {
  auto nodes = gpu::pool_from_trace(f.nodes_csv);
  if (!nodes.is_ok()) {
    std::fprintf(stderr, "%s\n", nodes.status().message().c_str());
    return 1;
  }
  gpu::assign_addresses(*nodes);
  auto pods = load_pods(f.pods_csv);
  std::vector<gpu::Policy> policies;
  if (f.policy == "all") {
    policies = {gpu::Policy::kBinpack, gpu::Policy::kSpread, gpu::Policy::kFragmentation};
  } else {
    auto p = gpu::parse_policy(f.policy);
    if (!p.is_ok()) return 1;
    policies = {*p};
  }
  std::vector<Outcome> outcomes;
  for (auto p : policies) outcomes.push_back(run_trace(f, p, pods, *nodes));
  std::printf("\n%-14s %8s %14s %22s %8s", "policy", "alloc%", "unallocated",
              "stranded (fragmented)", "pending");
  if (f.trace_mode == "replay")
    std::printf(" %10s %14s %10s %16s", "mean alloc%", "mean stranded", "peak alloc%",
                "stranded at peak");
  std::printf("\n");
  for (const auto& o : outcomes) {
    std::printf("%-14s %8.1f %14.1f %22.1f %8d", o.policy.c_str(), o.alloc_pct, o.unallocated_gpus,
                o.fragmented_gpus, o.pending);
    if (f.trace_mode == "replay")
      std::printf(" %10.1f %14.1f %10.1f %16.1f", o.mean_alloc, o.mean_frag, o.peak_alloc,
                  o.peak_frag);
    std::printf("\n");
  }
  if (outcomes.size() == 3) {
    // fill: at the end (the cluster saturated); replay: over time.
    const bool replay = f.trace_mode == "replay";
    double fgd = replay ? outcomes[2].mean_frag : outcomes[2].fragmented_gpus;
    double pack = replay ? outcomes[0].mean_frag : outcomes[0].fragmented_gpus;
    std::printf(
        "fragmentation-aware leaves fewer GPUs stranded than binpack%s: %s (%.1f vs %.1f)\n",
        replay ? " (mean over time)" : "", fgd < pack ? "ok" : "MISS", fgd, pack);
  }
  return 0;
}

int usage() {
  std::printf(
      "usage: bench_scheduler throughput [--nodes N] [--pods N] [--policy P] [--no-sync]\n"
      "       bench_scheduler trace [--pods-csv F] [--nodes-csv F] [--policy P|all] [--mode "
      "fill|replay]\n"
      "                             [--seconds S] [--from-day D] [--load X] [--no-sync]\n"
      "       bench_scheduler reclaim [--reclaims N] [--nodes N] [--grace S] [--no-sync]\n"
      "       bench_scheduler queues [--tenants N] [--nodes N] [--pods N] [--repeat N] "
      "[--policy P] [--no-sync]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  vkube::log::set_level(vkube::log::Level::warn);
  Flags f;
  if (argc < 2) return usage();
  f.mode = argv[1];
  bool nodes_given = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage());
      return argv[++i];
    };
    if (a == "--nodes") {
      f.nodes = std::stoi(next());
      nodes_given = true;
    } else if (a == "--pods")
      f.pods = std::stoi(next());
    else if (a == "--policy")
      f.policy = next();
    else if (a == "--no-sync")
      f.sync = false;
    else if (a == "--pods-csv")
      f.pods_csv = next();
    else if (a == "--nodes-csv")
      f.nodes_csv = next();
    else if (a == "--mode")
      f.trace_mode = next();
    else if (a == "--seconds")
      f.seconds = std::stod(next());
    else if (a == "--from-day")
      f.from_day = std::stod(next());
    else if (a == "--load")
      f.load = std::stod(next());
    else if (a == "--reclaims")
      f.reclaims = std::stoi(next());
    else if (a == "--grace")
      f.grace = std::stoi(next());
    else if (a == "--tenants")
      f.tenants = std::stoi(next());
    else if (a == "--repeat")
      f.repeat = std::stoi(next());
    else
      return usage();
  }
  if (f.mode == "throughput") {
    auto p = gpu::parse_policy(f.policy);
    if (!p.is_ok()) return usage();
    return run_throughput(f, *p);
  }
  if (f.mode == "trace") return run_traces(f);
  if (f.mode == "reclaim") {
    if (!nodes_given) f.nodes = 2;  // the 16-GPU pool
    return run_reclaim(f);
  }
  if (f.mode == "queues") {
    auto p = gpu::parse_policy(f.policy);
    if (!p.is_ok()) return usage();
    return run_queues(f, *p);
  }
  return usage();
}
