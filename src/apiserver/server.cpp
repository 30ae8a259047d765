// The handler chain (kube-apiserver's DefaultBuildHandlerChain), in one place:
// panic recovery -> request info -> authn -> impersonation -> in-flight limit
// -> authz -> router -> verb handler.
#include <algorithm>
#include <chrono>

#include "aggregator.h"
#include "authz.h"
#include "codec.h"
#include "custom_resources.h"
#include "definition.h"
#include "field_manager.h"
#include "gpu_quota.h"
#include "inflight.h"
#include "server_impl.h"
#include "service_ips.h"
#include "table.h"
#include "vkube/common/log.h"
#include "watch.h"

namespace vkube::apiserver {

std::unique_ptr<ApiServer> ApiServer::create(Options options) {
  return std::make_unique<Server>(std::move(options));
}

Server::Server(Options options)
    : options_(std::move(options)),
      registry_(options_.metrics_api),
      watches_(std::make_unique<WatchDispatcher>(metrics_)),
      service_ips_(std::make_unique<ServiceIpAllocator>(options_.service_cidr)),
      authorizer_(std::make_unique<Authorizer>(options_.backend)),
      admission_(std::make_unique<Admission>(options_.backend)),
      aggregator_(std::make_unique<Aggregator>()),
      limiter_(std::make_shared<InflightLimiter>(
          InflightLimits{options_.max_requests_inflight, options_.max_mutating_inflight,
                         options_.max_read_bytes_inflight},
          &metrics_)) {
  service_ips_->set_backend(options_.backend);
  if (!options_.gpu_quota.empty() && options_.backend != nullptr) {
    gpu_quota_ = std::make_unique<GpuQuotaAdmission>(
        options_.backend, Registry::storage_prefix(*registry_.builtin("", "v1", "pods")),
        options_.gpu_quota);
  }
  if (options_.backend != nullptr) {
    load_crds(*this);
    aggregator_->sync(*this, /*create_local=*/false);  // made at bootstrap
    aggregator_->start(*this);
  }
}

Server::~Server() {
  shutdown();
  limiter_->detach_metrics();
}

void Server::add_metrics_source(std::function<std::string()> render) {
  std::lock_guard lock(metrics_sources_mu_);
  metrics_sources_.push_back(std::move(render));
}

void Server::serve_path(std::string prefix, http::Handler handler) {
  std::lock_guard lock(metrics_sources_mu_);
  path_handlers_.emplace_back(std::move(prefix), std::move(handler));
}

std::string Server::render_metrics() {
  std::vector<std::function<std::string()>> sources;
  {
    // Rendered outside the lock: a slow source must not hold up another
    // component adding its own.
    std::lock_guard lock(metrics_sources_mu_);
    sources = metrics_sources_;
  }
  std::string out = metrics_.render();
  out += admission_->render_metrics();
  for (const auto& render : sources) {
    out += render();
    if (!out.empty() && out.back() != '\n') out.push_back('\n');
  }
  return out;
}

void Server::shutdown() {
  ready_ = false;
  watches_->shutdown();
  authorizer_->shutdown();
  admission_->shutdown();
  aggregator_->stop();
  if (gpu_quota_) gpu_quota_->shutdown();
}

namespace {

bool is_public_path(std::string_view path) {
  for (std::string_view p : {"/healthz", "/livez", "/readyz", "/version"}) {
    if (path == p || (path.starts_with(p) && path[p.size()] == '/')) return true;
  }
  return false;
}

// A Warning header value (RFC 7234 warn-code 299, quoted-string text).
std::string warning_header(const std::string& text) {
  std::string out = "299 - \"";
  for (char ch : text) {
    // A header cannot hold line breaks or other controls (a multi-line
    // message, e.g. a CEL compile error, would be dropped): fold them.
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      if (out.back() != ' ') out.push_back(' ');
      continue;
    }
    if (ch == '"' || ch == '\\') out.push_back('\\');
    out.push_back(ch);
  }
  return out + "\"";
}

// The deepest nesting of objects and arrays in a JSON (or flow-style YAML)
// text, stopping early past `limit`. Every walker over request bodies
// (merge, validation, printing) may then recurse safely.
size_t nesting_depth(std::string_view text, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
      continue;
    }
    if (ch == '"') in_string = true;
    else if (ch == '{' || ch == '[') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if ((ch == '}' || ch == ']') && depth > 0) --depth;
  }
  return deepest;
}

bool is_mutating(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

// kube's BasicLongRunningRequestCheck: these hold a connection for as long
// as the client wants, so they do not count against the in-flight limit.
bool is_long_running(const RequestInfo& info) {
  if (info.verb == "watch" || info.verb == "proxy") return true;
  const std::string& sub = info.subresource;
  return sub == "attach" || sub == "exec" || sub == "proxy" || sub == "log" || sub == "portforward";
}

// The max-in-flight filter's answer, as kube-apiserver writes it (plain
// text, not a Status: http.Error in its tooManyRequests).
http::Response too_many_requests() {
  http::Response r;
  r.status = 429;
  r.set_header("Content-Type", "text/plain; charset=utf-8");
  r.set_header("X-Content-Type-Options", "nosniff");
  r.set_header("Retry-After", "1");
  r.body = "Too many requests, please try again later.\n";
  return r;
}

http::Response text_response(int code, std::string body) {
  http::Response r;
  r.status = code;
  r.set_header("Content-Type", "text/plain; charset=utf-8");
  r.body = std::move(body);
  return r;
}

}  // namespace

http::Response Server::handle(http::Request& req) {
  http::Response r = http::DeferredResponse::wait(serve(req));
  // An in-process caller reads `body`.
  if (r.shared_body) {
    r.body = *r.shared_body;
    r.shared_body.reset();
  }
  return r;
}

http::Response Server::serve(http::Request& req) {
  const auto start = std::chrono::steady_clock::now();
  RequestInfo info = parse_request_info(req);
  http::Response resp;
  try {
    resp = chain(req, info);
  } catch (const std::exception& e) {
    // Panic recovery: a bug in a handler fails one request, never the server.
    VKUBE_LOG(error, "handler failed", {"path", req.path}, {"error", e.what()});
    resp = error_response(Status::internal(std::string("internal error: ") + e.what()));
  }
  // kube encodes its API answers (errors included) as YAML for a client
  // that prefers it; /version and /openapi are JSON whatever it asks.
  if (prefers_yaml(req.header("Accept")) &&
      (req.path == "/api" || req.path == "/apis" || req.path.starts_with("/api/") ||
       req.path.starts_with("/apis/")))
    http::DeferredResponse::finally(resp, [](http::Response& r) { encode_yaml_response(r); });
  std::string resource = info.resource;
  if (!info.subresource.empty()) resource += "/" + info.subresource;
  // A deferred answer is counted when it completes.
  http::DeferredResponse::finally(
      resp, [this, start, verb = info.is_resource_request ? info.verb : "nonresource",
             resource = std::move(resource), path = req.path](http::Response& r) {
        double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        metrics_.observe(verb, resource, r.status, secs);
        if (r.stream == nullptr)
          VKUBE_LOG(debug, "request", {"verb", verb}, {"path", path}, {"code", r.status},
                    {"ms", secs * 1000});
      });
  return resp;
}

bool Server::serves_without_blocking(const http::Request& req) {
  if (req.method != "GET" && req.method != "POST") return false;
  RequestInfo info = parse_request_info(req);
  if (!info.is_resource_request || !info.subresource.empty()) return false;
  if (info.verb == "get") return true;  // one object, from memory or RocksDB's cache
  if (info.verb != "create") return false;
  // Webhooks are called from the handler: not on the I/O thread.
  if (admission_->active()) return false;
  // Only the creates whose commit create_object() defers (bindings have a
  // handler of their own, which waits): anything else would sync on the I/O
  // thread. Its answer must be the stored object (JSON, or protobuf encoded
  // once), and a custom resource may be stored in another version than the
  // one created.
  if (wants_table(req.header("Accept"))) return false;
  std::shared_ptr<const KindSet> kinds = registry_.snapshot();
  const Kind* kind = kinds->find(info.group, info.version, info.resource);
  return kind != nullptr && !kind->custom && kind->strategy.handler != builtin::Handler::kBinding &&
         create_may_defer(*this, *kind);
}

http::Response Server::chain(http::Request& req, const RequestInfo& info) {
  std::optional<UserInfo> authenticated = authenticate(options_, req);
  if (!authenticated && !is_public_path(req.path)) {
    return error_response(Status(Code::kUnauthorized, "Unauthorized"));
  }
  UserInfo user = authenticated ? std::move(*authenticated)
                                : UserInfo{std::string(rbac::kAnonymousUser),
                                           {std::string(rbac::kUnauthenticatedGroup)}, ""};
  if (auto err = impersonate(*authorizer_, req, user)) return error_response(*err);

  // The in-flight limit, for network clients: the server's own components
  // call in process, as kube's loopback client does, and are exempt.
  std::shared_ptr<InflightLease> lease;
  std::string list_key;
  if (!is_long_running(info) && !req.remote.empty()) {
    const bool mutating = is_mutating(req.method);
    size_t reserve = 0;
    if (!mutating && info.verb == "list") {
      list_key = req.path + "?limit=" + http::query_param(req.query, "limit").value_or("");
      reserve = limiter_->list_estimate(list_key);
    }
    lease = limiter_->admit(mutating, reserve);
    if (!lease) return too_many_requests();
  }

  // Authorization (RBAC). system:masters skips the policy lookup.
  if (!rbac::is_privileged(user.groups)) {
    rbac::Attributes attrs = request_attributes(req, info, user);
    rbac::Decision d = authorizer_->authorize(attrs);
    if (!d.allowed) return error_response(forbidden(attrs, d.reason));
  }
  // kube-apiserver refuses bodies nested deeper than its decoders allow.
  constexpr size_t kMaxNesting = 1000;
  if (!req.body.empty() && !req.header("Content-Type").starts_with("application/vnd.kubernetes.protobuf") &&
      nesting_depth(req.body, kMaxNesting) > kMaxNesting)
    return error_response(Status::bad_request("the request body nests objects or arrays deeper than " +
                                              std::to_string(kMaxNesting) + " levels"));
  http::Response resp = route(req, info, user);
  if (lease) {
    // In flight, holding its body, until the transport has sent the answer.
    http::DeferredResponse::finally(
        resp, [lease, key = std::move(list_key), limiter = limiter_](http::Response& r) mutable {
          lease->settle(r.body_bytes().size());
          if (!key.empty() && r.status == 200) limiter->learn_list(key, r.body_bytes().size());
          r.lease = std::move(lease);
        });
  }
  return resp;
}

http::Response Server::route(http::Request& req, const RequestInfo& info, const UserInfo& user) {
  std::string_view path = req.path;
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);  // python sends /version/

  // A group version an aggregated API server serves goes there (discovery of it included).
  if (auto proxied = proxy_aggregated(*this, req, info, user)) return std::move(*proxied);
  if (!info.is_resource_request) {
    if (path == "/version") {
      return json_response(200, {{"major", "1"},
                                 {"minor", "32"},
                                 {"gitVersion", options_.version},
                                 {"gitCommit", "vkube"},
                                 {"gitTreeState", "clean"},
                                 {"buildDate", "2026-12-01T00:00:00Z"},
                                 {"goVersion", "n/a (vkube is C++)"},
                                 {"compiler", "gcc"},
                                 {"platform", "linux/amd64"}});
    }
    if (path == "/healthz" || path == "/livez" || path.starts_with("/healthz/") ||
        path.starts_with("/livez/"))
      return text_response(200, "ok");
    if (path == "/readyz" || path.starts_with("/readyz/"))
      return ready() ? text_response(200, "ok") : text_response(500, "[-]storage not ready\nreadyz check failed");
    if (path == "/metrics") {
      http::Response r = text_response(200, render_metrics());
      r.set_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      return r;
    }
    if (path == "/api" || path == "/apis" || path.starts_with("/api/") || path.starts_with("/apis/"))
      return handle_discovery(*this, req, info);
    if (path.starts_with("/openapi/")) return handle_openapi(*this, req);
    if (is_oidc_path(path)) return handle_oidc(*this, path);
    if (path == "/") {
      json paths = json::array({"/api", "/api/v1", "/apis", "/healthz", "/livez", "/metrics",
                                "/openapi/v3", "/readyz", "/version"});
      return json_response(200, {{"paths", paths}});
    }
    http::Handler served;
    {
      std::lock_guard lock(metrics_sources_mu_);
      for (const auto& [prefix, handler] : path_handlers_)
        if (req.path == prefix || (req.path.starts_with(prefix) && req.path[prefix.size()] == '/'))
          served = handler;
    }
    if (served) return served(req);
    return error_response(Status::not_found("the server could not find the requested resource"));
  }

  std::shared_ptr<const KindSet> kinds = registry_.snapshot();
  const Kind* kind = kinds->find(info.group, info.version, info.resource);
  if (kind == nullptr) {
    return error_response(
        {Status::not_found("the server could not find the requested resource"), json::object()});
  }
  const builtin::Strategy& strategy = kind->strategy;
  if (!kind->resource.namespaced && !info.namespace_.empty() && !strategy.is_namespace)
    return error_response(Status::not_found("the server could not find the requested resource"));
  Context ctx{*this, req, info, *kind, user, kinds, {}, {}};
  if (kind->custom && !kind->custom->deprecation_warning.empty())
    ctx.warnings.push_back(kind->custom->deprecation_warning);
  const std::string& sub = info.subresource;
  if (!sub.empty() && !(sub == "status" && kind->resource.status_subresource) &&
      !(sub == "scale" && kind->resource.scale_subresource) &&
      std::find(strategy.subresources.begin(), strategy.subresources.end(), sub) ==
          strategy.subresources.end() &&
      !(strategy.connect && is_pod_connect_subresource(sub)))
    return error_response(Status::not_found("the server could not find the requested resource"));

  http::Response resp;
  const std::string& verb = info.verb;
  // A verb the resource does not serve (deletecollection of namespaces).
  if (sub.empty() && std::find(kind->resource.verbs.begin(), kind->resource.verbs.end(), verb) ==
                         kind->resource.verbs.end())
    return error_response(method_not_supported(kind->resource, verb));
  if (strategy.connect && is_pod_connect_subresource(sub)) return handle_pod_connect(ctx);
  if (sub == "eviction") return handle_eviction(ctx);
  if (sub == "token") {
    if (verb != "create") return error_response(method_not_supported(kind->resource, verb));
    return handle_token_request(ctx);
  }
  using builtin::Handler;
  if (strategy.handler == Handler::kBinding || sub == "binding") resp = handle_binding(ctx);
  else if (strategy.handler == Handler::kReview) resp = handle_review(ctx);
  else if (strategy.handler == Handler::kMetrics) resp = handle_metrics(ctx);
  else if (verb == "get") resp = handle_get(ctx);
  else if (verb == "list") resp = handle_list(ctx);
  else if (verb == "watch" && prefers_yaml(ctx.req.header("Accept")))  // YAML has no stream form
    resp = error_response(Status(Code::kNotAcceptable,
                                 "only the following media types are accepted: "
                                 "application/json;stream=watch, "
                                 "application/vnd.kubernetes.protobuf;stream=watch"));
  else if (verb == "watch") resp = handle_watch(ctx);
  else if (verb == "create") resp = handle_create(ctx);
  else if (verb == "update") resp = handle_update(ctx);
  else if (verb == "patch") resp = handle_patch(ctx);
  else if (verb == "delete") resp = handle_delete(ctx);
  else if (verb == "deletecollection") resp = handle_delete_collection(ctx);
  else resp = error_response(method_not_supported(kind->resource, verb));
  // A CRD write changes what is served: bring the registry (and the CRD's
  // status) up to date before answering, so the kind is served at once.
  if (verb != "get" && verb != "list" && verb != "watch" && !resp.deferred && resp.status < 300 &&
      strategy.defines_kinds) {
    if (verb == "deletecollection") load_crds(*this);
    else sync_crd(*this, info.name.empty() ? ctx.created_name : info.name);
  }
  // The group versions served changed: their Local APIServices follow (aggregator.h).
  if (verb != "get" && verb != "list" && verb != "watch" && !resp.deferred && resp.status < 300 &&
      strategy.defines_kinds)
    aggregator_->changed();
  if (!ctx.warnings.empty()) {
    http::DeferredResponse::finally(resp, [warnings = std::move(ctx.warnings)](http::Response& r) {
      for (const auto& w : warnings) r.headers.push_back({"Warning", warning_header(w)});
    });
  }
  return resp;
}

bool Context::dry_run() const {
  if (options_dry_run) return true;
  auto v = param("dryRun");
  return v && *v == "All";
}

}  // namespace vkube::apiserver
