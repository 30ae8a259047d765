// How the API server reaches the HTTPS servers its configurations name: admission webhooks,
// CRD conversion webhooks and aggregated API servers. A clientConfig names a URL, or a Service
// of this cluster, which is reached at its endpoints (in a tenant those are the addresses of
// the synced host pods behind the Service's host copy), as kube-apiserver routes to endpoints.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/hostclient/client.h"

namespace vkube::apiserver {

class Server;

// admissionregistration/apiextensions WebhookClientConfig, and an APIService's service.
struct ClientConfig {
  std::string url;  // https://host[:port][/path][?query]; empty: the Service below
  std::string service_namespace, service_name, service_path;
  int service_port = 443;
  std::string ca_pem;                 // the decoded caBundle; empty: the system roots
  bool insecure_skip_verify = false;  // APIService spec.insecureSkipTLSVerify
};

// Reads a clientConfig object of any shape (caBundle base64, port defaulted to 443).
ClientConfig parse_client_config(const nlohmann::json& client_config);

// Where one call goes.
struct Destination {
  std::string server;       // https://ip:port actually dialled
  std::string server_name;  // the name the certificate must carry (svc.ns.svc for a Service)
  std::string url;          // as kube shows it in errors: https://svc.ns.svc:443/path?query
  std::string target;       // path?query sent on the wire
};

// Resolves `cfg` for a call to `path` (a Service's path, or the URL's when empty), with
// `query` ("timeout=10s", or empty) appended. kNotFound "service \"x\" not found" or "service
// \"x\" has no port N"; kUnavailable "no endpoints available for service \"x\"".
// Thread-safe; reads the Service and its Endpoints from storage.
Result<Destination> resolve_destination(Server& s, const ClientConfig& cfg, const std::string& path,
                                        const std::string& query);

// A client for `d` (kept and shared: each keeps its connections and TLS session, so a server
// called on every request does not pay a handshake each time), verifying the certificate
// against cfg.ca_pem unless cfg.insecure_skip_verify. No retries. Thread-safe.
Result<std::shared_ptr<hostclient::Client>> dial_client(const Destination& d,
                                                        const ClientConfig& cfg,
                                                        int timeout_seconds,
                                                        const std::string& user_agent);

// Kube's wording of a transport failure ("context deadline exceeded" for a timeout).
std::string transport_error(const hostclient::Response& r);

}  // namespace vkube::apiserver
