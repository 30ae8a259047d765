// bench_sharing's report on hand-made replays: allocation while demand
// exceeds supply, wait percentiles, what counts as a guarantee violation, the
// table's lines and targets, and the CSV and SVG files.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sharing_model.h"

namespace vkube::bench::sharing {
namespace {

// Two teams deserving 4 GPUs each: a pool of 8.
Plan two_teams() {
  Plan plan;
  plan.options.seconds = 4;
  plan.options.days = 1;
  plan.scale = 86400.0 / 4;
  plan.teams = {"team-a", "team-b"};
  plan.mean_demand_gpus = {3.5, 3.5};
  plan.deserved_milli = {4000, 4000};
  plan.nodes = {{"team-a-g2-0", "G2", 4, 96000, 393216, 0},
                {"team-b-g2-0", "G2", 4, 96000, 393216, 1}};
  return plan;
}

Sample sample(double t, int64_t capacity, int64_t allocated, int64_t fragmented,
              std::vector<int64_t> team_allocated, std::vector<int64_t> demand,
              std::vector<int64_t> min_waiting) {
  Sample s;
  s.t = t;
  s.capacity_milli = capacity;
  s.allocated_milli = allocated;
  s.fragmented_milli = fragmented;
  s.team_allocated_milli = std::move(team_allocated);
  s.team_demand_milli = demand;
  s.team_pending_milli = demand;
  s.team_min_waiting_milli = std::move(min_waiting);
  return s;
}

RunResult run_of(const std::string& config) {
  RunResult run;
  run.config = config;
  run.samples = {
      // Demand 4 of 8: half allocated.
      sample(0, 8000, 4000, 0, {2000, 2000}, {2000, 2000}, {0, 0}),
      // Demand 10 of 8, all allocated. team-a borrows (5 of its 4): its
      // waiting 1-GPU pod would not fit its share. team-b holds 3: its 1-GPU
      // pod fits exactly (3 + 1 = 4) and team-a borrows 1: a violation.
      sample(1, 8000, 8000, 1000, {5000, 3000}, {6000, 4000}, {1000, 1000}),
      // Demand 10 of 8, 6 allocated: team-b holds 2 and waits for 1, short of
      // deserved; but no one borrows (the free GPUs are fragments): no violation.
      sample(2, 8000, 6000, 500, {4000, 2000}, {6000, 4000}, {0, 1000}),
      // No capacity read from /metrics: the plan's 8 count. team-b waits
      // for 5 GPUs, more than its whole share: no violation.
      sample(3, 0, 2000, 500, {2000, 0}, {2000, 5000}, {0, 5000}),
  };
  for (int i = 0; i < 20; ++i)
    run.pods.push_back({0, "a" + std::to_string(i), 1000, 0, double(i), 30, false});
  run.pods.push_back({1, "b0", 500, 0, 0.5, 2, false});
  run.pods.push_back({1, "b1", 5000, 1, -1, -1, false});  // never started: waits until t = 30
  run.preemptions = 2;
  run.wall_seconds = 5;
  return run;
}

TEST_CASE("summary: allocation, over-demand, stranded GPUs, waits, violations", "[sharing-model]") {
  const Plan plan = two_teams();
  const Summary s = summarize(run_of("fair-share"), plan);
  CHECK(s.config == "fair-share");
  CHECK(s.mean_alloc_pct == Approx((50 + 100 + 75 + 25) / 4.0));
  CHECK(s.demand_over_pct == Approx(50));
  CHECK(s.mean_alloc_over_pct == Approx(87.5));
  CHECK(s.mean_stranded_gpus == Approx(0.5));
  // team-a waited 0..19 s: nearest rank p50 = 9, p95 = 18.
  CHECK(s.wait_p50_s[0] == Approx(9));
  CHECK(s.wait_p95_s[0] == Approx(18));
  // team-b: 0.5 s, and 29 s for the pod that never started: from its arrival
  // at 1 to the run's last event (team-a's pods finish at 30).
  CHECK(s.wait_p50_s[1] == Approx(0.5));
  CHECK(s.wait_p95_s[1] == Approx(29));
  CHECK(s.never_started == std::vector<int>{0, 1});
  // Only the never-started pod makes a p95 a lower bound: team-b's.
  CHECK(s.wait_p95_lower_bound == std::vector<bool>{false, true});
  // team-b is short of deserved in 2 of 8 team-samples; a violation only at
  // t = 1, where team-a borrows the GPU team-b waits for.
  CHECK(s.short_of_deserved_pct == Approx(25));
  CHECK(s.team_short_of_deserved_pct == std::vector<double>{0, 50});
  CHECK(s.violation_pct == Approx(12.5));
  CHECK(s.team_violation_pct[0] == Approx(0));
  CHECK(s.team_violation_pct[1] == Approx(25));
  CHECK(s.preemptions == 2);
  CHECK(s.wall_seconds == 5);
}

TEST_CASE("guarantee violations need a borrower holding what the team waits for",
          "[sharing-model]") {
  Plan plan = two_teams();
  plan.teams.push_back("team-c");
  plan.deserved_milli.push_back(4000);
  RunResult run;
  run.config = "fair-share";
  run.samples = {
      // team-a holds 1 of its 4 and waits for 2: the others hold exactly
      // their shares (free GPUs are fragments): short, not a violation.
      sample(0, 12000, 9000, 3000, {1000, 4000, 4000}, {3000, 4000, 4000}, {2000, 0, 0}),
      // team-b and team-c borrow 1 GPU each, 2 in all: enough to make room
      // for team-a's 2-GPU pod: both figures.
      sample(1, 12000, 11000, 0, {1000, 5000, 5000}, {3000, 5000, 5000}, {2000, 0, 0}),
      // Only team-c borrows, 1 GPU: not enough for 2 GPUs: short only.
      sample(2, 12000, 9000, 0, {1000, 4000, 5000}, {3000, 4000, 5000}, {2000, 0, 0}),
      // team-a borrows itself (5 of 4) and waits for 1: 5 + 1 > 4, neither.
      sample(3, 12000, 9000, 0, {5000, 2000, 2000}, {6000, 2000, 2000}, {1000, 0, 0}),
  };
  const Summary s = summarize(run, plan);
  CHECK(s.team_short_of_deserved_pct == std::vector<double>{75, 0, 0});
  CHECK(s.team_violation_pct == std::vector<double>{25, 0, 0});
  CHECK(s.short_of_deserved_pct == Approx(25));
  CHECK(s.violation_pct == Approx(100.0 / 12));
}

TEST_CASE("a pod that never started counts at its wait so far; p95 then a lower bound",
          "[sharing-model]") {
  const Plan plan = two_teams();
  RunResult run;
  run.config = "fair-share";
  run.samples = {sample(40, 8000, 0, 0, {0, 0}, {0, 0}, {0, 0})};
  // team-a: 20 pods waited 0..19 s, one arrived at 0 and never started: 40 s
  // by the run's end, above the p95's rank (the 20th of 21): p95 = 19, exact.
  for (int i = 0; i < 20; ++i)
    run.pods.push_back({0, "a" + std::to_string(i), 1000, 0, double(i), 30, false});
  run.pods.push_back({0, "a-starved", 1000, 0, -1, -1, false});
  // team-b: 20 pods waited 1 s; one arrived at 39.5 and never started: its
  // 0.5 s so far lies below the rank, and it may wait on: p95 >= 1.
  for (int i = 0; i < 20; ++i)
    run.pods.push_back({1, "b" + std::to_string(i), 1000, 0, 1, 30, false});
  run.pods.push_back({1, "b-late", 1000, 39.5, -1, -1, false});
  const Summary s = summarize(run, plan);
  CHECK(s.never_started == std::vector<int>{1, 1});
  CHECK(s.wait_p95_s[0] == Approx(19));
  CHECK(s.wait_p95_s[1] == Approx(1));
  CHECK(s.wait_p95_lower_bound == std::vector<bool>{false, true});
  // With 10 starved pods team-a's p95 is one of theirs: 40 s, at least.
  for (int i = 0; i < 9; ++i)
    run.pods.push_back({0, "a-starved" + std::to_string(i), 1000, 0, -1, -1, false});
  const Summary more = summarize(run, plan);
  CHECK(more.wait_p95_s[0] == Approx(40));
  CHECK(more.wait_p95_lower_bound[0]);
}

std::string print(const std::vector<Summary>& all, const Plan& plan) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  print_table(f, all, plan);
  std::fclose(f);
  std::string out(buf, len);
  free(buf);
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string line_starting(const std::string& text, const std::string& prefix) {
  for (const std::string& l : lines_of(text))
    if (l.rfind(prefix, 0) == 0) return l;
  return "";
}

TEST_CASE("table: a line per configuration, per-team waits, the targets", "[sharing-model]") {
  const Plan plan = two_teams();
  Summary dedicated = summarize(run_of("dedicated"), plan);
  Summary caps = summarize(run_of("pooled-caps"), plan);
  Summary fair = summarize(run_of("fair-share"), plan);
  dedicated.mean_alloc_pct = 31.5;
  fair.mean_alloc_pct = 72.4;
  fair.mean_alloc_over_pct = 93;
  fair.violation_pct = 0.5;
  fair.wait_p95_s = {1, 1};
  dedicated.wait_p95_s = {4, 0.1};  // team-b waited less with its own slice
  caps.wall_seconds = 700;
  const std::string out = print({dedicated, caps, fair}, plan);
  INFO(out);
  CHECK(line_starting(out, "dedicated ").find("31.5 %") != std::string::npos);
  CHECK(line_starting(out, "fair-share ").find("72.4 %") != std::string::npos);
  CHECK(line_starting(out, "fair-share ").find("93.0 %") != std::string::npos);
  CHECK(line_starting(out, "pooled-caps ").find("700.0") != std::string::npos);
  // Waits in wall seconds and trace minutes (1 s = 360 trace min here).
  CHECK(line_starting(out, "team-a ").find("9.00 / 4.00 [3240 / 1440]") != std::string::npos);
  auto target = [&](const std::string& what) {
    for (const std::string& l : lines_of(out))
      if (l.rfind("target", 0) == 0 && l.find(what) != std::string::npos) return l;
    return std::string();
  };
  CHECK(target(">= 90 %").find(" met ") != std::string::npos);
  CHECK(target("mean allocation").find(" met ") != std::string::npos);
  // A miss names every team's pair: fair-share's p95 first.
  CHECK(target("p95").find(" MISS ") != std::string::npos);
  CHECK(target("p95").find("team-a 1.00 s vs 4.00 s") != std::string::npos);
  CHECK(target("p95").find("team-b ") != std::string::npos);
  CHECK(target("violations").find(" met ") != std::string::npos);
  CHECK(target("violations").find("short of deserved 25.00 %") != std::string::npos);
  CHECK(target("600 s").find(" MISS ") != std::string::npos);
  // team-b's p95 counts its never-started pod: a lower bound.
  CHECK(line_starting(out, "team-b ").find("\u2265") != std::string::npos);
  CHECK(line_starting(out, "team-a ").find("\u2265") == std::string::npos);
  CHECK(out.find("short") != std::string::npos);

  // Within 0.25 s of dedicated's p95 is no worse (sampling and round trip).
  fair.wait_p95_s = {4.2, 0.3};
  dedicated.wait_p95_s = {4, 0.1};
  const std::string close = print({dedicated, caps, fair}, plan);
  std::string p95_line;
  for (const std::string& l : lines_of(close))
    if (l.rfind("target", 0) == 0 && l.find("p95") != std::string::npos) p95_line = l;
  INFO(p95_line);
  CHECK(p95_line.find(" met ") != std::string::npos);
  fair.wait_p95_s = {4.26, 0.3};
  const std::string over = print({dedicated, caps, fair}, plan);
  CHECK(over.find(" MISS (fair-share vs dedicated: team-a 4.26 s vs 4.00 s") != std::string::npos);
}

// A small check that `xml` is well formed: tags nest and close, attribute
// values are quoted, and text has no bare '<' or '&'.
bool well_formed(const std::string& xml, std::string* why) {
  std::vector<std::string> open;
  int roots = 0;
  for (size_t i = 0; i < xml.size();) {
    if (xml[i] == '&') {
      size_t semi = xml.find(';', i);
      std::string entity = semi == std::string::npos ? "" : xml.substr(i, semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;")
        return *why = "bare & at " + std::to_string(i), false;
      i = semi + 1;
      continue;
    }
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    if (xml.compare(i, 2, "<?") == 0) {
      i = xml.find("?>", i) + 2;
      continue;
    }
    const bool closing = xml.compare(i, 2, "</") == 0;
    size_t j = i + (closing ? 2 : 1);
    size_t name_end = xml.find_first_of(" \n/>", j);
    const std::string name = xml.substr(j, name_end - j);
    bool in_quote = false;
    for (j = name_end; j < xml.size() && (in_quote || xml[j] != '>'); ++j) {
      if (xml[j] == '"') in_quote = !in_quote;
      if (!in_quote && xml[j] == '=' && xml[j + 1] != '"')
        return *why = "unquoted attribute in " + name, false;
      if (xml[j] == '<') return *why = "'<' inside tag " + name, false;
    }
    if (j >= xml.size()) return *why = "unterminated tag " + name, false;
    if (closing) {
      if (open.empty() || open.back() != name) return *why = "unbalanced </" + name + ">", false;
      open.pop_back();
    } else if (xml[j - 1] != '/') {
      if (open.empty()) ++roots;
      open.push_back(name);
    } else if (open.empty()) {
      ++roots;
    }
    i = j + 1;
  }
  if (!open.empty()) return *why = "unclosed <" + open.back() + ">", false;
  if (roots != 1) return *why = "expected one root element", false;
  return true;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST_CASE("outputs: summary, teams and timeline CSVs, allocation and comparison charts",
          "[sharing-model]") {
  const Plan plan = two_teams();
  std::vector<RunResult> runs = {run_of("dedicated"), run_of("pooled-caps"), run_of("fair-share")};
  runs[1].refused = 7;
  std::vector<Summary> summaries;
  for (const RunResult& r : runs) summaries.push_back(summarize(r, plan));
  char tmpl[] = "/tmp/vkube-sharing-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  const std::vector<std::string> files = write_outputs(dir, plan, runs, summaries);
  CHECK(files.size() == 2 + 3 * 2 + 1);

  const auto summary = lines_of(read(dir + "/summary.csv"));
  REQUIRE(summary.size() == 4);
  CHECK(summary[0] ==
        "config,mean_alloc_pct,demand_over_pct,mean_alloc_over_pct,violation_pct,preemptions,"
        "mean_stranded_gpus,refused,errors,wall_seconds,short_of_deserved_pct");
  CHECK(summary[1] == "dedicated,62.50,50.00,87.50,12.500,2,0.500,0,0,5.0,25.000");
  CHECK(summary[2].rfind("pooled-caps,", 0) == 0);
  CHECK(summary[2].find(",7,0,") != std::string::npos);

  const auto teams = lines_of(read(dir + "/teams.csv"));
  REQUIRE(teams.size() == 1 + 3 * 2);
  CHECK(teams[0].rfind("config,team,deserved_gpus,", 0) == 0);
  CHECK(teams[0].find(",violation_pct,short_of_deserved_pct,wait_p95_lower_bound") !=
        std::string::npos);
  CHECK(teams[2] ==
        "dedicated,team-b,4,3.500,1.750,2,1,0.500,29.000,180.0,10440.0,25.000,50.000,1");

  const auto timeline = lines_of(read(dir + "/timeline-fair-share.csv"));
  REQUIRE(timeline.size() == 1 + 4);
  CHECK(count(timeline[0], ",") == 6 + 4 * 2);
  CHECK(timeline[0].find("team-b_min_waiting_milli") != std::string::npos);
  CHECK(timeline[4].rfind("3.000,", 0) == 0);
  CHECK(timeline[4].find(",8000,2000,500,7000,7000,") != std::string::npos);

  for (std::string config : {"dedicated", "pooled-caps", "fair-share"}) {
    const std::string svg = read(dir + "/allocation-" + config + ".svg");
    std::string why;
    INFO(config << ": " << why);
    CHECK(well_formed(svg, &why));
    CHECK(svg.find("<script") == std::string::npos);
    CHECK(count(svg, "class=\"team-area\"") == 2);  // one stacked area per team
    CHECK(count(svg, "class=\"capacity\"") == 1);
    CHECK(count(svg, "class=\"demand\"") == 1);
    CHECK(count(svg, "stroke-dasharray") >= 2);  // the deserved shares
    CHECK(svg.find(config) != std::string::npos);
  }
  const std::string comparison = read(dir + "/comparison.svg");
  std::string why;
  CHECK(well_formed(comparison, &why));
  INFO(why);
  // Three configurations x (mean allocation, allocation over demand, 2 teams' p95).
  CHECK(count(comparison, "class=\"bar\"") == 3 * (2 + 2));
  CHECK(comparison.find("team-b") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the well-formedness check rejects broken SVG", "[sharing-model]") {
  std::string why;
  CHECK(well_formed("<svg><rect x=\"1\"/></svg>", &why));
  CHECK_FALSE(well_formed("<svg><g></svg>", &why));
  CHECK_FALSE(well_formed("<svg><text>a & b</text></svg>", &why));
  CHECK_FALSE(well_formed("<svg><rect x=1/></svg>", &why));
}

}  // namespace
}  // namespace vkube::bench::sharing
