// The API server's shared state and the per-request context handed to the
// verb handlers (one file per verb: create.cpp, get.cpp, list.cpp, ...).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "admission.h"
#include "errors.h"
#include "metrics.h"
#include "registry.h"
#include "request_info.h"
#include "vkube/apiserver/apiserver.h"

namespace vkube::apiserver {

// The rendered OpenAPI v3 documents (openapi.cpp).
struct OpenApiCache {
  std::mutex mu;
  uint64_t generation = 0;  // the registry generation `docs` reflect
  std::map<std::string, std::pair<std::string, std::string>> docs;  // path -> (body, hash)
  std::set<std::string> custom;  // paths of documents with custom kinds
};

class WatchDispatcher;
class Aggregator;
class ServiceIpAllocator;
class Authorizer;
class GpuQuotaAdmission;
class InflightLimiter;

class Server final : public ApiServer {
 public:
  explicit Server(Options options);
  ~Server() override;

  http::Response handle(http::Request& request) override;
  http::Response serve(http::Request& request) override;
  bool serves_without_blocking(const http::Request& request) override;
  void set_ready(bool ready) override { ready_ = ready; }
  void shutdown() override;
  Status ensure_bootstrap_policy() override;
  void add_metrics_source(std::function<std::string()> render) override;
  void serve_path(std::string prefix, http::Handler handler) override;
  void set_pod_connector(std::shared_ptr<PodConnector> connector) override {
    std::lock_guard lock(pod_connector_mu_);
    pod_connector_ = std::move(connector);
  }
  std::shared_ptr<PodConnector> pod_connector() {
    std::lock_guard lock(pod_connector_mu_);
    return pod_connector_;
  }
  void set_metrics_provider(std::shared_ptr<MetricsProvider> provider) override {
    std::lock_guard lock(pod_connector_mu_);
    metrics_provider_ = std::move(provider);
  }
  std::shared_ptr<MetricsProvider> metrics_provider() {
    std::lock_guard lock(pod_connector_mu_);
    return metrics_provider_;
  }

  const Options& options() const { return options_; }
  storage::Backend& backend() { return *options_.backend; }
  const Registry& registry() const { return registry_; }
  Registry& registry() { return registry_; }
  Metrics& metrics() { return metrics_; }
  WatchDispatcher& watches() { return *watches_; }
  ServiceIpAllocator& service_ips() { return *service_ips_; }
  Authorizer& authorizer() { return *authorizer_; }
  // Webhooks and admission policies (admission.h).
  Admission& admission() { return *admission_; }
  // APIServices and the aggregated API servers behind them (aggregator.h).
  Aggregator& aggregator() { return *aggregator_; }
  // nullptr when the tenant has no GPU quota.
  GpuQuotaAdmission* gpu_quota() { return gpu_quota_.get(); }
  bool ready() const { return ready_; }
  OpenApiCache& openapi_cache() { return openapi_cache_; }
  // Serialises CRD status and registry updates (custom_resources.cpp).
  std::mutex& crd_mutex() { return crd_mu_; }
  // Each CRD's group and naming status, by name, for conflict checks
  // without reading every CRD back (guarded by crd_mutex()).
  std::map<std::string, json>& crd_names() { return crd_names_; }

 private:
  http::Response chain(http::Request& req, const RequestInfo& info);
  http::Response route(http::Request& req, const RequestInfo& info, const UserInfo& user);
  // The /metrics text: the server's own metrics, then each source's.
  std::string render_metrics();

  Options options_;
  Registry registry_;
  Metrics metrics_;
  std::unique_ptr<WatchDispatcher> watches_;
  std::unique_ptr<ServiceIpAllocator> service_ips_;
  std::unique_ptr<Authorizer> authorizer_;
  std::unique_ptr<Admission> admission_;
  std::unique_ptr<Aggregator> aggregator_;
  std::unique_ptr<GpuQuotaAdmission> gpu_quota_;
  OpenApiCache openapi_cache_;
  std::mutex crd_mu_;
  std::map<std::string, json> crd_names_;  // guarded by crd_mu_
  std::atomic<bool> ready_{false};
  std::shared_ptr<InflightLimiter> limiter_;  // shared with the leases of answers in flight
  std::mutex metrics_sources_mu_;
  std::vector<std::function<std::string()>> metrics_sources_;  // guarded by metrics_sources_mu_
  // serve_path's handlers (prefix, handler); guarded by metrics_sources_mu_.
  std::vector<std::pair<std::string, http::Handler>> path_handlers_;
  std::mutex pod_connector_mu_;
  std::shared_ptr<PodConnector> pod_connector_;  // guarded by pod_connector_mu_
  std::shared_ptr<MetricsProvider> metrics_provider_;  // guarded by pod_connector_mu_
};

// Everything a verb handler needs about its request.
struct Context {
  Server& server;
  http::Request& req;
  const RequestInfo& info;
  const Kind& kind;
  const UserInfo& user;
  // The registry view `kind` comes from; keeps a custom kind alive for as
  // long as the request (or its watch) runs.
  std::shared_ptr<const KindSet> kinds;

  const api::Resource& resource() const { return kind.resource; }
  std::string key(std::string_view name) const { return Registry::key(kind, info.namespace_, name); }
  // Decoded value of a query parameter.
  std::optional<std::string> param(std::string_view name) const {
    return http::query_param(req.query, name);
  }
  // dryRun=All in the query, or in the DeleteOptions a body carries (a
  // DELETE's, an Eviction's): nothing is persisted.
  bool dry_run() const;
  // The "Warning" headers to add to the response.
  std::vector<std::string> warnings;
  // The name a POST created the object under (generateName resolved).
  std::string created_name;
  // The request's DeleteOptions body said dryRun: ["All"].
  bool options_dry_run = false;
};

// Verb handlers.
http::Response handle_get(Context& c);
http::Response handle_list(Context& c);
http::Response handle_watch(Context& c);
http::Response handle_create(Context& c);
http::Response handle_update(Context& c);
http::Response handle_patch(Context& c);
http::Response handle_delete(Context& c);
http::Response handle_delete_collection(Context& c);
// serviceaccounts/<name>/token (sa_token.cpp).
http::Response handle_token_request(Context& c);
// POST pods/<name>/binding and POST bindings: assigns a pod to a node
// (binding.cpp).
http::Response handle_binding(Context& c);
// pods/log, exec, attach and portforward, through the PodConnector
// (pod_connect.cpp).
bool is_pod_connect_subresource(const std::string& sub);
http::Response handle_pod_connect(Context& c);
// POST pods/<name>/eviction: deletes the pod unless a PodDisruptionBudget
// forbids it (eviction.cpp).
http::Response handle_eviction(Context& c);
// POST of a kind that is never stored (Kind::create_only): the access
// reviews, answered by the authorizer (reviews.cpp).
http::Response handle_review(Context& c);
// GET of metrics.k8s.io nodes and pods, from the MetricsProvider
// (metrics_api.cpp).
http::Response handle_metrics(Context& c);

// Non-resource endpoints.
http::Response handle_discovery(Server& s, const http::Request& req, const RequestInfo& info);
http::Response handle_openapi(Server& s, const http::Request& req);
// Service-account issuer discovery (oidc.cpp).
inline constexpr std::string_view kOidcConfigurationPath = "/.well-known/openid-configuration";
inline constexpr std::string_view kJwksPath = "/openid/v1/jwks";
bool is_oidc_path(std::string_view path);
http::Response handle_oidc(Server& s, std::string_view path);

// Shared steps of the write handlers (write_common.cpp).
// Parses a JSON object body; fills apiVersion/kind when absent (the Python
// client omits them) and checks them against the resource otherwise.
Result<json> decode_body(Context& c);
// fieldValidation (Ignore, Warn (the default) or Strict): unknown fields of
// `obj` and the body's `duplicates` (noted while parsing) become warnings or
// a 400 naming every one; unknown fields are dropped unless Strict refuses
// them (kube never stores a field its types do not have).
Status check_fields(Context& c, json& obj, const std::vector<std::string>& duplicates);
// Whether the request's fieldValidation wants duplicate keys noted.
bool notes_duplicates(const Context& c);
// The options object an admission webhook is shown (CreateOptions, UpdateOptions,
// DeleteOptions): dryRun and fieldManager as the request gave them.
json write_options(const Context& c, const std::string& kind);
// Checks the dryRun parameter ("All" or absent): kube's 422 on the verb's
// options kind (CreateOptions, UpdateOptions, PatchOptions, DeleteOptions).
Status check_dry_run(const Context& c);
// The same check of dryRun values given in `options_kind` (a DeleteOptions
// body, the query), with the causes kubectl prints.
std::optional<ApiError> check_dry_run_values(std::string_view options_kind,
                                             const std::vector<std::string>& values);
// Validates generic metadata and the kind's rules; Invalid error if any.
std::optional<ApiError> validate_object(Context& c, const json& obj, const json* old);
// Pod Security admission (pod_security.cpp) of a create (old null) or update:
// kForbidden with kube's message for a pod that breaks its namespace's enforce
// level, Warning headers for pods and pod templates that break its warn
// level, kInvalid for a namespace with bad pod-security labels.
std::optional<ApiError> admit_pod_security(Context& c, const json& obj, const json* old);
// RuntimeClass admission (runtime_class.cpp) of a pod create: kForbidden when
// spec.runtimeClassName names no RuntimeClass or conflicts with it; otherwise
// sets the class's overhead and merges its node selector and tolerations.
std::optional<ApiError> admit_runtime_class(Context& c, json& pod);
// Admission for writes into a namespace: it must exist and not be terminating.
std::optional<ApiError> admit_namespace(Context& c, const std::string& ns,
                                        const std::string& name);
// The operator's host policy (host_policy_admission.cpp): kForbidden for a
// pod or Service it refuses (on update: only what `old` did not already
// have), warnings for a workload's pod template; nothing without a host.
std::optional<ApiError> admit_host_policy(Context& c, const json& obj, const json* old,
                                          const std::string& name);
// GPU quota admission (gpu_quota.cpp): kForbidden with kube ResourceQuota's
// message for a pod past the tenant's GPU quota; what an admitted pod counts
// is reserved until its write is seen, or release_gpu_quota after it failed.
std::optional<ApiError> admit_gpu_quota(Context& c, const json& pod, const std::string& name);
void release_gpu_quota(Context& c, const json& pod);
// The response for an object read or written: JSON, or a Table when asked.
http::Response object_response(Context& c, int code, json obj);
// Maps a storage error for object `name` of the context's resource.
ApiError storage_error(const Context& c, const Status& s, const std::string& name);
ApiError storage_error(const api::Resource& r, const Status& s, const std::string& name);
// Stores `next` in place of `cur` (after prepare/validation) or deletes it
// when it is being deleted and has no finalizers left. Returns the object
// as stored (moved out of `next`, which is not copied), or nullopt when it
// was deleted (`next` is then the object as last seen, in the storage version).
// `written`, when given, gets the bytes stored (left empty when nothing was).
Result<std::optional<json>> commit_update(Context& c, const std::string& key, const json& cur,
                                          json& next, storage::Revision expected,
                                          std::string* written = nullptr);
// The update strategy: carries over what a client may not change with this
// request (uid, creationTimestamp, status or spec depending on subresource),
// bumps generation, applies defaults.
void prepare_update(Context& c, const json& cur, json& next);

}  // namespace vkube::apiserver

namespace vkube::apiserver {

// Reads the current object of the request (404 when missing).
Result<json> read_object(Context& c, const std::string& name);

// The update loop of PUT and PATCH (kube's GuaranteedUpdate): reads the
// current object, asks `transform` for the next one, checks preconditions,
// prepares, validates and commits; retries on a conflict unless the client
// set a resourceVersion precondition.
using Transform = std::function<Result<json>(const json& current)>;
http::Response guaranteed_update(Context& c, const Transform& transform);

}  // namespace vkube::apiserver
