// bench_sharing's plan on the real Alibaba trace and on hand-made pods: the
// team split, the window and its compression, the per-team shift, the
// dedicated slices and the node file `vkube host --node-config` reads.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "sharing_model.h"
#include "support/source_dir.h"
#include "vkube/gpu/node_spec.h"

namespace vkube::bench::sharing {
namespace {

std::string trace_file(const char* name) {
  return (vkube::testing::source_dir_of(__FILE__) / "../../../../shared/traces/alibaba-gpu-v2023" /
          name)
      .lexically_normal()
      .string();
}

struct Trace {
  std::vector<TracePod> pods;
  std::vector<TraceNode> nodes;
};

const Trace& trace() {
  static const Trace t = [] {
    Trace out;
    std::string error;
    out.pods = load_trace_pods(trace_file("openb_pod_list_default.csv"), &error);
    out.nodes = load_trace_nodes(trace_file("openb_node_list_gpu_node.csv"), &error);
    return out;
  }();
  return t;
}

TracePod pod(std::string name, int num_gpu, int gpu_milli, int64_t created, int64_t deleted) {
  TracePod p;
  p.name = std::move(name);
  p.cpu_milli = 4000;
  p.memory_mib = 8192;
  p.num_gpu = num_gpu;
  p.gpu_milli = gpu_milli;
  p.created = created;
  p.deleted = deleted;
  return p;
}

constexpr int64_t kDay = 86400;

// One team, trace day 1 replayed in 100 s: hand-made pods' plans.
Options one_team_day_one() {
  Options o;
  o.teams = 1;
  o.from_day = 1;
  o.days = 1;
  o.seconds = 100;
  return o;
}

TEST_CASE("the trace loads: 8,152 pods of which 7,064 ask for GPUs, 1,213 nodes",
          "[sharing-model]") {
  const Trace& t = trace();
  REQUIRE(t.pods.size() == 8152);
  REQUIRE(t.nodes.size() == 1213);
  size_t gpu_pods = 0;
  for (const TracePod& p : t.pods) gpu_pods += gpu_request_milli(p) > 0;
  CHECK(gpu_pods == 7064);
  CHECK(t.pods[1].name == "openb-pod-0001");
  CHECK(gpu_request_milli(t.pods[1]) == 460);  // 1 GPU, gpu_milli 460: a share
  CHECK(t.pods[1].created == 427061);
  CHECK(t.pods[1].deleted == 12902960);
  CHECK(t.nodes[0].model == "P100");

  std::string error;
  CHECK(load_trace_pods("/nonexistent/pods.csv", &error).empty());
  CHECK(error.find("cannot read") != std::string::npos);
}

TEST_CASE("a pod's GPU request: a share of one GPU, or whole GPUs", "[sharing-model]") {
  CHECK(gpu_request_milli(pod("p", 1, 460, 0, 1)) == 460);
  CHECK(gpu_request_milli(pod("p", 1, 1000, 0, 1)) == 1000);
  CHECK(gpu_request_milli(pod("p", 1, 0, 0, 1)) == 1000);
  CHECK(gpu_request_milli(pod("p", 4, 1000, 0, 1)) == 4000);
  CHECK(gpu_request_milli(pod("p", 0, 0, 0, 1)) == 0);
}

TEST_CASE("the default plan on the real trace: teams, window, arrivals and slices",
          "[sharing-model]") {
  const Plan plan = make_plan(trace().pods, trace().nodes, Options{});
  REQUIRE(plan.teams == std::vector<std::string>{"team-a", "team-b", "team-c", "team-d"});
  CHECK(plan.scale == Approx(2.0 * kDay / 300));
  // 37 pods alive at day 130 and 530 created in days 130..132, split by the
  // hash of their names; the split never changes from run to run. One of
  // them (8 GPUs, 120.2 cores, 625 GiB) fits neither a G2 nor a T4 node.
  CHECK(plan.unplaceable == std::vector<std::string>{"openb-pod-3362"});
  REQUIRE(plan.arrivals.size() == 566);
  std::vector<int> per_team(4, 0);
  for (const Arrival& a : plan.arrivals) ++per_team[a.team];
  CHECK(per_team == std::vector<int>{139, 135, 150, 142});

  std::map<std::string, const TracePod*> by_name;
  for (const TracePod& p : trace().pods) by_name[p.name] = &p;
  const double start = 130.0 * kDay, window = 2.0 * kDay;
  int at_start = 0;
  for (size_t i = 0; i < plan.arrivals.size(); ++i) {
    const Arrival& a = plan.arrivals[i];
    INFO(a.name);
    REQUIRE(a.at_s >= 0);
    REQUIRE(a.at_s < 300);
    if (i > 0) REQUIRE(plan.arrivals[i - 1].at_s <= a.at_s);
    const TracePod& p = *by_name.at(a.name);
    CHECK(a.gpu_milli() == gpu_request_milli(p));
    CHECK(a.cpu_milli == p.cpu_milli);
    const double created = static_cast<double>(p.created);
    if (created < start) {
      // Alive at the window's start: arrives at once with what is left of its life.
      ++at_start;
      CHECK(a.at_s == 0);
      CHECK(a.run_s ==
            Approx(std::max(0.1, (static_cast<double>(p.deleted) - start) / plan.scale)));
    } else {
      // Team k is shifted by k quarters of the window, wrapping at its end.
      double offset = created - start + a.team * window / 4;
      if (offset >= window) offset -= window;
      CHECK(a.at_s == Approx(offset / plan.scale).margin(1e-9));
      CHECK(a.run_s ==
            Approx(std::max(0.1, static_cast<double>(p.deleted - p.created) / plan.scale)));
    }
  }
  CHECK(at_start == 37);

  // Each slice covers its team's mean demand with at most one node to spare,
  // and the pool is exactly the slices.
  int64_t deserved = 0;
  for (size_t k = 0; k < 4; ++k) {
    INFO(plan.teams[k]);
    CHECK(plan.deserved_milli[k] >= plan.mean_demand_gpus[k] * 1000);
    CHECK(plan.deserved_milli[k] < plan.mean_demand_gpus[k] * 1000 + 8000);
    int64_t gpus = 0;
    for (const PlannedNode& n : plan.nodes)
      if (n.team == static_cast<int>(k)) gpus += n.gpus;
    CHECK(gpus * 1000 == plan.deserved_milli[k]);
    deserved += plan.deserved_milli[k];
  }
  CHECK(plan.capacity_milli() == deserved);
  CHECK(plan.deserved_milli == std::vector<int64_t>{8000, 10000, 12000, 8000});
}

TEST_CASE("the quick window: a quarter day in 40 s", "[sharing-model]") {
  Options o;
  o.days = 0.25;
  o.seconds = 40;
  const Plan plan = make_plan(trace().pods, trace().nodes, o);
  CHECK(plan.scale == Approx(0.25 * kDay / 40));
  CHECK(plan.arrivals.size() == 134);
  for (const Arrival& a : plan.arrivals) {
    CHECK(a.at_s >= 0);
    CHECK(a.at_s < 40);
  }
}

TEST_CASE("slices: G2 nodes of 8 GPUs, then T4 nodes of 2; a wide pod gets a G2",
          "[sharing-model]") {
  const Options o = one_team_day_one();
  std::vector<TracePod> pods;
  // 11 GPUs busy all day: one G2 (8) and two T4s (2 + 2) = 12 GPUs.
  for (int i = 0; i < 11; ++i)
    pods.push_back(pod("whole-" + std::to_string(i), 1, 1000, 0, 3 * kDay));
  Plan plan = make_plan(pods, trace().nodes, o);
  CHECK(plan.mean_demand_gpus[0] == Approx(11));
  CHECK(plan.deserved_milli[0] == 12000);
  REQUIRE(plan.nodes.size() == 3);
  CHECK(plan.nodes[0].name == "team-a-g2-0");
  CHECK(plan.nodes[0].model == "G2");
  CHECK(plan.nodes[0].gpus == 8);
  CHECK(plan.nodes[0].cpu_milli == 96000);  // as the trace's G2 nodes
  CHECK(plan.nodes[0].memory_mib == 393216);
  CHECK(plan.nodes[2].name == "team-a-t4-1");
  CHECK(plan.nodes[2].model == "T4");
  CHECK(plan.nodes[2].gpus == 2);
  CHECK(plan.nodes[2].cpu_milli == 104000);

  // A 4-GPU pod for a tenth of the day: 0.4 GPUs on average would be one
  // T4, where the pod could never run; the team gets one G2 instead.
  pods = {pod("wide", 4, 1000, kDay, kDay + kDay / 10)};
  plan = make_plan(pods, trace().nodes, o);
  CHECK(plan.mean_demand_gpus[0] == Approx(0.4));
  REQUIRE(plan.nodes.size() == 1);
  CHECK(plan.nodes[0].model == "G2");
  CHECK(plan.deserved_milli[0] == 8000);
  // Two GPUs fit a T4.
  pods = {pod("pair", 2, 1000, kDay, kDay + kDay / 10)};
  plan = make_plan(pods, trace().nodes, o);
  REQUIRE(plan.nodes.size() == 1);
  CHECK(plan.nodes[0].model == "T4");
  CHECK(plan.deserved_milli[0] == 2000);
}

TEST_CASE("a pod larger than every node shape is left out, counted and named", "[sharing-model]") {
  const Options o = one_team_day_one();
  auto sized = [](std::string name, int gpus, int64_t cpu_milli, int64_t memory_mib) {
    TracePod p = pod(std::move(name), gpus, 1000, kDay, kDay + kDay / 10);
    p.cpu_milli = cpu_milli;
    p.memory_mib = memory_mib;
    return p;
  };
  const std::vector<TracePod> pods = {
      // As openb-pod-3362: 8 GPUs fit only a G2, whose 96 cores are too few.
      sized("Too-Many-Cores", 8, 120200, 640000),
      sized("full-g2", 8, 96000, 393216),         // exactly a G2
      sized("full-t4", 2, 104000, 524288),        // exactly a T4
      sized("too-much-memory", 1, 4000, 524289),  // a MiB more than a T4
      sized("nine-gpus", 9, 4000, 8192),
      sized("g2-cores-t4-memory", 4, 96000, 400000),  // 4 GPUs need a G2: 384 GiB
  };
  const Plan plan = make_plan(pods, trace().nodes, o);
  std::vector<std::string> kept;
  for (const Arrival& a : plan.arrivals) kept.push_back(a.name);
  std::sort(kept.begin(), kept.end());
  CHECK(kept == std::vector<std::string>{"full-g2", "full-t4"});
  CHECK(plan.unplaceable == std::vector<std::string>{"Too-Many-Cores", "too-much-memory",
                                                     "nine-gpus", "g2-cores-t4-memory"});
  // The left-out pods add nothing to demand: 10 GPUs for a tenth of the day.
  CHECK(plan.mean_demand_gpus[0] == Approx(1.0));

  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  print_plan(f, plan);
  std::fclose(f);
  const std::string out(buf, len);
  free(buf);
  INFO(out);
  CHECK(out.find("left out: 4 pod(s)") != std::string::npos);
  CHECK(out.find("Too-Many-Cores, too-much-memory, nine-gpus, g2-cores-t4-memory") !=
        std::string::npos);
}

TEST_CASE("an empty window plans teams and nothing else", "[sharing-model]") {
  Options o;
  o.seconds = 0;
  const Plan plan = make_plan(trace().pods, trace().nodes, o);
  CHECK(plan.teams.size() == 4);
  CHECK(plan.arrivals.empty());
  CHECK(plan.deserved_milli == std::vector<int64_t>(4, 0));
  CHECK(plan.nodes.empty());
}

TEST_CASE("pods outside the window and CPU-only pods are left out", "[sharing-model]") {
  const Options o = one_team_day_one();
  const std::vector<TracePod> pods = {
      pod("gone-before", 1, 1000, 0, kDay),            // deleted as the window opens
      pod("after", 1, 1000, 2 * kDay, 3 * kDay),       // created as it closes
      pod("cpu-only", 0, 0, kDay + 10, kDay + 20),     // no GPU
      pod("Share", 1, 250, kDay + kDay / 2, 2 * kDay)  // inside: half-way
  };
  const Plan plan = make_plan(pods, trace().nodes, o);
  REQUIRE(plan.arrivals.size() == 1);
  const Arrival& a = plan.arrivals[0];
  CHECK(a.name == "share");
  CHECK(a.at_s == Approx(50));
  CHECK(a.run_s == Approx(50));
  CHECK(a.gpu_share_milli == 250);
  CHECK(a.num_gpu == 0);
}

TEST_CASE("vkube host reads the plan's node file: names, models, team labels, shares",
          "[sharing-model]") {
  const Plan plan = make_plan(trace().pods, trace().nodes, Options{});
  const std::string yaml = node_config_yaml(plan);
  auto specs = gpu::pool_from_yaml(yaml);
  REQUIRE(specs.is_ok());
  REQUIRE(specs->size() == plan.nodes.size());
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const gpu::NodeSpec& s = (*specs)[i];
    const PlannedNode& n = plan.nodes[i];
    CHECK(s.name == n.name);
    CHECK(s.gpus == n.gpus);
    CHECK(s.cpu_milli == n.cpu_milli);
    CHECK(s.memory_mib == n.memory_mib);
    CHECK(s.model.product == (n.model == "G2" ? "Alibaba-G2" : "Tesla-T4"));
    CHECK(s.sharing == gpu::Sharing::kFraction);  // vkube.io/gpu-milli shares fit
    CHECK(s.labels.at("vkube.io/team") == plan.teams[n.team]);
  }
}

}  // namespace
}  // namespace vkube::bench::sharing
