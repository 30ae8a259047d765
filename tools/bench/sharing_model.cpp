// bench_sharing's plan: the Alibaba GPU trace v2023 read from its CSV files,
// split into teams whose bursts are out of phase, compressed into wall
// seconds, and each team's dedicated slice of trace-shaped nodes.
#include "sharing_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace vkube::bench::sharing {

namespace {

constexpr double kDay = 86400;

// The trace's nodes a slice is made of, as the node list describes them
// (used when the list has none of a model).
const TraceNode kG2Default{"", "G2", 8, 96000, 393216};
const TraceNode kT4Default{"", "T4", 2, 104000, 524288};

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  for (size_t c; (c = line.find(',')) != std::string_view::npos; line.remove_prefix(c + 1))
    out.push_back(line.substr(0, c));
  out.push_back(line);
  return out;
}

bool to_int(std::string_view s, int64_t* v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size();
}

// Reads a CSV with a header into rows; `columns` are the names every row must
// have (their indexes come back in `index`). Returns false with `error` set.
bool read_csv(const std::string& path, const std::vector<std::string>& columns,
              std::vector<int>* index, std::vector<std::vector<std::string>>* rows,
              std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  std::string line;
  if (!std::getline(in, line)) {
    *error = path + ": empty file";
    return false;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::vector<std::string_view> header = fields(line);
  for (const std::string& c : columns) {
    auto it = std::find(header.begin(), header.end(), c);
    if (it == header.end()) {
      *error = path + ": no column \"" + c + "\"";
      return false;
    }
    index->push_back(static_cast<int>(it - header.begin()));
  }
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string_view> f = fields(line);
    if (f.size() != header.size()) {
      *error = path + ":" + std::to_string(line_no) + ": expected " +
               std::to_string(header.size()) + " fields";
      return false;
    }
    rows->emplace_back(f.begin(), f.end());
  }
  return true;
}

// Integers of `row` at `index`; an empty field is `empty_value`.
bool integers(const std::vector<std::string>& row, const std::vector<int>& index,
              const std::vector<size_t>& which, int64_t empty_value, std::vector<int64_t>* out) {
  for (size_t w : which) {
    const std::string& s = row[index[w]];
    int64_t v = empty_value;
    if (!s.empty() && !to_int(s, &v)) return false;
    out->push_back(v);
  }
  return true;
}

std::string team_name(int k) {
  return std::string("team-") + static_cast<char>('a' + k);
}

// FNV-1a, 32 bits, of the pod's name: bench_scheduler's split, so both
// benchmarks give a pod the same team.
uint32_t fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The first node of `model` with `gpus` GPUs in the list, else `fallback`.
TraceNode shape(const std::vector<TraceNode>& nodes, const TraceNode& fallback) {
  for (const TraceNode& n : nodes)
    if (n.model == fallback.model && n.gpus == fallback.gpus) return n;
  return fallback;
}

// Whether a pod asking for `milli` GPU thousandths fits an empty node of `s`.
bool fits(const TracePod& p, int64_t milli, const TraceNode& s) {
  const int64_t gpus = (milli + 999) / 1000;
  return gpus <= s.gpus && p.cpu_milli <= s.cpu_milli && p.memory_mib <= s.memory_mib;
}

}  // namespace

std::vector<TracePod> load_trace_pods(const std::string& csv_path, std::string* error) {
  const std::vector<std::string> columns = {"name",      "cpu_milli",     "memory_mib",   "num_gpu",
                                            "gpu_milli", "creation_time", "deletion_time"};
  std::vector<int> index;
  std::vector<std::vector<std::string>> rows;
  if (!read_csv(csv_path, columns, &index, &rows, error)) return {};
  std::vector<TracePod> pods;
  pods.reserve(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    std::vector<int64_t> v;
    // A pod never deleted within the trace has deleted = -1.
    if (!integers(rows[r], index, {1, 2, 3, 4, 5}, 0, &v) ||
        !integers(rows[r], index, {6}, -1, &v)) {
      *error = csv_path + ":" + std::to_string(r + 2) + ": a number field is not an integer";
      return {};
    }
    TracePod p;
    p.name = rows[r][index[0]];
    p.cpu_milli = v[0];
    p.memory_mib = v[1];
    p.num_gpu = static_cast<int>(v[2]);
    p.gpu_milli = static_cast<int>(v[3]);
    p.created = v[4];
    p.deleted = v[5];
    pods.push_back(std::move(p));
  }
  return pods;
}

std::vector<TraceNode> load_trace_nodes(const std::string& csv_path, std::string* error) {
  const std::vector<std::string> columns = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
  std::vector<int> index;
  std::vector<std::vector<std::string>> rows;
  if (!read_csv(csv_path, columns, &index, &rows, error)) return {};
  std::vector<TraceNode> nodes;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::vector<int64_t> v;
    if (!integers(rows[r], index, {1, 2, 3}, 0, &v)) {
      *error = csv_path + ":" + std::to_string(r + 2) + ": a number field is not an integer";
      return {};
    }
    nodes.push_back({rows[r][index[0]], rows[r][index[4]], static_cast<int>(v[2]), v[0], v[1]});
  }
  return nodes;
}

int64_t gpu_request_milli(const TracePod& p) {
  if (p.num_gpu <= 0) return 0;
  if (p.num_gpu == 1 && p.gpu_milli > 0 && p.gpu_milli < 1000) return p.gpu_milli;
  return 1000LL * p.num_gpu;
}

int64_t Plan::capacity_milli() const {
  int64_t total = 0;
  for (const PlannedNode& n : nodes) total += 1000LL * n.gpus;
  return total;
}

Plan make_plan(const std::vector<TracePod>& pods, const std::vector<TraceNode>& nodes,
               const Options& options) {
  Plan plan;
  plan.options = options;
  const int teams = std::clamp(options.teams, 1, 8);
  plan.options.teams = teams;
  const double start = options.from_day * kDay, window = options.days * kDay;
  const double end = start + window;
  for (int k = 0; k < teams; ++k) plan.teams.push_back(team_name(k));
  plan.mean_demand_gpus.assign(teams, 0);
  plan.deserved_milli.assign(teams, 0);
  if (!(options.seconds > 0) || !(options.days > 0)) return plan;  // nothing to replay
  plan.scale = window / options.seconds;

  const TraceNode g2 = shape(nodes, kG2Default), t4 = shape(nodes, kT4Default);
  std::vector<bool> wide_pod(teams, false);  // has a pod of more than 2 GPUs
  for (const TracePod& p : pods) {
    const int64_t milli = gpu_request_milli(p);
    if (milli <= 0) continue;
    const double created = static_cast<double>(p.created);
    const double deleted = p.deleted < 0 ? std::max(end, created) : static_cast<double>(p.deleted);
    const bool alive_at_start = created < start && deleted > start;
    if (!alive_at_start && (created < start || created >= end)) continue;
    if (!fits(p, milli, g2) && !fits(p, milli, t4)) {
      plan.unplaceable.push_back(p.name);
      continue;
    }
    Arrival a;
    a.team = static_cast<int>(fnv1a(p.name) % static_cast<uint32_t>(teams));
    a.name = lower(p.name);
    if (!alive_at_start) {
      // Shift team k by k/teams of the window, wrapping around its end.
      double offset = created - start + a.team * window / teams;
      if (offset >= window) offset -= window;
      a.at_s = std::min(offset / plan.scale, std::nextafter(options.seconds, 0.0));
    }
    const double lifetime = deleted - std::max(created, start);
    a.run_s = std::max(options.min_run_s, lifetime / plan.scale);
    if (milli < 1000) {
      a.gpu_share_milli = static_cast<int>(milli);
    } else {
      a.num_gpu = static_cast<int>(milli / 1000);
    }
    a.cpu_milli = p.cpu_milli;
    a.memory_mib = p.memory_mib;
    if (a.num_gpu > 2) wide_pod[a.team] = true;
    plan.arrivals.push_back(std::move(a));
  }
  std::sort(plan.arrivals.begin(), plan.arrivals.end(), [](const Arrival& x, const Arrival& y) {
    return x.at_s != y.at_s ? x.at_s < y.at_s : x.name < y.name;
  });

  // Time-averaged demand over the replay as it will run: a pod asks for its
  // GPUs from its arrival until its run ends or the replay does.
  for (const Arrival& a : plan.arrivals) {
    const double held = std::min(a.at_s + a.run_s, options.seconds) - a.at_s;
    plan.mean_demand_gpus[a.team] += static_cast<double>(a.gpu_milli()) / 1000 * held;
  }
  for (int k = 0; k < teams; ++k) {
    plan.mean_demand_gpus[k] /= options.seconds;
    const int64_t want = static_cast<int64_t>(std::ceil(plan.mean_demand_gpus[k] - 1e-9));
    int64_t big = want / g2.gpus, small = (want % g2.gpus + t4.gpus - 1) / t4.gpus;
    // A pod wider than a T4 node could never run on the team's own slice.
    if (wide_pod[k] && big == 0) big = 1, small = 0;
    int64_t gpus = 0;
    for (int64_t i = 0; i < big + small; ++i) {
      const TraceNode& s = i < big ? g2 : t4;
      const int64_t nth = i < big ? i : i - big;
      std::string model_lower = lower(s.model);
      plan.nodes.push_back({plan.teams[k] + "-" + model_lower + "-" + std::to_string(nth), s.model,
                            s.gpus, s.cpu_milli, s.memory_mib, k});
      gpus += s.gpus;
    }
    plan.deserved_milli[k] = 1000 * gpus;
  }
  return plan;
}

std::string node_config_yaml(const Plan& plan) {
  std::ostringstream y;
  y << "# bench_sharing: each team's dedicated slice (label vkube.io/team); the pool is all of "
       "them.\nnodes:\n";
  for (const PlannedNode& n : plan.nodes) {
    y << "- name: " << n.name << "\n"
      << "  model: " << n.model << "\n"
      << "  gpus: " << n.gpus << "\n"
      << "  cpu: " << n.cpu_milli << "m\n"
      << "  memory: " << n.memory_mib
      << "Mi\n"
      // Fractional pods are small: room for many per node, as the trace's nodes had.
      << "  pods: 256\n"
      << "  sharing: fraction\n"
      << "  labels:\n"
      << "    vkube.io/team: " << plan.teams[n.team] << "\n";
  }
  return y.str();
}

void print_plan(std::FILE* out, const Plan& plan) {
  const Options& o = plan.options;
  std::fprintf(out,
               "plan: trace days %.2f..%.2f in %.0f s (1 wall s = %.1f trace min), %zu GPU pods, "
               "%d teams (FNV-1a of the pod name, team k shifted by k/%d of the window)\n",
               o.from_day, o.from_day + o.days, o.seconds, plan.scale / 60, plan.arrivals.size(),
               o.teams, o.teams);
  std::vector<int> count(plan.teams.size(), 0), at_start(plan.teams.size(), 0);
  for (const Arrival& a : plan.arrivals) {
    ++count[a.team];
    if (a.at_s == 0) ++at_start[a.team];
  }
  for (size_t k = 0; k < plan.teams.size(); ++k) {
    std::map<std::string, int> by_model;
    for (const PlannedNode& n : plan.nodes)
      if (n.team == static_cast<int>(k)) ++by_model[n.model];
    std::string nodes;
    for (const auto& [model, n] : by_model)
      nodes += (nodes.empty() ? "" : " + ") + std::to_string(n) + " " + model;
    std::fprintf(
        out, "  %-7s %4d pods (%d at start)  mean demand %6.2f GPUs  deserved %3lld GPUs (%s)\n",
        plan.teams[k].c_str(), count[k], at_start[k], plan.mean_demand_gpus[k],
        static_cast<long long>(plan.deserved_milli[k] / 1000),
        nodes.empty() ? "no nodes" : nodes.c_str());
  }
  std::fprintf(out, "  pool: %zu nodes, %lld GPUs\n", plan.nodes.size(),
               static_cast<long long>(plan.capacity_milli() / 1000));
  if (!plan.unplaceable.empty()) {
    // The first few names, enough to look them up in the trace.
    constexpr size_t kNamed = 5;
    std::string names;
    for (size_t i = 0; i < plan.unplaceable.size() && i < kNamed; ++i)
      names += (i ? ", " : "") + plan.unplaceable[i];
    if (plan.unplaceable.size() > kNamed) names += ", ...";
    std::fprintf(
        out,
        "  left out: %zu pod(s) that fit no node (more GPUs, cores or memory than G2 and T4): %s\n",
        plan.unplaceable.size(), names.c_str());
  }
}

}  // namespace vkube::bench::sharing
