// bench_sharing's model: the Alibaba GPU trace v2023 turned into teams,
// arrivals and nodes (the plan), and a replay's samples and pod records turned
// into the comparison (the summary, CSV and SVG charts). Pure functions: the
// processes and clients are sharing_bench.cpp's; this part is unit-tested.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace vkube::bench::sharing {

// --- the trace ---

struct TracePod {
  std::string name;
  int64_t cpu_milli = 0, memory_mib = 0;
  int num_gpu = 0, gpu_milli = 0;  // gpu_milli: share of one GPU when num_gpu == 1
  int64_t created = 0, deleted = 0;  // trace seconds
};

struct TraceNode {
  std::string name, model;  // model as the trace writes it (G2, T4, ...)
  int gpus = 0;
  int64_t cpu_milli = 0, memory_mib = 0;
};

// Empty with `error` set when the file cannot be read or parsed.
std::vector<TracePod> load_trace_pods(const std::string& csv_path, std::string* error);
std::vector<TraceNode> load_trace_nodes(const std::string& csv_path, std::string* error);

// GPU thousandths a pod asks for: gpu_milli when 0 < gpu_milli < 1000 and
// num_gpu == 1, else 1000 * num_gpu (0 for CPU-only pods).
int64_t gpu_request_milli(const TracePod& p);

// --- the plan ---

struct Options {
  int teams = 4;            // 1..8
  double from_day = 130;    // the replayed window starts at this trace day
  double days = 2;          // and lasts this long
  double seconds = 300;     // wall seconds the window is compressed into
  double min_run_s = 0.1;   // shortest wall run time of a pod
};

struct Arrival {
  int team = 0;
  std::string name;      // the tenant pod's name (the trace pod's, lower case)
  double at_s = 0;       // wall offset from the replay's start
  double run_s = 0;      // wall seconds the pod runs once started (sim.vkube.io/duration)
  int num_gpu = 0;       // whole GPUs (nvidia.com/gpu) when gpu_share_milli == 0
  int gpu_share_milli = 0;  // 1..999: a share of one GPU (vkube.io/gpu-milli)
  int64_t cpu_milli = 0, memory_mib = 0;
  int64_t gpu_milli() const { return gpu_share_milli > 0 ? gpu_share_milli : 1000LL * num_gpu; }
};

struct PlannedNode {
  std::string name;   // e.g. "team-a-g2-0"
  std::string model;  // trace model code: "G2" or "T4"
  int gpus = 0;
  int64_t cpu_milli = 0, memory_mib = 0;
  int team = 0;       // the team owning it in the dedicated configuration
};

struct Plan {
  Options options;
  double scale = 1;                       // trace seconds per wall second
  std::vector<std::string> teams;         // "team-a", "team-b", ...
  std::vector<Arrival> arrivals;          // sorted by at_s
  std::vector<double> mean_demand_gpus;   // per team, time-averaged over the window
  std::vector<int64_t> deserved_milli;    // per team: its dedicated slice's GPUs
  std::vector<PlannedNode> nodes;         // every team's slice; the pool is all of them
  // Trace pods of the window left out because they fit no node shape the plan
  // uses (more GPUs, cores or memory than a G2 and a T4 node): no configuration
  // could ever run them, so they would only inflate demand. Trace order.
  std::vector<std::string> unplaceable;
  int64_t capacity_milli() const;
};

// Teams, arrivals, slices and nodes from the trace (see docs/gpu.md
// "The sharing proof" for the rules this implements).
Plan make_plan(const std::vector<TracePod>& pods, const std::vector<TraceNode>& nodes,
               const Options& options);

// `vkube host --node-config` YAML for the plan's nodes, each labelled
// vkube.io/team=<its team>.
std::string node_config_yaml(const Plan& plan);

// A few lines describing the plan: window, scale, pods, mean demand and
// deserved GPUs per team, the nodes.
void print_plan(std::FILE* out, const Plan& plan);

// --- a replay's record ---

struct Sample {
  double t = 0;  // wall seconds since the replay started
  int64_t capacity_milli = 0, allocated_milli = 0, fragmented_milli = 0;  // host /metrics
  std::vector<int64_t> team_allocated_milli;  // host /metrics, per team
  std::vector<int64_t> team_demand_milli;     // arrived and not finished (running + waiting)
  std::vector<int64_t> team_pending_milli;    // arrived, not running
  // The smallest request among the team's pods waiting longer than the grace
  // period (0: none): the guarantee is violated while allocated + this fits
  // within the team's deserved share.
  std::vector<int64_t> team_min_waiting_milli;
};

struct PodRecord {
  int team = 0;
  std::string name;
  int64_t gpu_milli = 0;
  double arrived = 0;   // wall s: when it was due (first attempt)
  double started = -1;  // first seen Running in the tenant; -1: never
  double finished = -1; // Succeeded (or preempted, see below); -1: not within the run
  bool preempted = false;  // evicted by a reclaim; its work runs again as a new record
};

struct RunResult {
  std::string config;  // "dedicated", "pooled-caps" or "fair-share"
  std::vector<Sample> samples;
  std::vector<PodRecord> pods;
  int preemptions = 0;
  int refused = 0;     // creates answered 403 (hard caps), retried later
  int errors = 0;      // any other failed call
  double wall_seconds = 0;  // the whole configuration: host start to teardown
};

struct Summary {
  std::string config;
  double mean_alloc_pct = 0;       // allocated / capacity, over the samples
  double demand_over_pct = 0;      // share of samples with total demand > capacity
  double mean_alloc_over_pct = 0;  // allocated / capacity while demand > capacity
  double mean_stranded_gpus = 0;   // fragmented_milli / 1000, mean
  std::vector<double> wait_p50_s, wait_p95_s;  // per team, wall seconds (started - arrived)
  std::vector<int> never_started;              // per team
  // Per team: the p95 counts a pod that never started at its wait so far (the
  // run's end - arrived), so the true p95 may be higher: print it as ">=".
  std::vector<bool> wait_p95_lower_bound;
  // Guarantee violations: team-time where a team has a pod waiting past the
  // grace, its allocation + that request fits within its deserved share, AND
  // other teams borrow (hold beyond their own deserved) at least that request:
  // GPUs it is owed are held by a borrower, which a reclaim should give back.
  double violation_pct = 0;        // all teams
  std::vector<double> team_violation_pct;
  // Short of deserved: the same without the borrower condition. Includes GPUs
  // lost to fragmentation, which no scheduler returns without moving pods.
  double short_of_deserved_pct = 0;  // all teams
  std::vector<double> team_short_of_deserved_pct;
  int preemptions = 0;
  double wall_seconds = 0;
};

Summary summarize(const RunResult& run, const Plan& plan);

// The comparison as a table (one line per configuration, its name first,
// then mean allocation), then per-team waits.
void print_table(std::FILE* out, const std::vector<Summary>& summaries, const Plan& plan);

// Writes into `dir` (which exists): summary.csv, teams.csv (per config and
// team: waits, violations), timeline-<config>.csv (the samples), and charts
// allocation-<config>.svg (per-team allocation stacked, capacity and demand
// lines, deserved shares) and comparison.svg. Returns the files written.
std::vector<std::string> write_outputs(const std::string& dir, const Plan& plan,
                                       const std::vector<RunResult>& runs,
                                       const std::vector<Summary>& summaries);

}  // namespace vkube::bench::sharing
