// The simulator's test harness: a small pool of simulated GPU nodes on a
// real API server and controller manager (the garbage collector only).
#pragma once

#include <catch2/catch.hpp>

#include "support/control_plane.h"
#include "vkube/nodesim/simulator.h"

namespace vkube::nodesim::sim_testing {

using json = nlohmann::json;
using testing::ControlPlane;
using namespace std::chrono_literals;

inline const std::string kPods = "/api/v1/namespaces/w/pods";

inline Options small_pool(int nodes, std::chrono::milliseconds heartbeat = 10s, int max_rps = 100) {
  gpu::PoolFlags f;
  f.count = nodes;
  f.prefix = "sim";
  f.gpus = 2;
  Options o;
  o.nodes = *gpu::pool_from_flags(f);
  o.heartbeat = heartbeat;
  o.max_renewals_per_second = max_rps;
  o.workers = 2;
  return o;
}

// A control plane (with the garbage collector, which must leave the Leases
// alone) and a simulator on its informers.
struct Cluster {
  std::unique_ptr<Simulator> sim;
  ControlPlane cp;

  explicit Cluster(Options o)
      : cp({"garbage-collector"}, {}, {[this, o](controllers::Informers& informers) {
             sim = Simulator::create(*cp.server.api, informers, o);
           }}) {
    REQUIRE(sim->start().is_ok());
  }
  ~Cluster() {
    if (sim) sim->stop();
  }

  // Stops the simulator and the manager, then starts both again with `o`
  // over the same store (a restart of `vkube host`).
  void restart(Options o) {
    sim->stop();
    cp.manager->stop();
    controllers::ManagerOptions mo;
    mo.controllers = {"garbage-collector"};
    mo.attach = {[this, o](controllers::Informers& informers) {
      sim = Simulator::create(*cp.server.api, informers, o);
    }};
    auto m = controllers::ControllerManager::start(*cp.server.api, *cp.server.store, mo);
    REQUIRE(m.is_ok());
    cp.manager = std::move(m).value();
    REQUIRE(sim->start().is_ok());
  }

  json pod(const std::string& name) { return cp.get(kPods + "/" + name); }
  bool gone(const std::string& name) { return cp.call("GET", kPods + "/" + name).code == 404; }
};

}  // namespace vkube::nodesim::sim_testing
