// The kubelet part of the simulator: for the pods bound to its nodes it
// reports them starting, running and ready, completes them after their
// sim.vkube.io/duration, and on deletion stops them and removes them. Every
// wait is a delayed work-queue key, so an idle cluster costs no CPU.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "client.h"
#include "local_pods.h"
#include "pod_ips.h"
#include "pod_status.h"
#include "sim_time.h"
#include "vkube/controllers/informers.h"
#include "vkube/controllers/work_queue.h"
#include "vkube/gpu/node_spec.h"

namespace vkube::nodesim {

class Agent {
 public:
  using milliseconds_t = std::chrono::milliseconds;
  // `nodes` and `pods` outlive the agent; `nodes` may still change (their
  // pod CIDRs) until start(). A pod a Job owns without a duration annotation
  // completes after `job_duration` (0: runs until deleted), as kwok does.
  Agent(Client& client, const controllers::Lister& pods, const std::vector<gpu::NodeSpec>& nodes,
        std::function<TimePoint()> now, LocalOptions local = {},
        milliseconds_t job_duration = milliseconds_t(0));
  ~Agent();

  // The informers' pod handler: queues pods bound to our nodes. Quick.
  void on_pod(const controllers::ObjectEvent& e);
  bool owns(std::string_view node) const { return node_index(node) >= 0; }

  // Takes the addresses running pods hold (after a restart), then starts
  // `workers` threads.
  void start(int workers);
  // Shuts the queue and joins the workers. Idempotent.
  void stop();
  // The local processes it runs; null when no image runs locally.
  LocalPods* local() { return local_.get(); }
  // Nothing queued or being handled (waiting timers do not count).
  bool idle() { return queue_.idle(); }

 private:
  using Steady = std::chrono::steady_clock;

  // What the agent remembers of a pod between its reconciles (kubelet's
  // pod workers keep the same in memory).
  struct Tracked {
    std::string uid;
    int node = -1;
    uint32_t ip = 0;  // an address of the node's range it holds; 0: none
    std::optional<Steady::time_point> seen, running_since, deleting_since;
    bool local = false;                            // runs as a local process (LocalPods)
    int polls = 0;                                 // readiness checks of the local process so far
    int failed_starts = 0;                         // of the local process, in a row
    milliseconds_t backoff{0};                     // before a local process starts again
    std::optional<Steady::time_point> restart_at;  // ... not before this
    std::string mount_warned;    // the volume a FailedMount event was recorded for
    bool from_last_run = false;  // a local pod running before this agent started
  };

  int node_index(std::string_view name) const;
  void work();
  Status reconcile(const std::string& key);
  // kConflict when the pod changed under a write: reconcile re-reads it.
  Status handle(const std::string& key, const json& pod);
  Status start_pod(const std::string& key, const json& pod, Tracked& t);
  Status run_pod(const std::string& key, const json& pod, Tracked& t);
  Status stop_pod(const std::string& key, const json& pod, Tracked& t);
  // The local-process side of start_pod and run_pod: starts the process and
  // waits (re-queued) for its readiness port; restarts it after it exits.
  Status start_local(const std::string& key, const json& pod, Tracked& t, const Addresses& a);
  Status run_local(const std::string& key, const json& pod, Tracked& t);
  // A local process that ended: finished or restarted by the restart policy.
  Status local_exited(const std::string& key, const json& pod, Tracked& t, int code);
  Status stop_local(const std::string& key, const json& pod, Tracked& t);
  // An address of node `node`'s range for a pod's status.podIP (a local
  // pod's loopback address maps back to its range).
  std::optional<uint32_t> range_ip(int node, const std::string& pod_ip) const;
  // How long the pod's containers run: its duration annotation, else the
  // Job default for a Job's pod; nullopt: until deleted.
  std::optional<milliseconds_t> run_duration(const json& pod) const;
  // A missing Secret or ConfigMap volume: the pod waits in ContainerCreating
  // (true) with a FailedMount event, tried again in a moment.
  bool waits_for_volume(const std::string& key, const json& pod, Tracked& t, const Addresses& a,
                        const std::string& stamp, Status* s);
  Status write_status(const json& pod, json status);
  Status remove(const json& pod);

  // Whether a local pod other than `key` holds the loopback address.
  bool loopback_taken(const std::string& key, uint32_t loopback);
  Tracked load(const std::string& key);
  void save(const std::string& key, const Tracked& t);
  void forget(const std::string& key);  // releases the pod's address
  void later(const std::string& key, std::chrono::milliseconds delay);
  TimePoint wall() const { return now_ ? now_() : std::chrono::system_clock::now(); }
  // The steady time of a wall-clock moment in the past (state a previous
  // run of the simulator recorded).
  Steady::time_point steady_of(TimePoint then) const;

  Client& client_;
  const controllers::Lister& pods_;
  const std::vector<gpu::NodeSpec>& nodes_;
  std::function<TimePoint()> now_;
  milliseconds_t job_duration_;
  int loopback_slot_ = 0;
  std::unordered_map<std::string, int> index_;
  std::unique_ptr<PodIps> ips_;
  std::unique_ptr<LocalPods> local_;
  std::mutex mu_;
  std::unordered_map<std::string, Tracked> tracked_;
  controllers::WorkQueue queue_;
  std::vector<std::thread> workers_;
};

}  // namespace vkube::nodesim
