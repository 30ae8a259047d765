// `vkube dashboard`: a local, read-only HTTP proxy that serves the embedded
// page at /dashboard/ and forwards only the reads the page makes (GET
// /api/v1/nodes, /api/v1/pods, /api/v1/namespaces and /metrics, with their
// query strings) to a host cluster with a kubeconfig's credentials, so the
// page works against any host, `vkube host` or a real cluster, without the
// host serving it. Plain HTTP on loopback only, as `kubectl proxy`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vkube/common/status.h"
#include "vkube/http/server.h"

namespace vkube::hostclient {
class Client;
}

namespace vkube::dashboard {

struct ListenAddress {
  std::string host;  // "127.0.0.1", "::1" or "localhost"
  uint16_t port = 0;
};

// "127.0.0.1:8001", "[::1]:8001", "localhost:0" -> the address. kInvalid for
// a malformed value or a host other than loopback: the proxy holds the
// kubeconfig's credentials and anyone who reaches it reads with them.
Result<ListenAddress> parse_listen(const std::string& listen);

// What the proxy answers itself: its page, and refusals (404 for a path it
// does not forward, 405 for a method other than GET, 400 for a watch, 403
// when the Host header names neither `port` on loopback nor localhost: a
// page of another site reaching the proxy through DNS rebinding). nullopt:
// forward the request to the host. Thread-safe.
std::optional<http::Response> answer_locally(const http::Request& req, uint16_t port);

class Proxy {
 public:
  // Serves on `listen` (port 0: a free port, see port()), forwarding with
  // `host` (owned; its credentials are used for every forwarded read).
  // kInvalid or kUnavailable (address taken) when it cannot serve.
  static Result<std::unique_ptr<Proxy>> start(const ListenAddress& listen,
                                              std::unique_ptr<hostclient::Client> host);
  virtual ~Proxy() = default;

  virtual uint16_t port() const = 0;
  // Stops serving (in-flight reads get a second) and the host client. Idempotent.
  virtual void stop() = 0;
};

}  // namespace vkube::dashboard
