// One HTTP/1.1 connection to the host's API server, plain or TLS, driven
// synchronously by the calling thread but interruptible from any other
// (cancel()). The only place in vkube_hostclient that sees Beast and Asio;
// this header keeps them out of client.cpp and informer.cpp.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vkube/common/status.h"
#include "vkube/hostclient/client.h"

namespace vkube::hostclient::detail {

using Clock = std::chrono::steady_clock;

// Where config.server points.
struct Endpoint {
  bool tls = true;
  std::string host;         // without IPv6 brackets
  std::string port;         // "443" when the URL has none
  std::string host_header;  // as the URL has it: "[::1]:6443"
  std::string base_path;    // a path prefix of the server URL, without the trailing '/'
  std::string verify_name;  // tls_server_name, or host
};

// A code-0 answer: a Status-like body saying what failed.
Response failure(std::string message);

// "https://host:port[/prefix]"; kInvalid when malformed.
Result<Endpoint> parse_server(const Config& config);

// The TLS settings every connection of one client shares (OpenSSL SSL_CTX).
class TlsContext;
// kInvalid for unusable CA, certificate or key PEM.
Result<std::shared_ptr<TlsContext>> make_tls_context(const Config& config);
// Its OpenSSL context, for connections made outside Asio (Client::open).
ssl_ctx_st* native_context(TlsContext& tls);

struct WireRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct WireResponse {
  int code = 0;
  std::string body;
  std::string content_type;
  std::string retry_after;  // the Retry-After header, if any
};

// Why an exchange brought no answer.
struct Failure {
  std::string message;
  // Connect refused, reset, timeout: worth retrying. A certificate the
  // client does not trust is not: it will not change within retry_for.
  bool retryable = true;
  bool cancelled = false;
  // A kept-alive connection the server had already closed, found before any
  // answer arrived: retry at once on a fresh connection.
  bool stale = false;
};

class Connection {
 public:
  static std::unique_ptr<Connection> make(const Endpoint& endpoint,
                                          std::shared_ptr<TlsContext> tls);
  virtual ~Connection() = default;

  // Connects (when not yet connected), sends `req` and reads the whole
  // answer, all before `deadline`. After a failure the connection is broken.
  virtual std::optional<Failure> exchange(const WireRequest& req, Clock::time_point deadline,
                                          WireResponse* out) = 0;
  // As exchange(), but a 200 answer's body is handed to `on_data` as it
  // arrives, waiting up to `idle` for each piece; `on_data` returning false
  // ends the stream early (no failure). Other answers are read whole into
  // out->body. The connection cannot be reused afterwards.
  virtual std::optional<Failure> stream(const WireRequest& req, Clock::time_point deadline,
                                        Clock::duration idle, WireResponse* out,
                                        const std::function<bool(std::string_view)>& on_data) = 0;
  // Interrupts the running operation (it fails with cancelled) and any
  // later one. Thread-safe.
  virtual void cancel() = 0;
  // Whether another request may be sent on this connection (kept alive,
  // nothing failed, not cancelled).
  virtual bool reusable() const = 0;
};

}  // namespace vkube::hostclient::detail
