// The Kubernetes-compatible API server of one tenant, above the transport:
// a function from http::Request to http::Response, built as kube-apiserver's
// handler chain (see ../shared/STYLE.md §2). main() wires it to a transport
// and a storage backend.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/gpu/quota.h"
#include "vkube/http/server.h"
#include "vkube/storage/backend.h"

namespace vkube::syncer {
struct HostPolicy;
}

namespace vkube::apiserver {

struct UserInfo {
  std::string name;
  std::vector<std::string> groups;
  std::string uid;
};

// How the API server reaches a pod's containers, as kube-apiserver reaches
// them through the pod's kubelet: the subresources pods/log, pods/exec,
// pods/attach and pods/portforward. A tenant relays them to its synced pod
// on the host; `vkube host` serves them from its node agent.
struct PodRequest {
  std::string subresource;  // "log", "exec", "attach" or "portforward"
  nlohmann::json pod;       // the stored pod
  // The container the request is for (log, exec, attach): the one asked
  // for, or the pod's default; checked to exist. Empty for portforward.
  std::string container;
};

class PodConnector {
 public:
  virtual ~PodConnector() = default;
  // Answers `req` (authorized; the pod exists, is bound to a node, and the
  // container is valid). Runs on a handler thread and may block until the
  // answer's head is known; a stream or an upgrade goes on on threads of
  // its own. Errors are kube Status answers (errors.h's form).
  virtual http::Response connect(const PodRequest& pod, http::Request& req) = 0;
};

// Who serves metrics.k8s.io/v1beta1 (`kubectl top`), as metrics-server does:
// the usage of nodes and pods now. A tenant reads its synced pods' usage
// from the host; `vkube host` measures its local pods' processes.
class MetricsProvider {
 public:
  virtual ~MetricsProvider() = default;
  // NodeMetrics objects: metadata.name (and labels), timestamp, window,
  // usage {cpu, memory}.
  virtual Result<std::vector<nlohmann::json>> node_metrics() = 0;
  // PodMetrics objects of namespace `ns` (empty: every namespace):
  // metadata.name/namespace (and labels), timestamp, window,
  // containers [{name, usage {cpu, memory}}]. Pods without a measurement
  // are left out, as metrics-server leaves them out.
  virtual Result<std::vector<nlohmann::json>> pod_metrics(const std::string& ns) = 0;
};

// `s` as kube's Status answer (code, reason and message), for connectors.
http::Response status_response(const Status& s);

struct Options {
  storage::Backend* backend = nullptr;  // not owned; outlives the server
  // Static bearer tokens: token -> user (see load_token_file). Every
  // authenticated user is also in the group system:authenticated.
  std::map<std::string, UserInfo> tokens;
  // The PEM private key (EC P-256: ES256, RSA: RS256) service-account tokens
  // are signed with (`kubectl create token`) and /openid/v1/jwks publishes;
  // empty or not such a key: the token subresource and the discovery
  // endpoints answer 404 and no service-account token authenticates.
  std::string service_account_key;
  // Accept requests without credentials as system:anonymous (tests only).
  bool allow_anonymous = false;
  std::string version = "v1.32.0";  // gitVersion reported by /version
  // The cluster IP range services get addresses from (kube-apiserver's
  // --service-cluster-ip-range; checked by parse_service_cidr).
  std::string service_cidr = "10.96.0.0/12";
  // Pod Security level of namespaces without the label
  // pod-security.kubernetes.io/enforce: "privileged" (nothing refused),
  // "baseline" (privileged containers, host namespaces, hostPath, hostPorts,
  // extra capabilities and unconfined seccomp refused at create) or
  // "restricted" (baseline plus: no privilege escalation, capabilities
  // dropped to ALL (NET_BIND_SERVICE may be added), non-root, a seccomp
  // profile, and only configMap/csi/downwardAPI/emptyDir/ephemeral/PVC/
  // projected/secret volumes).
  std::string pod_security = "privileged";
  // The tenant's GPU quota (gpu::parse_gpu_quota), enforced at pod create
  // with kube ResourceQuota's 403; empty: none.
  gpu::GpuQuota gpu_quota;
  // The operator's host policy of a tenant with a host (a syncer): pods and
  // Services it refuses are refused at create and update (403), workload
  // templates it refuses get warnings; null: no host, nothing checked.
  std::shared_ptr<const syncer::HostPolicy> host_policy;
  // Requests from the network handled at once before 429 (read-only and
  // mutating; kube's defaults). A request counts until its answer is sent;
  // the server's own in-process calls do not count. 0: no limit.
  size_t max_requests_inflight = 400;
  size_t max_mutating_inflight = 200;
  // Bytes read-only requests may hold at once (a LIST's expected answer
  // while it is built, then each answer's body until sent); a read beyond
  // it gets 429. One answer of any size is served when nothing else holds.
  // 0: no limit.
  size_t max_read_bytes_inflight = 128u << 20;
  // Serve metrics.k8s.io (a MetricsProvider will be set: a host's node
  // agent, or a tenant's syncer). Off, the group is absent from discovery
  // as on a cluster without metrics-server, and `kubectl top` says so,
  // rather than a group whose every request answers 503.
  bool metrics_api = true;
};

class ApiServer {
 public:
  static std::unique_ptr<ApiServer> create(Options options);
  virtual ~ApiServer() = default;

  // Handles one request through the whole chain and returns its answer.
  // Thread-safe.
  virtual http::Response handle(http::Request& request) = 0;
  // handle() for the transport: the answer may come as a DeferredResponse
  // (a create's, once its write commits), and the calling thread does not
  // wait for it.
  virtual http::Response serve(http::Request& request) = 0;
  // True when serve() answers `request` without blocking: at once or with a
  // DeferredResponse, never waiting on storage, so the transport may run it
  // on an I/O thread. Gets of one object and the creates that defer.
  virtual bool serves_without_blocking(const http::Request& request) = 0;
  // Who serves pods/log, exec, attach and portforward (null: they answer
  // that the pod's node cannot be reached). Thread-safe; may change while
  // serving.
  virtual void set_pod_connector(std::shared_ptr<PodConnector> connector) = 0;
  // Who serves metrics.k8s.io (null: it answers 503, as an aggregated API
  // without a backend does). Thread-safe.
  virtual void set_metrics_provider(std::shared_ptr<MetricsProvider> provider) = 0;
  // Marks the server ready (/readyz 200) or not.
  virtual void set_ready(bool ready) = 0;
  // Ends open watches and background loops (before the backend closes).
  virtual void shutdown() = 0;

  // Adds a source of metrics: /metrics answers the server's own metrics
  // followed by the text each source returns, in the order they were added.
  // `render` is called on every scrape, on a request thread, possibly on
  // several at once; it must return Prometheus text exposition format 0.0.4
  // (a newline is added when its text does not end in one) and not throw.
  // The server keeps the function for its lifetime, so whatever it captures
  // must outlive the server or stop being used before it goes. Thread-safe.
  virtual void add_metrics_source(std::function<std::string()> render) = 0;

  // Serves `prefix` and the paths below it ("/dashboard", "/dashboard/...")
  // outside the Kubernetes API, as /metrics is served: requests pass
  // authentication (anonymous: 401) and RBAC as non-resource URLs, then
  // `handler` answers them on a request thread (it must not throw). Paths the
  // server itself serves are not offered. Thread-safe; `handler` is kept for
  // the server's lifetime.
  virtual void serve_path(std::string prefix, http::Handler handler) = 0;

  // Creates the bootstrap RBAC policy objects that are missing (kube's
  // rbac/bootstrap-roles post-start hook): cluster-admin (bound to group
  // system:masters), admin, edit, view, system:discovery, system:basic-user
  // and system:public-info-viewer (bound to system:authenticated, the last
  // also to system:unauthenticated). Existing objects are left as they are.
  // kInternal with the server's answer when a create fails.
  virtual Status ensure_bootstrap_policy() = 0;
};

// A --service-cluster-ip-range value: an IPv4 CIDR ("10.96.0.0/12"; host
// bits are cleared, as Go's ParseCIDR does) with a mask from 12 (kube's
// largest, 2^20 addresses) to 30. Returns the range's first usable address,
// the ClusterIP of the default/kubernetes Service. kInvalid saying why
// (kube-apiserver's words where it has them).
Result<std::string> parse_service_cidr(const std::string& cidr);

// Reads kube-apiserver's --token-auth-file: CSV lines
//   token,user,uid[,"group1,group2"]
// Blank lines are skipped; a later line with the same token wins. kInvalid
// naming the file and line for a line with fewer than three columns, an empty
// token or user, or an unterminated quote; kUnavailable when it cannot be read.
Result<std::map<std::string, UserInfo>> load_token_file(const std::string& path);
// The same, from the file's text (for tests); `path` only names it in errors.
Result<std::map<std::string, UserInfo>> parse_token_file(std::string_view text,
                                                         const std::string& path);

}  // namespace vkube::apiserver
