// The simulator: registers the nodes, runs their heartbeats, the agent that
// plays their kubelets and, when local pods have a state folder, the local
// volume provisioner.
#include "vkube/nodesim/simulator.h"

#include <shared_mutex>
#include <thread>

#include "agent.h"
#include "client.h"
#include "heartbeat.h"
#include "load_balancers.h"
#include "nodes.h"
#include "pod_connector.h"
#include "pod_metrics.h"
#include "vkube/common/log.h"
#include "volumes.h"

namespace vkube::nodesim {

namespace {

// Concurrent writes when registering nodes and renewing leases: enough for
// the store's group commit to sync many of them at once.
constexpr size_t kWriteThreads = 16;
// Claims are few and each is bound in a handful of in-process requests; two
// threads keep one slow folder removal from holding up the others.
constexpr int kProvisionerWorkers = 2;

// Lets the informers' handlers, which outlive the simulator (handlers cannot
// be removed), reach the agent and the provisioner only while they exist.
struct Gate {
  std::shared_mutex mu;
  Agent* agent = nullptr;
  Provisioner* provisioner = nullptr;
  LoadBalancers* load_balancers = nullptr;
};

LocalOptions local_options(const Options& o, controllers::Informers& informers) {
  LocalOptions l;
  l.images = o.local_images;
  if (!l.images.empty()) {
    const controllers::Lister* namespaces = &informers.cache({"core", "namespaces"});
    l.unsandboxed = [namespaces](const std::string& ns) {
      controllers::ObjectPtr obj = namespaces->get(ns);
      if (!obj) return false;
      const json labels = obj->value("metadata", json::object()).value("labels", json::object());
      auto it = labels.find(std::string(kUnsandboxedLabel));
      return it != labels.end() && *it == "true";
    };
  }
  l.binary = o.local_binary;
  l.state_dir = o.local_state_dir;
  l.api_url = o.api_url;
  l.ca_file = o.ca_file;
  l.loopback_slot = o.loopback_slot;
  return l;
}

// The node agent as pods/log and the streams see it; after stop() no pod
// runs locally.
NodePods node_pods(std::shared_ptr<Gate> gate) {
  NodePods p;
  p.runs_locally = [gate](const json& pod) {
    std::shared_lock lock(gate->mu);
    return gate->agent && gate->agent->local() && gate->agent->local()->runs(pod);
  };
  p.pod_dir = [gate](const json& pod) {
    std::shared_lock lock(gate->mu);
    return gate->agent && gate->agent->local() ? gate->agent->local()->pod_dir(pod) : std::string();
  };
  p.running = [gate](const std::string& key) {
    std::shared_lock lock(gate->mu);
    if (!gate->agent || !gate->agent->local()) return false;
    auto st = gate->agent->local()->state(key);
    return st == LocalPods::State::kStarting || st == LocalPods::State::kReady;
  };
  p.sandbox = [gate](const std::string& key) -> std::optional<LocalPods::Sandbox> {
    std::shared_lock lock(gate->mu);
    if (!gate->agent || !gate->agent->local()) return std::nullopt;
    return gate->agent->local()->sandbox(key);
  };
  return p;
}

class SimulatorImpl final : public Simulator {
 public:
  SimulatorImpl(apiserver::ApiServer& api, controllers::Informers& informers, Options options)
      : api_(api),
        options_(std::move(options)),
        client_(make_client(api)),
        pool_(kWriteThreads),
        informers_(informers),
        registrar_{client_, pool_, informers.cache({"core", "nodes"}),
                   informers.cache({"core", "pods"}), options_.now},
        agent_(client_, registrar_.pods, options_.nodes, options_.now,
               local_options(options_, informers), options_.job_duration),
        gate_(std::make_shared<Gate>()) {
    gate_->agent = &agent_;
    if (!options_.load_balancer_pool.empty()) {
      auto lb = LoadBalancers::create(client_, informers.cache({"core", "services"}),
                                      options_.load_balancer_pool);
      if (lb.is_ok()) {
        load_balancers_ = std::move(lb).value();
        gate_->load_balancers = load_balancers_.get();
        informers.on_event({"core", "services"}, [gate = gate_](const controllers::ObjectEvent& e) {
          std::shared_lock lock(gate->mu);
          if (gate->load_balancers) gate->load_balancers->on_service(e);
        });
      } else {
        VKUBE_LOG(error, "no load balancer addresses", {"error", lb.status().message()});
      }
    }
    informers.on_event({"core", "pods"}, [gate = gate_](const controllers::ObjectEvent& e) {
      std::shared_lock lock(gate->mu);
      if (gate->agent) gate->agent->on_pod(e);
    });
    // Local pods mount their claims' volumes from the state folder, where
    // the provisioner makes them; without one nothing could be mounted.
    if (!options_.local_state_dir.empty()) {
      provisioner_client_ = std::make_unique<Client>(make_provisioner_client(api));
      provisioner_ = std::make_unique<Provisioner>(
          *provisioner_client_, informers.cache({"core", "persistentvolumeclaims"}),
          informers.cache({"core", "persistentvolumes"}), registrar_.pods,
          options_.local_state_dir);
      gate_->provisioner = provisioner_.get();
      informers.on_event({"core", "persistentvolumeclaims"},
                         [gate = gate_](const controllers::ObjectEvent& e) {
                           std::shared_lock lock(gate->mu);
                           if (gate->provisioner) gate->provisioner->on_claim(e);
                         });
      informers.on_event({"core", "persistentvolumes"},
                         [gate = gate_](const controllers::ObjectEvent& e) {
                           std::shared_lock lock(gate->mu);
                           if (gate->provisioner) gate->provisioner->on_volume(e);
                         });
    }
  }

  ~SimulatorImpl() override { stop(); }

  Status start() override {
    auto begin = std::chrono::steady_clock::now();
    VKUBE_RETURN_IF_ERROR(registrar_.ensure_lease_namespace());
    VKUBE_RETURN_IF_ERROR(registrar_.register_nodes(options_.nodes));
    VKUBE_RETURN_IF_ERROR(registrar_.remove_stale(options_.nodes));
    if (provisioner_) {
      VKUBE_RETURN_IF_ERROR(ensure_storage_class(*provisioner_client_));
      provisioner_->start(kProvisionerWorkers);
    }
    agent_.start(options_.workers);
    if (load_balancers_) load_balancers_->start();
    api_.set_pod_connector(make_pod_connector(node_pods(gate_)));
    api_.set_metrics_provider(
        make_metrics_provider(registrar_.pods, registrar_.nodes,
                              [gate = gate_](const std::string& key) -> std::optional<pid_t> {
                                std::shared_lock lock(gate->mu);
                                if (!gate->agent || !gate->agent->local()) return std::nullopt;
                                auto box = gate->agent->local()->sandbox(key);
                                if (!box) return std::nullopt;
                                return box->pid;
                              }));
    std::vector<std::string> names;
    names.reserve(options_.nodes.size());
    for (const gpu::NodeSpec& n : options_.nodes) names.push_back(n.name);
    heartbeat_ = std::make_unique<Heartbeat>(registrar_, std::move(names), options_.heartbeat,
                                             options_.max_renewals_per_second);
    heartbeat_->start();
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - begin);
    VKUBE_LOG(info, "simulated nodes registered", {"nodes", options_.nodes.size()},
              {"ms", took.count()},
              {"lease_round_ms", static_cast<int64_t>(heartbeat_->round().count())});
    return Status::ok();
  }

  void stop() override {
    {
      std::unique_lock lock(gate_->mu);
      gate_->agent = nullptr;
      gate_->provisioner = nullptr;
      gate_->load_balancers = nullptr;
    }
    if (heartbeat_) heartbeat_->stop();
    if (load_balancers_) load_balancers_->stop();
    agent_.stop();
    if (provisioner_) provisioner_->stop();
  }

  bool wait_idle(std::chrono::milliseconds timeout) override {
    auto end = std::chrono::steady_clock::now() + timeout;
    int quiet = 0;
    while (std::chrono::steady_clock::now() < end) {
      bool idle = informers_.sync(std::chrono::milliseconds(200)) && agent_.idle() &&
                  (!provisioner_ || provisioner_->idle()) &&
                  (!load_balancers_ || load_balancers_->idle());
      // Idle several times in a row: a handler may have just queued a key.
      quiet = idle ? quiet + 1 : 0;
      if (quiet >= 3) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

 private:
  apiserver::ApiServer& api_;
  Options options_;
  Client client_;
  controllers::WritePool pool_;
  controllers::Informers& informers_;
  Registrar registrar_;
  Agent agent_;
  std::unique_ptr<Client> provisioner_client_;
  std::unique_ptr<Provisioner> provisioner_;
  std::unique_ptr<LoadBalancers> load_balancers_;
  std::shared_ptr<Gate> gate_;
  std::unique_ptr<Heartbeat> heartbeat_;
};

}  // namespace

std::unique_ptr<Simulator> Simulator::create(apiserver::ApiServer& api,
                                             controllers::Informers& informers, Options options) {
  gpu::assign_addresses(options.nodes);
  return std::make_unique<SimulatorImpl>(api, informers, std::move(options));
}

}  // namespace vkube::nodesim
