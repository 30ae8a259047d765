// What every controller is built from: the shared Context (informers, client,
// events, clock, a write pool) and the Controller base (a work queue drained
// by worker threads calling reconcile).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "vkube/controllers/event_recorder.h"
#include "vkube/common/status.h"
#include "vkube/controllers/informers.h"
#include "vkube/controllers/local_client.h"
#include "vkube/controllers/manager.h"
#include "vkube/controllers/work_queue.h"

namespace vkube::controllers {

class WritePool;

struct Context {
  Informers& informers;
  LocalClient& client;
  EventRecorder& events;
  const ManagerOptions& options;
  WritePool& pool;
  std::chrono::system_clock::time_point now() const {
    return options.now ? options.now() : std::chrono::system_clock::now();
  }
  // Runs fn(0) .. fn(n-1) on the write pool (writes share WAL syncs when
  // concurrent) and returns when all are done.
  void parallel(size_t n, const std::function<void(size_t)>& fn);
};

class Controller {
 public:
  Controller(Context& ctx, std::string name);
  virtual ~Controller();
  const std::string& name() const { return name_; }

  // Starts a worker taking keys from the queue; more start while keys wait,
  // up to `workers` (QueueWorkers).
  void start(int workers);
  // Shuts the queue and joins the workers. Idempotent.
  void stop();
  // True when nothing is queued and no worker is in reconcile.
  bool idle();

  WorkQueue& queue() { return queue_; }

 protected:
  // Brings the object `key` ("ns/name", or "name" for cluster-scoped kinds)
  // to its desired state from the informers' caches. An error is logged and
  // the key retried with backoff; success forgets its backoff. Never called
  // twice at once for one key. To look again later: queue().add_after(...).
  virtual Status reconcile(const std::string& key) = 0;

  Context& ctx_;
  // Up to at least this many workers, whatever the manager's default.
  int min_workers_ = 1;

 private:
  std::string name_;
  WorkQueue queue_;
  QueueWorkers workers_;
};

// One factory per controller (each in its own <name>_controller.cpp). A
// factory registers its caches and handlers on ctx.informers (so it runs
// before Informers::start) and returns the controller, not yet started.
using ControllerFactory = std::unique_ptr<Controller> (*)(Context&);

std::unique_ptr<Controller> make_namespace_controller(Context&);
std::unique_ptr<Controller> make_crd_cleanup_controller(Context&);
std::unique_ptr<Controller> make_garbage_collector(Context&);
std::unique_ptr<Controller> make_deployment_controller(Context&);
std::unique_ptr<Controller> make_replicaset_controller(Context&);
std::unique_ptr<Controller> make_replication_controller(Context&);
std::unique_ptr<Controller> make_statefulset_controller(Context&);
std::unique_ptr<Controller> make_daemonset_controller(Context&);
std::unique_ptr<Controller> make_job_controller(Context&);
std::unique_ptr<Controller> make_cronjob_controller(Context&);
std::unique_ptr<Controller> make_endpoints_controller(Context&);
std::unique_ptr<Controller> make_endpointslice_controller(Context&);
std::unique_ptr<Controller> make_serviceaccount_controller(Context&);
std::unique_ptr<Controller> make_root_ca_controller(Context&);
std::unique_ptr<Controller> make_csr_signing_controller(Context&);
std::unique_ptr<Controller> make_kubernetes_service_controller(Context&);
std::unique_ptr<Controller> make_disruption_controller(Context&);
std::unique_ptr<Controller> make_policy_status_controller(Context&);

}  // namespace vkube::controllers
