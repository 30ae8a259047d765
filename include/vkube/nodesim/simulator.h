// Simulated nodes of `vkube host`: each NodeSpec becomes a real Node object
// (GPU capacity, GFD labels, a label saying it is simulated), kept alive by a
// Lease in kube-node-lease, and a node agent plays the kubelet for the pods
// bound to it: it starts them (Running, a pod IP from the node's range,
// Ready conditions, container statuses), stops them on deletion after their
// grace period, and completes them after the duration their annotation asks.
//
// Pod annotations the agent honours:
//   sim.vkube.io/duration: "90s"         Succeeded (exit 0) after running this long
//                                        (Go duration, or plain seconds)
//   sim.vkube.io/exit-code: "1"          with a duration: exit with this code (Failed
//                                        when restartPolicy is Never/OnFailure... see agent.cpp)
//   sim.vkube.io/start-delay: "2s"       stays ContainerCreating this long first
//   sim.vkube.io/termination-seconds: "5"  takes this long to stop after deletion
//                                        (default 0; never beyond the grace period)
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vkube/apiserver/apiserver.h"
#include "vkube/common/status.h"
#include "vkube/controllers/informers.h"
#include "vkube/gpu/node_spec.h"

namespace vkube::nodesim {

inline constexpr std::string_view kDurationAnnotation = "sim.vkube.io/duration";
inline constexpr std::string_view kExitCodeAnnotation = "sim.vkube.io/exit-code";
inline constexpr std::string_view kStartDelayAnnotation = "sim.vkube.io/start-delay";
inline constexpr std::string_view kTerminationAnnotation = "sim.vkube.io/termination-seconds";

struct Options {
  std::vector<gpu::NodeSpec> nodes;
  // How often each node renews its Lease (kubelet: 10 s). With many nodes the
  // renewals are spread so that at most `max_renewals_per_second` happen.
  std::chrono::milliseconds heartbeat = std::chrono::seconds(10);
  int max_renewals_per_second = 100;
  // Wall clock (tests inject one).
  std::function<std::chrono::system_clock::time_point()> now;
  int workers = 4;
};

class Simulator {
 public:
  // Registers the agent's caches and handlers on `informers` (before they
  // start). `api` outlives the simulator.
  static std::unique_ptr<Simulator> create(apiserver::ApiServer& api, controllers::Informers& informers,
                                           Options options);
  virtual ~Simulator() = default;
  // After the informers started: creates or updates the Node objects and
  // their Leases (deleting simulated nodes no longer configured, and their
  // pods), then runs the agent and heartbeats. Returns once every node exists.
  virtual Status start() = 0;
  // Stops heartbeats and the agent. Idempotent.
  virtual void stop() = 0;
  // Blocks until the agent has nothing queued (tests); false on timeout.
  virtual bool wait_idle(std::chrono::milliseconds timeout) = 0;
};

}  // namespace vkube::nodesim
