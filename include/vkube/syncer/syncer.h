// The syncer: runs a tenant's workloads on the shared host cluster. Tenant
// pods (and the ConfigMaps, Secrets and Services they use) become objects in
// the tenant's host namespace under translated names; the host pods' status,
// the node the host chose and the nodes themselves (as virtual nodes) come
// back to the tenant. One small syncer per kind (STYLE.md §4) over a generic
// loop: look up the tenant object and the host object, then create, update,
// delete or copy back, idempotently, so a restart relists both sides and
// converges without writing what is already right.
//
// The tenant side is the tenant's own informers and API server (in process);
// the host side is only the standard Kubernetes API through
// hostclient::Client, so a real kube-apiserver works as `vkube host` does.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/gpu/translate.h"
#include "vkube/syncer/host_policy.h"

namespace vkube::apiserver {
class ApiServer;
}
namespace vkube::controllers {
class Informers;
}
namespace vkube::hostclient {
class Client;
}

namespace vkube::syncer {

struct SyncerOptions {
  std::string tenant;            // the tenant's name (a DNS label); names host objects
  std::string host_namespace;    // where the tenant's objects live on the host
  bool create_namespace = true;  // create host_namespace when it is missing
  gpu::HostGpuPolicy gpu;        // how GPU requests translate
  std::string dns_ip;            // vkube's DNS for the tenant's pods; empty: the host's
  std::string cluster_domain = "cluster.local";
  // The operator's host policy: scheduler name, queue labels and priority
  // class of every host pod, and what tenant pods and Services may ask of
  // the host (see host_policy.h).
  HostPolicy host_policy;
  // The operator's Pod Security level for the host namespace: set as its
  // enforce label (raised when looser), so the host refuses any pod past it
  // whatever the tenant's own levels. Empty: the label is left as it is.
  std::string host_pod_security = "baseline";
  // On `vkube host`: label the host namespace so that the tenant's pods of
  // the vkube image run as processes of the machine, not sandboxed
  // (vkube.io/unsandboxed-local-pods=true). The operator's choice, for tests.
  bool unsandboxed_local_pods = false;
  // Service account credentials: each tenant service account a pod runs as
  // gets a host Secret with a token for the tenant's API, the tenant's CA
  // (ca_pem) and the namespace, mounted where kube mounts them; host pods
  // reach the tenant's API at api_host:api_port. api_host empty: no
  // credentials are mounted (the pods could not use them).
  std::string tenant_ca_pem;
  std::string api_host;
  int api_port = 443;
  // The host Service (in host_namespace) that fronts the tenant's API: the
  // tenant's default/kubernetes Service takes its cluster IP and port, so
  // clients resolving kubernetes.default.svc reach this tenant. Empty: none.
  std::string api_service;
  // A ResourceQuota the host namespace gets as a backstop of the tenant's GPU
  // quota (see gpu/quota.h); null: none.
  nlohmann::json host_quota = nullptr;
  // Concurrent reconciles at most (host round trips overlap); each loop
  // starts with one thread and adds more while keys wait.
  int pod_workers = 16;
  int other_workers = 4;  // per other kind
  // Every object of both sides is reconciled again this often (0: never),
  // so an event lost on the way is made up for.
  std::chrono::milliseconds resync_period = std::chrono::minutes(1);
};

// Counters for tests, benchmarks and /metrics.
struct SyncerStats {
  uint64_t host_writes = 0;    // creates, updates, patches and deletes sent to the host
  uint64_t tenant_writes = 0;  // status, binding, node and service writes in the tenant
  uint64_t errors = 0;         // failed reconciles (retried)
};

class Syncer {
 public:
  // `host` is the host cluster's client (owned).
  static std::unique_ptr<Syncer> create(SyncerOptions options,
                                        std::unique_ptr<hostclient::Client> host);
  virtual ~Syncer() = default;

  // Before the tenant's informers start: registers the caches and handlers
  // on them and keeps `tenant` for writes.
  virtual void attach(apiserver::ApiServer& tenant, controllers::Informers& informers) = 0;
  // Returns at once; in the background: makes sure the host namespace, the
  // anchor and the quota exist (retrying while the host is unreachable),
  // lists and watches the host, then reconciles everything.
  virtual Status start() = 0;
  virtual void stop() = 0;

  // Both sides listed and the workers running.
  virtual bool ready() const = 0;
  // ready() and no key waiting or being handled (tests, benchmarks).
  virtual bool wait_idle(std::chrono::milliseconds timeout) = 0;
  virtual SyncerStats stats() const = 0;
  // Prometheus text: vkube_syncer_ready, _host_reachable, _writes_total, ...
  virtual std::string metrics() const = 0;
};

}  // namespace vkube::syncer
