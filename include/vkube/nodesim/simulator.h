// Simulated nodes of `vkube host`: each NodeSpec becomes a real Node object
// (GPU capacity, GFD labels, a label saying it is simulated), kept alive by a
// Lease in kube-node-lease, and a node agent plays the kubelet for the pods
// bound to it: it starts them (Running, a pod IP from the node's range,
// Ready conditions, container statuses), stops them on deletion after their
// grace period, and completes them after the duration their annotation asks.
//
// Pod annotations the agent honours (durations are Go durations or plain
// seconds; a malformed value is logged and ignored):
//   sim.vkube.io/duration: "90s"         the containers exit after running this long
//   sim.vkube.io/exit-code: "1"          ... with this code (default 0)
//   sim.vkube.io/start-delay: "2s"       stays ContainerCreating this long first
//   sim.vkube.io/termination-seconds: "5"  takes this long to stop after deletion
//                                        (default 0); still running at the end of
//                                        the grace period: killed (exit code 137)
// What an exit means follows the pod's restartPolicy, as on a kubelet:
// Never: Succeeded (code 0) or Failed; OnFailure: Succeeded on 0, else the
// container restarts; Always (the default): it restarts whatever the code
// (restartCount + 1, lastState terminated, running again for the duration).
// A restart is immediate: there is no CrashLoopBackOff.
//
// Leases are renewed every `heartbeat`, or less often when the nodes are too
// many for max_renewals_per_second (10,000 nodes at 100/s: every 100 s, more
// than the 40 s leaseDurationSeconds; vkube runs no node lifecycle
// controller that would act on it). A simulated node someone deletes stays
// deleted until the next start().
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
  // Wall clock for the times written on objects (tests inject one); waits
  // are measured on the steady clock.
  std::function<std::chrono::system_clock::time_point()> now;
  // Threads of the node agent (each pod write is one in-process request).
  int workers = 4;
  // Pods whose container image is one of these repositories (the last path
  // segment, e.g. "vkube" for "registry/team/vkube:0.1") run as real local
  // processes of `local_binary` (src/nodesim/local_pods.h says what their
  // sandbox emulates); empty: none do.
  std::vector<std::string> local_images;
  std::string local_binary = "/proc/self/exe";
  std::string local_state_dir;           // their folders, logs and volumes
  std::function<std::string()> api_url;  // where they reach this API server
  std::string ca_file;                   // its CA certificate
  // The second byte of the loopback addresses local pods hold, 127.S.x.y
  // (claim_loopback_slot); 0: 127.<the pod IP's low three bytes>.
  int loopback_slot = 0;
  // Pods a Job owns (helm hooks, batch work) without sim.vkube.io/duration
  // complete after this, as kwok completes them; 0: they run until deleted.
  std::chrono::milliseconds job_duration{0};
  // Addresses for LoadBalancer Services (status.loadBalancer.ingress[].ip),
  // "a.b.c.d/n"; empty: none are given.
  std::string load_balancer_pool;
};

// A Go duration ("2s", "500ms", "1m") or plain seconds; nullopt otherwise.
std::optional<std::chrono::milliseconds> parse_sim_duration(std::string_view text);

// The networks the simulated nodes' addresses come from (the /16s of their
// pod ranges, their node addresses): made up, so never to be dialled
// (vkube/common/dial_policy.h).
std::vector<std::string> simulated_networks(const std::vector<gpu::NodeSpec>& nodes);

// A loopback slot of this machine for the embedded host of `data_dir`
// (1..253, first tried: one derived from the directory), held through a
// lock file in `lock_dir` until the process ends, so that two hosts never
// give local pods the same addresses. kUnavailable naming the holders when
// every slot is taken.
Result<int> claim_loopback_slot(const std::string& data_dir,
                                const std::string& lock_dir = "/tmp/vkube-loopback-slots");
// The default load balancer pool of slot `slot`: 127.254.S.0/24 (loopback,
// so a client that dials it never leaves the machine; slot 254 is never
// claimed, so no local pod holds these addresses).
std::string default_load_balancer_pool(int slot);

class Simulator {
 public:
  // Registers the agent's caches and handlers on `informers` (before they
  // start). `api` and `informers` outlive the simulator. Nodes without a pod
  // CIDR or internal IP get them from gpu::assign_addresses. Writes are made
  // as a member of system:masters with the field manager "kubelet".
  static std::unique_ptr<Simulator> create(apiserver::ApiServer& api,
                                           controllers::Informers& informers, Options options);
  virtual ~Simulator() = default;
  // After the informers started: creates or updates the Node objects and
  // their Leases (deleting simulated nodes no longer configured, and their
  // pods), then runs the agent and heartbeats. Returns once every node exists.
  // An existing node keeps its podCIDR (kube never changes it), its
  // labels other than nvidia.com/* and its annotations; labels, capacity,
  // taints and conditions are set from its spec. kInternal naming the first
  // node that could not be written (the others are still written).
  virtual Status start() = 0;
  // Stops heartbeats and the agent. Idempotent.
  virtual void stop() = 0;
  // Blocks until the agent has nothing queued (tests); false on timeout.
  virtual bool wait_idle(std::chrono::milliseconds timeout) = 0;
};

}  // namespace vkube::nodesim
