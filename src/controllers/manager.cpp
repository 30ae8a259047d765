#include "vkube/controllers/manager.h"

#include <thread>

#include "controller.h"
#include "vkube/controllers/event_recorder.h"
#include "vkube/common/log.h"
#include "vkube/controllers/write_pool.h"

namespace vkube::controllers {

namespace {

struct Entry {
  const char* name;
  ControllerFactory make;
};

// kube-controller-manager's names for its controllers.
const std::vector<Entry>& table() {
  static const std::vector<Entry> t = {
      {"namespace", make_namespace_controller},
      {"customresourcedefinition-cleanup", make_crd_cleanup_controller},
      {"garbage-collector", make_garbage_collector},
      {"deployment", make_deployment_controller},
      {"replicaset", make_replicaset_controller},
      {"replicationcontroller", make_replication_controller},
      {"statefulset", make_statefulset_controller},
      {"daemonset", make_daemonset_controller},
      {"job", make_job_controller},
      {"cronjob", make_cronjob_controller},
      {"endpoints", make_endpoints_controller},
      {"endpointslice", make_endpointslice_controller},
      {"serviceaccount", make_serviceaccount_controller},
      {"root-ca-cert-publisher", make_root_ca_controller},
      {"csrsigning", make_csr_signing_controller},
      {"kubernetes-service", make_kubernetes_service_controller},
      {"disruption", make_disruption_controller},
      {"validatingadmissionpolicy-status", make_policy_status_controller},
  };
  return t;
}

// Concurrent writes of one bulk operation (a ReplicaSet's pods).
constexpr size_t kWriteThreads = 16;

class Manager final : public ControllerManager {
 public:
  Manager(apiserver::ApiServer& api, storage::Backend& store, ManagerOptions o)
      : options_(std::move(o)),
        client_(api, "system:kube-controller-manager"),
        events_(client_, options_.now),
        pool_(kWriteThreads),
        informers_(store),
        store_(store),
        ctx_{informers_, client_, events_, options_, pool_} {}

  ~Manager() override { stop(); }

  Status start() {
    for (const Entry& e : table()) {
      if (!options_.controllers.empty() &&
          std::find(options_.controllers.begin(), options_.controllers.end(), e.name) ==
              options_.controllers.end())
        continue;
      if (auto c = e.make(ctx_)) controllers_.push_back(std::move(c));
    }
    for (const auto& attach : options_.attach) attach(informers_);
    VKUBE_RETURN_IF_ERROR(informers_.start());
    for (auto& c : controllers_) c->start(options_.workers);
    return Status::ok();
  }

  void stop() override {
    if (stopped_.exchange(true)) return;
    for (auto& c : controllers_) c->stop();
    informers_.stop();
    events_.stop();
  }

  bool wait_idle(std::chrono::milliseconds timeout) override {
    auto end = std::chrono::steady_clock::now() + timeout;
    int quiet = 0;
    while (std::chrono::steady_clock::now() < end) {
      bool idle = informers_.dispatched_revision() >= store_.current_revision();
      for (auto& c : controllers_) idle = idle && c->idle();
      // Idle twice in a row: a handler may have just queued a key.
      quiet = idle ? quiet + 1 : 0;
      if (quiet >= 3) {
        events_.flush();
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

 private:
  ManagerOptions options_;
  LocalClient client_;
  EventRecorder events_;
  WritePool pool_;
  Informers informers_;
  storage::Backend& store_;
  Context ctx_;
  std::vector<std::unique_ptr<Controller>> controllers_;
  std::atomic<bool> stopped_{false};
};

}  // namespace

const std::vector<std::string>& controller_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Entry& e : table()) n.push_back(e.name);
    return n;
  }();
  return names;
}

Result<std::unique_ptr<ControllerManager>> ControllerManager::start(apiserver::ApiServer& api,
                                                                    storage::Backend& store,
                                                                    ManagerOptions options) {
  for (const std::string& n : options.controllers)
    if (std::find(controller_names().begin(), controller_names().end(), n) ==
        controller_names().end())
      return Status::invalid("unknown controller \"" + n + "\"");
  auto m = std::make_unique<Manager>(api, store, std::move(options));
  VKUBE_RETURN_IF_ERROR(m->start());
  return std::unique_ptr<ControllerManager>(std::move(m));
}

}  // namespace vkube::controllers
