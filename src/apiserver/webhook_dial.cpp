#include "webhook_dial.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "object.h"
#include "server_impl.h"
#include "tables_util.h"
#include "vkube/common/base64.h"

namespace vkube::apiserver {

namespace {

using json = nlohmann::json;

// Tolerant readers: configurations and stored objects may have any shape.
std::string text(const json& obj, std::string_view key) {
  return builtin::tables::str(obj, {key});
}
const json& items(const json& obj, std::string_view key) {
  return builtin::tables::array(obj, {key});
}
std::optional<int64_t> integer(const json& obj, std::string_view key) {
  return builtin::tables::opt_integer(obj, {key});
}

// Clients by everything that makes them differ; bounded, so configurations a tenant writes
// cannot grow it without limit.
struct ClientCache {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<hostclient::Client>> clients;
};

ClientCache& cache() {
  static ClientCache c;
  return c;
}

// https://ip:port of a ready endpoint of the Service's `port`, or its cluster IP while the
// Service has no Endpoints object at all.
Result<std::string> service_address(Server& s, const std::string& ns, const std::string& name,
                                    int port) {
  const Kind* svc_kind = s.registry().builtin("", "v1", "services");
  const Kind* ep_kind = s.registry().builtin("", "v1", "endpoints");
  if (svc_kind == nullptr || ep_kind == nullptr) return Status::internal("no services kind");
  auto svc_kv = s.backend().get(Registry::key(*svc_kind, ns, name));
  if (!svc_kv.is_ok()) return Status::not_found("service \"" + name + "\" not found");
  auto svc = decode_stored(*svc_kv);
  if (!svc.is_ok()) return svc.status();
  const json& spec = builtin::tables::object(*svc, {"spec"});
  std::optional<std::string> port_name;  // the Service port's name ("" when unnamed)
  for (const json& p : items(spec, "ports"))
    if (integer(p, "port") == port) port_name = text(p, "name");
  if (!port_name)
    return Status::not_found("service \"" + name + "\" has no port " + std::to_string(port));
  auto ep_kv = s.backend().get(Registry::key(*ep_kind, ns, name));
  if (!ep_kv.is_ok()) {
    const std::string ip = text(spec, "clusterIP");
    if (ip.empty() || ip == "None")
      return Status::unavailable("no endpoints available for service \"" + name + "\"");
    return "https://" + ip + ":" + std::to_string(port);
  }
  auto ep = decode_stored(*ep_kv);
  if (!ep.is_ok()) return ep.status();
  std::vector<std::string> choices;
  for (const json& subset : items(*ep, "subsets")) {
    int target_port = 0;
    for (const json& p : items(subset, "ports"))
      if (text(p, "name") == *port_name && integer(p, "port"))
        target_port = static_cast<int>(*integer(p, "port"));
    if (target_port == 0) continue;
    for (const json& a : items(subset, "addresses")) {
      std::string ip = text(a, "ip");
      if (ip.empty()) continue;
      if (ip.find(':') != std::string::npos) ip = "[" + ip + "]";
      choices.push_back("https://" + ip + ":" + std::to_string(target_port));
    }
  }
  if (choices.empty())
    return Status::unavailable("no endpoints available for service \"" + name + "\"");
  static std::atomic<size_t> next{0};
  return choices[next++ % choices.size()];
}

}  // namespace

ClientConfig parse_client_config(const json& cc) {
  ClientConfig c;
  c.url = text(cc, "url");
  const json& svc = builtin::tables::object(cc, {"service"});
  c.service_namespace = text(svc, "namespace");
  c.service_name = text(svc, "name");
  c.service_path = text(svc, "path");
  if (auto port = integer(svc, "port")) c.service_port = static_cast<int>(*port);
  if (auto ca = base64_decode(text(cc, "caBundle"))) c.ca_pem = *ca;
  return c;
}

Result<Destination> resolve_destination(Server& s, const ClientConfig& cfg, const std::string& path,
                                        const std::string& query) {
  Destination d;
  if (!cfg.url.empty()) {
    const auto scheme = cfg.url.find("://");
    std::string rest = cfg.url.substr(scheme == std::string::npos ? 0 : scheme + 3);
    const auto slash = rest.find('/');
    const std::string hostport = rest.substr(0, slash);
    std::string p = !path.empty() ? path : slash == std::string::npos ? "/" : rest.substr(slash);
    d.server = "https://" + hostport;
    std::string host = hostport;
    if (!host.empty() && host[0] == '[')
      host = host.substr(1, host.find(']') - 1);
    else if (auto colon = host.rfind(':'); colon != std::string::npos)
      host = host.substr(0, colon);
    d.server_name = host;
    d.target = query.empty() ? p : p + (p.find('?') == std::string::npos ? "?" : "&") + query;
    d.url = "https://" + hostport + d.target;
    return d;
  }
  std::string p = !path.empty() ? path : cfg.service_path.empty() ? "/" : cfg.service_path;
  d.server_name = cfg.service_name + "." + cfg.service_namespace + ".svc";
  d.target = query.empty() ? p : p + "?" + query;
  d.url = "https://" + d.server_name + ":" + std::to_string(cfg.service_port) + d.target;
  auto address = service_address(s, cfg.service_namespace, cfg.service_name, cfg.service_port);
  if (!address.is_ok()) return address.status();
  d.server = std::move(address).value();
  return d;
}

Result<std::shared_ptr<hostclient::Client>> dial_client(const Destination& d,
                                                        const ClientConfig& cfg,
                                                        int timeout_seconds,
                                                        const std::string& user_agent) {
  const std::string key = d.server + "\n" + d.server_name + "\n" + std::to_string(timeout_seconds) +
                          "\n" + user_agent + "\n" +
                          (cfg.insecure_skip_verify ? "insecure" : cfg.ca_pem);
  ClientCache& cc = cache();
  std::lock_guard lock(cc.mu);
  if (auto it = cc.clients.find(key); it != cc.clients.end()) return it->second;
  hostclient::Config config;
  config.server = d.server;
  config.ca_pem = cfg.ca_pem;
  config.insecure_skip_verify = cfg.insecure_skip_verify;
  config.tls_server_name = d.server_name;
  hostclient::Options options;
  options.user_agent = user_agent;
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

std::string transport_error(const hostclient::Response& r) {
  std::string why = r.message();
  if (why.find("timed out") != std::string::npos || why.find("deadline") != std::string::npos)
    why = "context deadline exceeded";
  return why;
}

}  // namespace vkube::apiserver
