// Calling an admission webhook: where it is (a URL, or a Service of this cluster reached at its
// endpoints: in a tenant those are the addresses of the synced host pods behind the Service's
// host copy), the AdmissionReview exchange over HTTPS with the configuration's caBundle, and
// kube's wording of what went wrong.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>

#include "admission_internal.h"
#include "object.h"
#include "server_impl.h"
#include "vkube/common/base64.h"
#include "vkube/hostclient/client.h"

namespace vkube::apiserver::admission {

namespace {

// Clients by (server, CA, name, timeout): each keeps its connections and TLS session, so a
// webhook called on every write does not pay a handshake each time.
struct ClientCache {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<hostclient::Client>> clients;
};

ClientCache& cache() {
  static ClientCache c;
  return c;
}

Result<std::shared_ptr<hostclient::Client>> client_for(const std::string& server,
                                                       const std::string& ca_pem,
                                                       const std::string& server_name,
                                                       int timeout_seconds) {
  const std::string key = server + "\n" + server_name + "\n" + std::to_string(timeout_seconds) +
                          "\n" + ca_pem;
  ClientCache& cc = cache();
  std::lock_guard lock(cc.mu);
  if (auto it = cc.clients.find(key); it != cc.clients.end()) return it->second;
  hostclient::Config config;
  config.server = server;
  config.ca_pem = ca_pem;
  config.tls_server_name = server_name;
  hostclient::Options options;
  options.user_agent = "kube-apiserver-admission";
  options.request_timeout = std::chrono::seconds(timeout_seconds);
  options.retry_for = std::chrono::milliseconds(0);
  options.max_connections = 4;
  auto made = hostclient::Client::create(std::move(config), options);
  if (!made.is_ok()) return made.status();
  std::shared_ptr<hostclient::Client> client = std::move(made).value();
  if (cc.clients.size() >= 256) cc.clients.clear();
  cc.clients.emplace(key, client);
  return client;
}

// Where a webhook's Service is served: a ready endpoint address of the port the clientConfig
// names (kube-apiserver with endpoint routing), or the cluster IP while the Service has no
// Endpoints object at all.
struct Destination {
  std::string server;       // https://ip:port
  std::string server_name;  // the name the certificate must carry
  std::string url;          // as kube shows it: https://svc.ns.svc:443/path?timeout=10s
  std::string target;       // path?query
};

Result<Destination> resolve(Context& c, const Webhook& w) {
  Destination d;
  const std::string timeout = "timeout=" + std::to_string(w.timeout_seconds) + "s";
  if (!w.url.empty()) {
    // https://host[:port][/path][?query]
    std::string rest = w.url.substr(w.url.find("://") == std::string::npos ? 0
                                                                             : w.url.find("://") + 3);
    auto slash = rest.find('/');
    std::string hostport = rest.substr(0, slash);
    std::string path = slash == std::string::npos ? "/" : rest.substr(slash);
    d.server = "https://" + hostport;
    std::string host = hostport;
    if (!host.empty() && host[0] == '[') host = host.substr(1, host.find(']') - 1);
    else if (auto colon = host.rfind(':'); colon != std::string::npos) host = host.substr(0, colon);
    d.server_name = host;
    d.target = path + (path.find('?') == std::string::npos ? "?" : "&") + timeout;
    d.url = "https://" + hostport + d.target;
    return d;
  }
  const std::string& ns = w.service_namespace;
  const std::string& name = w.service_name;
  std::string path = w.service_path.empty() ? "/" : w.service_path;
  d.server_name = name + "." + ns + ".svc";
  d.target = path + "?" + timeout;
  d.url = "https://" + d.server_name + ":" + std::to_string(w.service_port) + d.target;
  const Kind* svc_kind = c.server.registry().builtin("", "v1", "services");
  const Kind* ep_kind = c.server.registry().builtin("", "v1", "endpoints");
  if (svc_kind == nullptr || ep_kind == nullptr) return Status::internal("no services kind");
  auto svc_kv = c.server.backend().get(Registry::key(*svc_kind, ns, name));
  if (!svc_kv.is_ok()) return Status::not_found("service \"" + name + "\" not found");
  auto svc = decode_stored(*svc_kv);
  if (!svc.is_ok()) return svc.status();
  const json& spec = at(*svc, "spec");
  std::optional<std::string> port_name;  // the Service port's name ("" when unnamed)
  const json& ports = at(spec, "ports");
  if (ports.is_array()) {
    for (const json& p : ports)
      if (at(p, "port").is_number_integer() && at(p, "port").get<int>() == w.service_port)
        port_name = text(p, "name");
  }
  if (!port_name)
    return Status::not_found("service \"" + name + "\" has no port " +
                             std::to_string(w.service_port));
  auto ep_kv = c.server.backend().get(Registry::key(*ep_kind, ns, name));
  if (!ep_kv.is_ok()) {
    const std::string ip = text(spec, "clusterIP");
    if (ip.empty() || ip == "None")
      return Status::unavailable("no endpoints available for service \"" + name + "\"");
    d.server = "https://" + ip + ":" + std::to_string(w.service_port);
    return d;
  }
  auto ep = decode_stored(*ep_kv);
  if (!ep.is_ok()) return ep.status();
  std::vector<std::string> choices;
  for (const json& subset : list_at(*ep, "subsets")) {
    int target_port = 0;
    for (const json& p : list_at(subset, "ports"))
      if (text(p, "name") == *port_name && at(p, "port").is_number_integer())
        target_port = at(p, "port").get<int>();
    if (target_port == 0) continue;
    for (const json& a : list_at(subset, "addresses")) {
      std::string ip = text(a, "ip");
      if (ip.empty()) continue;
      if (ip.find(':') != std::string::npos) ip = "[" + ip + "]";
      choices.push_back("https://" + ip + ":" + std::to_string(target_port));
    }
  }
  if (choices.empty())
    return Status::unavailable("no endpoints available for service \"" + name + "\"");
  static std::atomic<size_t> next{0};
  d.server = choices[next++ % choices.size()];
  return d;
}

// The first of the webhook's admissionReviewVersions vkube speaks, as kube chooses.
std::string review_version(const Webhook& w) {
  for (const std::string& v : w.review_versions)
    if (v == "v1" || v == "v1beta1") return v;
  return "";
}

}  // namespace

json admission_review(Context& c, const Webhook& w, const AdmissionRequest& r,
                      const std::string& uid) {
  const api::Resource& res = c.resource();
  json kind = request_kind(c, r);
  json resource = {
      {"group", res.gv.group}, {"version", resource_version(c, r)}, {"resource", res.plural}};
  // What the client asked for, where a matchPolicy Equivalent rule matched another version.
  const std::string asked = c.info.version.empty() ? res.gv.version : c.info.version;
  json request_kind_value = kind;
  if (r.kind_group_version.empty()) request_kind_value["version"] = asked;
  json request_resource = resource;
  request_resource["version"] = asked;
  json user = {{"username", c.user.name}, {"groups", c.user.groups}};
  if (!c.user.uid.empty()) user["uid"] = c.user.uid;
  json req = {{"uid", uid},
              {"kind", kind},
              {"resource", resource},
              {"requestKind", std::move(request_kind_value)},
              {"requestResource", std::move(request_resource)},
              {"name", r.name},
              {"operation", r.operation},
              {"userInfo", std::move(user)},
              {"object", r.object},
              {"oldObject", r.old_object},
              {"dryRun", c.dry_run()},
              {"options", r.options}};
  if (!r.ns.empty()) req["namespace"] = r.ns;
  if (!r.subresource.empty()) {
    req["subResource"] = r.subresource;
    req["requestSubResource"] = r.subresource;
  }
  std::string v = review_version(w);
  return {{"apiVersion", "admission.k8s.io/" + (v.empty() ? std::string("v1") : v)},
          {"kind", "AdmissionReview"},
          {"request", std::move(req)}};
}

namespace {

WebhookAnswer exchange(Context& c, const Webhook& w, const json& review, int* code) {
  WebhookAnswer a;
  if (review_version(w).empty()) {
    a.error = "webhook does not accept v1 or v1beta1 AdmissionReview";
    return a;
  }
  auto dest = resolve(c, w);
  if (!dest.is_ok()) {
    a.error = "failed to call webhook: Post \"https://" + w.service_name + "." +
              w.service_namespace + ".svc:" + std::to_string(w.service_port) +
              (w.service_path.empty() ? "/" : w.service_path) + "?timeout=" +
              std::to_string(w.timeout_seconds) + "s\": " + dest.status().message();
    return a;
  }
  auto client = client_for(dest->server, w.ca_pem, dest->server_name, w.timeout_seconds);
  if (!client.is_ok()) {
    a.error = "failed to call webhook: " + client.status().message();
    return a;
  }
  hostclient::Response resp = (*client)->call("POST", dest->target, review);
  *code = resp.code;
  if (resp.code == 0) {
    std::string why = resp.message();
    if (why.find("timed out") != std::string::npos || why.find("deadline") != std::string::npos)
      why = "context deadline exceeded";
    a.error = "failed to call webhook: Post \"" + dest->url + "\": " + why;
    return a;
  }
  if (resp.code != 200) {
    a.error = "failed to call webhook: the server responded with status code " +
              std::to_string(resp.code) + ": " + resp.message();
    return a;
  }
  const json& body = resp.body;
  const std::string want_api = text(review, "apiVersion");
  // kube checks the answer's kind and response.uid only for v1: v1beta1 webhooks predate both.
  const bool strict = want_api == "admission.k8s.io/v1";
  if (strict && (text(body, "apiVersion") != want_api || text(body, "kind") != "AdmissionReview")) {
    a.error = "received invalid webhook response: expected webhook response of " + want_api +
              ", Kind=AdmissionReview, got " + text(body, "apiVersion") +
              ", Kind=" + text(body, "kind");
    return a;
  }
  const json& response = at(body, "response");
  const std::string want_uid = text(at(review, "request"), "uid");
  if (!response.is_object()) {
    a.error = "received invalid webhook response: webhook response was absent";
    return a;
  }
  if (strict && text(response, "uid") != want_uid) {
    a.error = "received invalid webhook response: expected response.uid=\"" + want_uid +
              "\", got \"" + text(response, "uid") + "\"";
    return a;
  }
  a.called = true;
  a.allowed = at(response, "allowed").is_boolean() && at(response, "allowed").get<bool>();
  a.status = at(response, "status");
  for (const json& warning : list_at(response, "warnings"))
    if (warning.is_string()) a.warnings.push_back(warning.get<std::string>());
  const std::string patch = text(response, "patch");
  if (w.mutating && !patch.empty() && a.allowed) {
    if (text(response, "patchType") != "JSONPatch") {
      a.called = false;
      a.error = "received invalid webhook response: patchType \"" + text(response, "patchType") +
                "\" is not supported (JSONPatch)";
      return a;
    }
    auto decoded = base64_decode(patch);
    json parsed = decoded ? json::parse(*decoded, nullptr, false) : json();
    if (!parsed.is_array()) {
      a.called = false;
      a.error = "received invalid webhook response: the patch is not a base64-encoded JSON patch";
      return a;
    }
    a.patch = std::move(parsed);
  }
  return a;
}

}  // namespace

WebhookAnswer call_webhook(Context& c, const Webhook& w, const json& review) {
  const auto start = std::chrono::steady_clock::now();
  int code = 0;
  WebhookAnswer a = exchange(c, w, review, &code);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c.server.admission().record_webhook(w.name, w.mutating,
                                      text(at(review, "request"), "operation"), code,
                                      a.called && !a.allowed, seconds);
  return a;
}

}  // namespace vkube::apiserver::admission
