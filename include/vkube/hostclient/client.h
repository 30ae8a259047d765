// A client of a host cluster's Kubernetes API, for the syncer: only the
// standard API (JSON bodies, list + watch, create/patch/delete), so it works
// against a real kube-apiserver exactly as against `vkube host`. HTTPS with
// the server's certificate verified, a pool of keep-alive connections, and
// retries with backoff on 429, 5xx and transport failures. Boost.Beast stays
// inside src/hostclient (STYLE.md: Beast out of most translation units).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/http/duplex.h"

namespace vkube::hostclient {

using json = nlohmann::json;

// Where the host is and who we are there.
struct Config {
  std::string server;                 // "https://host:port" (http:// for tests only)
  std::string ca_pem;                 // the CA the server's certificate must chain to
  std::string cert_pem, key_pem;      // client certificate, or empty
  std::string token;                  // bearer token, or empty
  std::string token_file;             // bearer token re-read as it rotates (in-cluster)
  bool insecure_skip_verify = false;  // kubeconfig insecure-skip-tls-verify (warned about)
  std::string tls_server_name;        // kubeconfig tls-server-name; empty: the server's host
  std::string ns;                     // the context's namespace; in-cluster: the pod's own
};

// Reads a kubeconfig (certificate-authority[-data], client-certificate[-data],
// client-key[-data], token[File], insecure-skip-tls-verify, tls-server-name,
// the context's namespace); `context` empty: current-context. Relative file
// paths are relative to the kubeconfig's folder. kInvalid naming what is
// missing or malformed; kUnavailable when a file cannot be read.
Result<Config> from_kubeconfig(const std::string& path, const std::string& context = "");
// The in-cluster service account: KUBERNETES_SERVICE_HOST/_PORT and
// `account_dir` (token, ca.crt, namespace).
Result<Config> in_cluster(
    const std::string& account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

struct Options {
  std::string user_agent = "vkube-syncer";
  std::chrono::milliseconds request_timeout{std::chrono::seconds(30)};
  size_t max_connections = 16;  // idle keep-alive connections kept
  // How long call() keeps retrying 429 / 5xx / unreachable before it gives up
  // with the last answer (code 0 for a transport failure).
  std::chrono::milliseconds retry_for{std::chrono::seconds(30)};
  std::chrono::milliseconds initial_backoff{std::chrono::milliseconds(50)};
  std::chrono::milliseconds max_backoff{std::chrono::seconds(5)};
};

struct Response {
  int code = 0;  // HTTP status; 0: the server was not reached / no answer
  json body;     // the decoded answer (an object or a Status); for code 0 a
                 // Status-like {"message": "..."} saying what failed
  bool ok() const { return code >= 200 && code < 300; }
  std::string message() const;  // body.message, or the body's text
};

// What a watch stream delivers, one call per event.
using WatchHandler = std::function<bool(std::string_view type, json object)>;

// Ends the calls and watches given it (call_cancellable, watch_cancellable)
// from another thread, without stopping the whole Client (one Informer's
// stop() among many sharing a client). Thread-safe; cancel() is idempotent
// and final: operations started later end at once.
class Cancellation {
 public:
  Cancellation();
  ~Cancellation();
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  void cancel();
  bool cancelled() const;

  // For Client implementations: `fn` runs on cancel() (at once, on this
  // thread, when already cancelled) until unhook(id). unhook waits for a
  // running `fn`, so what it captures may go away afterwards.
  int hook(std::function<void()> fn);
  void unhook(int id);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

class Client {
 public:
  static Result<std::unique_ptr<Client>> create(Config config, Options options = {});
  virtual ~Client() = default;

  // One request (target = path?query). 429 (with Retry-After), 500, 502, 503,
  // 504 and transport failures are retried with exponential backoff and
  // jitter until options.retry_for passes or stop(); other answers return at
  // once. Thread-safe; calls share the connection pool.
  virtual Response call(std::string_view method, std::string_view target,
                        const json& body = nullptr,
                        std::string_view content_type = "application/json") = 0;

  // A watch (target carries ?watch=1&resourceVersion=...): calls `handler`
  // with each event's type ("ADDED", "MODIFIED", "DELETED", "BOOKMARK",
  // "ERROR") and object, on the calling thread, until the server ends the
  // stream (returns code 200), `handler` returns false, stop() is called, or
  // the request fails (the answer, e.g. 410, or code 0). Not retried: the
  // caller (Informer) decides how to resume. Uses its own connection.
  virtual Response watch(std::string_view target, const WatchHandler& handler) = 0;

  // call() and watch() that also end (code 0) when `cancel` is cancelled.
  // The defaults serve clients that cannot interrupt: they refuse to start
  // once cancelled and end a watch at its next event.
  virtual Response call_cancellable(std::string_view method, std::string_view target,
                                    const json& body, std::string_view content_type,
                                    Cancellation& cancel);
  virtual Response watch_cancellable(std::string_view target, const WatchHandler& handler,
                                     Cancellation& cancel);

  // An exchange whose answer the caller reads itself (a tenant relaying
  // pods/log, exec, attach and port-forward): sends the request on a
  // connection of its own, with the client's credentials and `headers`
  // (Connection: close unless they name one: the connection is never
  // reused), reads the answer's status line and headers within
  // options.request_timeout, and hands the connection over, what came after
  // the head first. Not retried. kUnavailable saying why when the host
  // cannot be reached.
  struct Opened {
    int code = 0;
    std::vector<std::pair<std::string, std::string>> headers;
    std::unique_ptr<http::Duplex> connection;
  };
  virtual Result<Opened> open(std::string_view method, std::string_view target,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              std::string_view body = {});

  // Ends in-flight calls and watches (they return code 0) and makes later
  // calls fail at once. Idempotent.
  virtual void stop() = 0;

  // Whether the last request reached the server (for /readyz).
  virtual bool reachable() const = 0;
  const Config& config() const { return config_; }

 protected:
  explicit Client(Config config) : config_(std::move(config)) {}
  Config config_;
};

}  // namespace vkube::hostclient
