// The tenant's controller manager (kube-controller-manager, in process):
// namespaces, garbage collection, workloads, services, service accounts,
// disruption budgets. Every controller is fed by one shared Informers and
// writes through the tenant's own API server (LocalClient), so admission,
// validation, managedFields and watches see its writes as any client's.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vkube/apiserver/apiserver.h"
#include "vkube/controllers/informers.h"
#include "vkube/storage/backend.h"

namespace vkube::controllers {

struct ManagerOptions {
  // Controllers to run: names as in kube-controller-manager --controllers
  // ("namespace", "garbage-collector", "deployment", "replicaset", ...).
  // Empty: all of them.
  std::vector<std::string> controllers;
  // PEM of the tenant's CA: the kube-root-ca.crt ConfigMap of every namespace.
  std::string root_ca_pem;
  // The CA the API server trusts for client certificates (certificate and
  // private key PEM): the kubernetes.io/kube-apiserver-client signer issues
  // approved CertificateSigningRequests with it. No key: they stay pending.
  std::string client_ca_cert_pem;
  std::string client_ca_key_pem;
  // The default/kubernetes Service: its cluster IP is the first address of
  // `service_cidr`; its endpoints name the API server at api_address (an
  // IPv4 address) and api_port. No address: the Service is not kept.
  std::string service_cidr = "10.96.0.0/12";
  std::string api_address;
  int api_port = 0;
  // The wall clock (tests inject one; CronJob schedules and durations read it).
  std::function<std::chrono::system_clock::time_point()> now;
  // Worker threads of each controller's queue.
  int workers = 2;
  // Components that share the manager's informers (the host's scheduler and
  // simulated nodes): each is called once the controllers registered their
  // caches and handlers, before the informers start, to register its own.
  std::vector<std::function<void(Informers&)>> attach;
};

class ControllerManager {
 public:
  // Starts the informers and every selected controller. `store` is the
  // backend the API server writes to (its watch cache); both outlive the
  // manager. Returns once the initial state is listed.
  static Result<std::unique_ptr<ControllerManager>> start(apiserver::ApiServer& api,
                                                          storage::Backend& store,
                                                          ManagerOptions options = {});
  virtual ~ControllerManager() = default;
  // Stops the controllers' workers and the informers. Idempotent.
  virtual void stop() = 0;
  // Blocks until the informers have seen every write made so far and every
  // controller queue is empty and idle (tests and benchmarks); false on timeout.
  virtual bool wait_idle(std::chrono::milliseconds timeout) = 0;
};

// The names ManagerOptions::controllers accepts.
const std::vector<std::string>& controller_names();

}  // namespace vkube::controllers
