// bench_sharing's report: a replay's samples and pod records turned into the
// comparison's figures, the table on stdout, and the CSV files and charts.
#include <algorithm>
#include <cmath>
#include <fstream>

#include "sharing_charts.h"
#include "sharing_model.h"

namespace vkube::bench::sharing {

namespace {

// Fair-share's p95 may exceed dedicated's by this much and still count as
// no worse: the sampling period and the syncer's round trip, control-plane
// noise next to the trace's waits.
constexpr double kP95SlackSeconds = 0.25;
// "≥" in UTF-8: 3 bytes, one column on a terminal.
constexpr const char* kAtLeast = "\u2265";
constexpr double kMaxWallSeconds = 600;

int64_t at(const std::vector<int64_t>& v, size_t k) {
  return k < v.size() ? v[k] : 0;
}

// A pod's wait; `censored`: it never started, so this is its wait so far.
struct Wait {
  double s = 0;
  bool censored = false;
};

// Nearest-rank percentile of `v` (sorted here); 0 for none. `lower_bound`:
// a censored wait lies at or below the rank, so the true percentile (its pod
// waiting on) may be higher. Ties put censored waits last: a censored pod
// above the rank cannot change it.
double percentile(std::vector<Wait> v, double p, bool* lower_bound) {
  *lower_bound = false;
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end(), [](const Wait& x, const Wait& y) {
    return x.s != y.s ? x.s < y.s : x.censored < y.censored;
  });
  size_t rank = static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  for (size_t i = 0; i < rank; ++i) *lower_bound = *lower_bound || v[i].censored;
  return v[rank - 1].s;
}

const Summary* find(const std::vector<Summary>& all, const std::string& config) {
  for (const Summary& s : all)
    if (s.config == config) return &s;
  return nullptr;
}

double trace_min(const Plan& plan, double wall_s) {
  return wall_s * plan.scale / 60;
}

bool p95_lower_bound(const Summary& s, size_t k) {
  return k < s.wait_p95_lower_bound.size() && s.wait_p95_lower_bound[k];
}

// Team k's p95 in wall seconds, "≥" first when it is a lower bound.
std::string p95_text(const Summary& s, size_t k) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%.2f s", p95_lower_bound(s, k) ? kAtLeast : "",
                k < s.wait_p95_s.size() ? s.wait_p95_s[k] : 0);
  return buf;
}

}  // namespace

int64_t sample_capacity(const Sample& s, const Plan& plan) {
  return s.capacity_milli > 0 ? s.capacity_milli : plan.capacity_milli();
}

Summary summarize(const RunResult& run, const Plan& plan) {
  Summary out;
  out.config = run.config;
  out.preemptions = run.preemptions;
  out.wall_seconds = run.wall_seconds;
  const size_t teams = plan.teams.size();
  const size_t n = run.samples.size();
  double alloc = 0, alloc_over = 0, stranded = 0;
  size_t over = 0;
  std::vector<size_t> violated(teams, 0), short_of(teams, 0);
  for (const Sample& s : run.samples) {
    const double cap = static_cast<double>(sample_capacity(s, plan));
    int64_t demand = 0, borrowed_all = 0;
    std::vector<int64_t> borrowed(teams, 0);  // beyond the team's deserved share
    for (size_t k = 0; k < teams; ++k) {
      borrowed[k] =
          std::max<int64_t>(0, at(s.team_allocated_milli, k) - at(plan.deserved_milli, k));
      borrowed_all += borrowed[k];
    }
    for (size_t k = 0; k < teams; ++k) {
      demand += at(s.team_demand_milli, k);
      // Short of deserved: a pod waits past the grace period although it
      // would fit within the team's share (free GPUs may be fragments).
      const int64_t waiting = at(s.team_min_waiting_milli, k);
      if (waiting <= 0 || at(s.team_allocated_milli, k) + waiting > at(plan.deserved_milli, k))
        continue;
      ++short_of[k];
      // A violation when borrowers hold enough of the pool to make room:
      // what reclaim exists for.
      if (borrowed_all - borrowed[k] >= waiting) ++violated[k];
    }
    const double pct = cap > 0 ? 100 * static_cast<double>(s.allocated_milli) / cap : 0;
    alloc += pct;
    if (static_cast<double>(demand) > cap) ++over, alloc_over += pct;
    stranded += static_cast<double>(s.fragmented_milli) / 1000;
  }
  if (n > 0) {
    out.mean_alloc_pct = alloc / static_cast<double>(n);
    out.demand_over_pct = 100 * static_cast<double>(over) / static_cast<double>(n);
    out.mean_stranded_gpus = stranded / static_cast<double>(n);
  }
  if (over > 0) out.mean_alloc_over_pct = alloc_over / static_cast<double>(over);
  // Share of team-time counted in `per_team`: per team, and of all teams.
  auto shares = [&](const std::vector<size_t>& per_team, std::vector<double>* team_pct) {
    size_t all = 0;
    for (size_t k = 0; k < teams; ++k) {
      all += per_team[k];
      team_pct->push_back(n > 0 ? 100 * static_cast<double>(per_team[k]) / static_cast<double>(n)
                                : 0);
    }
    return n > 0 && teams > 0 ? 100 * static_cast<double>(all) / static_cast<double>(n * teams) : 0;
  };
  out.violation_pct = shares(violated, &out.team_violation_pct);
  out.short_of_deserved_pct = shares(short_of, &out.team_short_of_deserved_pct);

  // A pod that never started waited at least until the replay's end.
  double end = n > 0 ? run.samples.back().t : 0;
  for (const PodRecord& p : run.pods) end = std::max({end, p.arrived, p.started, p.finished});
  std::vector<std::vector<Wait>> waits(teams);
  out.never_started.assign(teams, 0);
  for (const PodRecord& p : run.pods) {
    if (p.team < 0 || static_cast<size_t>(p.team) >= teams) continue;
    if (p.started < 0) ++out.never_started[p.team];
    waits[p.team].push_back(
        {std::max(0.0, (p.started >= 0 ? p.started : end) - p.arrived), p.started < 0});
  }
  for (size_t k = 0; k < teams; ++k) {
    bool lower_bound = false;
    out.wait_p50_s.push_back(percentile(waits[k], 50, &lower_bound));
    out.wait_p95_s.push_back(percentile(waits[k], 95, &lower_bound));
    out.wait_p95_lower_bound.push_back(lower_bound);
  }
  return out;
}

namespace {

void print_targets(std::FILE* out, const std::vector<Summary>& all, const Plan& plan) {
  const Summary* fair = find(all, "fair-share");
  const Summary* dedicated = find(all, "dedicated");
  auto line = [&](bool evaluated, bool met, const char* what, const std::string& detail) {
    std::fprintf(out, "target %-58s %s (%s)\n", what,
                 !evaluated ? "n/a"
                 : met      ? "met"
                            : "MISS",
                 detail.c_str());
  };
  char buf[200];
  if (!fair) {
    std::fprintf(out, "targets: n/a (no fair-share run)\n");
  } else {
    const bool over = fair->demand_over_pct > 0;
    std::snprintf(buf, sizeof buf, "%.1f %% over %.0f %% of the run", fair->mean_alloc_over_pct,
                  fair->demand_over_pct);
    line(over, fair->mean_alloc_over_pct >= 90,
         "fair-share >= 90 % allocated while demand > supply",
         over ? buf : "demand never exceeded supply");
    if (dedicated) {
      std::snprintf(buf, sizeof buf, "%.1f %% vs %.1f %%", fair->mean_alloc_pct,
                    dedicated->mean_alloc_pct);
      line(true, fair->mean_alloc_pct > dedicated->mean_alloc_pct,
           "fair-share beats dedicated on mean allocation", buf);
      // Met when no team waits longer under fair-share beyond the slack; the
      // detail names the closest team, or every team's pair on a miss.
      bool all_beat = true;
      size_t worst = 0;
      double worst_gap = -1e300;
      std::string pairs;
      for (size_t k = 0; k < plan.teams.size(); ++k) {
        const double f = at_or_zero(fair->wait_p95_s, k), d = at_or_zero(dedicated->wait_p95_s, k);
        all_beat = all_beat && f <= d + kP95SlackSeconds;
        if (f - d > worst_gap) worst_gap = f - d, worst = k;
        pairs += (k ? ", " : "") + plan.teams[k] + " " + p95_text(*fair, k) + " vs " +
                 p95_text(*dedicated, k);
      }
      const std::string detail = plan.teams.empty() ? "no teams"
                                 : all_beat         ? "closest: " + plan.teams[worst] + " " +
                                                  p95_text(*fair, worst) + " vs " +
                                                  p95_text(*dedicated, worst)
                                            : "fair-share vs dedicated: " + pairs;
      line(!plan.teams.empty(), all_beat, "fair-share p95 wait <= dedicated's + 0.25 s, every team",
           detail);
    } else {
      line(false, false, "fair-share beats dedicated", "no dedicated run");
    }
    std::snprintf(buf, sizeof buf, "%.2f %% of team-time; short of deserved %.2f %%",
                  fair->violation_pct, fair->short_of_deserved_pct);
    line(true, fair->violation_pct < 1, "fair-share guarantee violations < 1 %", buf);
  }
  double slowest = 0;
  for (const Summary& s : all) slowest = std::max(slowest, s.wall_seconds);
  std::snprintf(buf, sizeof buf, "slowest %.0f s", slowest);
  line(!all.empty(), slowest < kMaxWallSeconds, "each configuration < 600 s", buf);
}

}  // namespace

double at_or_zero(const std::vector<double>& v, size_t k) {
  return k < v.size() ? v[k] : 0;
}

void print_table(std::FILE* out, const std::vector<Summary>& summaries, const Plan& plan) {
  std::fprintf(out, "%-12s %10s %12s %9s %10s %9s %11s %9s %8s\n", "config", "mean alloc",
               "alloc@over", "over", "violations", "short", "preemptions", "stranded", "wall s");
  for (const Summary& s : summaries)
    std::fprintf(out, "%-12s %8.1f %% %10.1f %% %7.1f %% %8.2f %% %7.2f %% %11d %9.2f %8.1f\n",
                 s.config.c_str(), s.mean_alloc_pct, s.mean_alloc_over_pct, s.demand_over_pct,
                 s.violation_pct, s.short_of_deserved_pct, s.preemptions, s.mean_stranded_gpus,
                 s.wall_seconds);
  std::fprintf(out,
               "(alloc@over: mean allocation while demand > capacity, which held for `over` of "
               "the run; stranded: GPUs lost to fragmentation;\n short: team-time short of "
               "deserved, a pod waiting > grace that fits the team's share; violations: the same "
               "while other teams borrow at least that request)\n\n");
  std::fprintf(out, "wait p50 / p95 per team, wall s [trace min]\n%-8s", "team");
  for (const Summary& s : summaries) std::fprintf(out, " %-30s", s.config.c_str());
  std::fprintf(out, "\n");
  bool any_bound = false;
  for (size_t k = 0; k < plan.teams.size(); ++k) {
    std::fprintf(out, "%-8s", plan.teams[k].c_str());
    for (const Summary& s : summaries) {
      const double p50 = at_or_zero(s.wait_p50_s, k), p95 = at_or_zero(s.wait_p95_s, k);
      const bool bound = p95_lower_bound(s, k);
      any_bound = any_bound || bound;
      const char* at_least = bound ? kAtLeast : "";
      char cell[80];
      std::snprintf(cell, sizeof cell, "%.2f / %s%.2f [%.0f / %s%.0f]", p50, at_least, p95,
                    trace_min(plan, p50), at_least, trace_min(plan, p95));
      // Each "≥" is 3 bytes in one column.
      std::fprintf(out, " %-*s", bound ? 34 : 30, cell);
    }
    std::fprintf(out, "\n");
  }
  if (any_bound)
    std::fprintf(out,
                 "(%s: a pod that never started counts with its wait until the run's end, "
                 "so the p95 may be higher)\n",
                 kAtLeast);
  std::fprintf(out, "\n");
  print_targets(out, summaries, plan);
}

namespace {

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  return static_cast<bool>(f);
}

std::string num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string summary_csv(const std::vector<RunResult>& runs, const std::vector<Summary>& all) {
  std::string csv =
      "config,mean_alloc_pct,demand_over_pct,mean_alloc_over_pct,violation_pct,preemptions,"
      "mean_stranded_gpus,refused,errors,wall_seconds,short_of_deserved_pct\n";
  for (const Summary& s : all) {
    int refused = 0, errors = 0;
    for (const RunResult& r : runs)
      if (r.config == s.config) refused = r.refused, errors = r.errors;
    csv += s.config + "," + num(s.mean_alloc_pct, 2) + "," + num(s.demand_over_pct, 2) + "," +
           num(s.mean_alloc_over_pct, 2) + "," + num(s.violation_pct, 3) + "," +
           std::to_string(s.preemptions) + "," + num(s.mean_stranded_gpus, 3) + "," +
           std::to_string(refused) + "," + std::to_string(errors) + "," + num(s.wall_seconds, 1) +
           "," + num(s.short_of_deserved_pct, 3) + "\n";
  }
  return csv;
}

std::string teams_csv(const Plan& plan, const std::vector<RunResult>& runs,
                      const std::vector<Summary>& all) {
  std::string csv =
      "config,team,deserved_gpus,mean_demand_gpus,mean_allocated_gpus,pods,never_started,"
      "wait_p50_s,wait_p95_s,wait_p50_trace_min,wait_p95_trace_min,violation_pct,"
      "short_of_deserved_pct,wait_p95_lower_bound\n";
  for (const Summary& s : all) {
    const RunResult* run = nullptr;
    for (const RunResult& r : runs)
      if (r.config == s.config) run = &r;
    for (size_t k = 0; k < plan.teams.size(); ++k) {
      double allocated = 0;
      int pods = 0;
      if (run) {
        for (const Sample& x : run->samples) allocated += at(x.team_allocated_milli, k);
        if (!run->samples.empty()) allocated /= 1000.0 * static_cast<double>(run->samples.size());
        for (const PodRecord& p : run->pods) pods += p.team == static_cast<int>(k);
      }
      const double p50 = at_or_zero(s.wait_p50_s, k), p95 = at_or_zero(s.wait_p95_s, k);
      csv += s.config + "," + plan.teams[k] + "," + num(at(plan.deserved_milli, k) / 1000.0, 0) +
             "," + num(at_or_zero(plan.mean_demand_gpus, k), 3) + "," + num(allocated, 3) + "," +
             std::to_string(pods) + "," +
             std::to_string(k < s.never_started.size() ? s.never_started[k] : 0) + "," +
             num(p50, 3) + "," + num(p95, 3) + "," + num(trace_min(plan, p50), 1) + "," +
             num(trace_min(plan, p95), 1) + "," + num(at_or_zero(s.team_violation_pct, k), 3) +
             "," + num(at_or_zero(s.team_short_of_deserved_pct, k), 3) + "," +
             (p95_lower_bound(s, k) ? "1" : "0") + "\n";
    }
  }
  return csv;
}

std::string timeline_csv(const Plan& plan, const RunResult& run) {
  std::string csv =
      "t_s,trace_day,capacity_milli,allocated_milli,fragmented_milli,demand_milli,pending_milli";
  for (const std::string& team : plan.teams)
    csv += "," + team + "_allocated_milli," + team + "_demand_milli," + team + "_pending_milli," +
           team + "_min_waiting_milli";
  csv += "\n";
  for (const Sample& s : run.samples) {
    int64_t demand = 0, pending = 0;
    for (size_t k = 0; k < plan.teams.size(); ++k)
      demand += at(s.team_demand_milli, k), pending += at(s.team_pending_milli, k);
    csv += num(s.t, 3) + "," + num(plan.options.from_day + s.t * plan.scale / 86400, 5) + "," +
           std::to_string(sample_capacity(s, plan)) + "," + std::to_string(s.allocated_milli) +
           "," + std::to_string(s.fragmented_milli) + "," + std::to_string(demand) + "," +
           std::to_string(pending);
    for (size_t k = 0; k < plan.teams.size(); ++k)
      csv += "," + std::to_string(at(s.team_allocated_milli, k)) + "," +
             std::to_string(at(s.team_demand_milli, k)) + "," +
             std::to_string(at(s.team_pending_milli, k)) + "," +
             std::to_string(at(s.team_min_waiting_milli, k));
    csv += "\n";
  }
  return csv;
}

}  // namespace

std::vector<std::string> write_outputs(const std::string& dir, const Plan& plan,
                                       const std::vector<RunResult>& runs,
                                       const std::vector<Summary>& summaries) {
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const std::string& text) {
    const std::string path = dir + "/" + name;
    if (write_file(path, text)) written.push_back(path);
  };
  put("summary.csv", summary_csv(runs, summaries));
  put("teams.csv", teams_csv(plan, runs, summaries));
  for (const RunResult& run : runs) {
    const Summary* s = find(summaries, run.config);
    const Summary own = s ? *s : summarize(run, plan);
    put("timeline-" + run.config + ".csv", timeline_csv(plan, run));
    put("allocation-" + run.config + ".svg", allocation_svg(plan, run, own));
  }
  put("comparison.svg", comparison_svg(plan, summaries));
  return written;
}

}  // namespace vkube::bench::sharing
