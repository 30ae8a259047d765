// One tenant control plane in this process: store, API server, transport,
// certificates and kubeconfig, bootstrap objects and background loops.
// `vkube serve` runs one; `vkube host` and `vkube up` build on it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vkube/common/status.h"

namespace vkube::apiserver {
class ApiServer;
}
namespace vkube::controllers {
class Informers;
}
namespace vkube::syncer {
struct HostPolicy;
}

namespace vkube::cli {

// More in-process parts on the tenant's informers (the host's scheduler and
// simulated nodes). `attach` registers their caches and handlers before the
// informers start; `start` runs them once the controllers run; `stop` comes
// before the controllers and the store stop.
struct Component {
  std::string name;
  // Told the tenant's URL once it serves, before attach (may be empty).
  std::function<void(const std::string& url)> serving;
  std::function<void(apiserver::ApiServer&, controllers::Informers&)> attach;
  std::function<Status()> start;
  std::function<void()> stop;
};

struct TenantOptions {
  std::string data_dir;
  std::string listen = "127.0.0.1:6443";  // HOST:PORT; port 0 picks a free one
  std::vector<std::string> tls_sans;      // extra serving-certificate names
  std::string name = "vkube";             // kubeconfig cluster/context name
  bool sync = true;                       // durable writes
  // kube-apiserver's static token file (token,user,uid,"group1,group2");
  // empty: only the admin certificate authenticates.
  std::string token_auth_file;
  // JWS algorithm of service-account tokens: "ES256" (P-256) or "RS256";
  // the key is DATA_DIR/pki/service-account-<alg>.key, made on first start.
  std::string service_account_signing_alg = "ES256";
  // Pod Security level of namespaces without the enforce label: tenants are
  // "baseline" (no privileged pods reach the shared host); the host itself
  // runs what its operators deploy.
  std::string pod_security = "baseline";
  // Where Services get cluster IPs (--service-cluster-ip-range, checked by
  // apiserver::parse_service_cidr); its first address is default/kubernetes's.
  std::string service_cidr = "10.96.0.0/12";
  // The tenant's GPU quota, as --gpu-quota (gpu::parse_gpu_quota); empty: none.
  std::string gpu_quota;
  // The API server's in-flight limits (apiserver::Options; 0: none).
  size_t max_requests_inflight = 400;
  size_t max_mutating_inflight = 200;
  size_t max_read_bytes_inflight = 128u << 20;
  // The operator's host policy, checked at admission (only with a host).
  std::shared_ptr<const syncer::HostPolicy> host_policy;
  // Serve metrics.k8s.io: only where something measures (the host's node
  // agent, or a syncer that asks the host); apiserver::Options::metrics_api.
  bool metrics_api = false;
  std::vector<Component> components;
};

class Tenant {
 public:
  // Starts everything; returns once /readyz answers 200.
  static Result<std::unique_ptr<Tenant>> start(const TenantOptions& options);
  virtual ~Tenant() = default;

  virtual uint16_t port() const = 0;
  virtual std::string url() const = 0;
  virtual std::string kubeconfig_path() const = 0;
  // Stops serving (in-flight requests get `grace`), then closes the store.
  virtual void stop(std::chrono::milliseconds grace) = 0;
};

}  // namespace vkube::cli
