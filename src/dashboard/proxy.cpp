// `vkube dashboard`'s proxy: the page from the binary, four reads forwarded.
#include "vkube/dashboard/proxy.h"

#include <arpa/inet.h>

#include <array>
#include <atomic>

#include "vkube/apiserver/apiserver.h"
#include "vkube/common/log.h"
#include "vkube/dashboard/dashboard.h"
#include "vkube/hostclient/client.h"

namespace vkube::dashboard {

namespace {

// Exactly the reads the page makes (DESIGN: its relative URLs), with any
// query string: a list, a label or field selector, a limit.
constexpr std::array<std::string_view, 4> kForwarded = {"/api/v1/nodes", "/api/v1/pods",
                                                        "/api/v1/namespaces", "/metrics"};

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

http::Response refusal(Code code, std::string message) {
  return apiserver::status_response(Status(code, std::move(message)));
}

// The Host header's name and port ("127.0.0.1:8001", "[::1]:8001").
std::pair<std::string, std::string> split_host(std::string_view value) {
  size_t colon = value.rfind(':');
  if (!value.empty() && value.front() == '[') {
    size_t close = value.find(']');
    if (close == std::string_view::npos) return {};
    std::string port = close + 1 < value.size() && value[close + 1] == ':'
                           ? std::string(value.substr(close + 2))
                           : "";
    return {std::string(value.substr(1, close - 1)), port};
  }
  if (colon == std::string_view::npos) return {std::string(value), ""};
  return {std::string(value.substr(0, colon)), std::string(value.substr(colon + 1))};
}

class ProxyImpl final : public Proxy {
 public:
  explicit ProxyImpl(std::unique_ptr<hostclient::Client> host) : host_(std::move(host)) {}
  ~ProxyImpl() override { stop(); }

  Status start(const ListenAddress& listen) {
    http::ServerOptions o;
    o.host = listen.host == "localhost" ? "127.0.0.1" : listen.host;
    o.port = listen.port;
    o.worker_threads = 4;     // one browser tab's reads
    o.body_limit = 64 << 10;  // nothing is posted
    auto server = http::Server::start(o, [this](http::Request& r) { return handle(r); });
    if (!server.is_ok()) return server.status();
    server_ = std::move(server).value();
    port_ = server_->port();
    return Status::ok();
  }

  uint16_t port() const override { return port_; }

  void stop() override {
    if (server_) server_->shutdown(std::chrono::seconds(1));
    if (host_) host_->stop();
  }

 private:
  http::Response handle(http::Request& req) {
    if (auto local = answer_locally(req, port_)) return std::move(*local);
    std::string target = req.path;
    if (!req.query.empty()) target += "?" + req.query;
    hostclient::Response got = host_->call("GET", target);
    http::Response r;
    if (got.code == 0) {
      VKUBE_LOG(warn, "dashboard: the host did not answer", {"path", req.path},
                {"error", got.message()});
      r = refusal(Code::kUnavailable, got.message());
      r.status = 502;
      return r;
    }
    r.status = got.code;
    // /metrics is text: the client hands a body that is not JSON back as a
    // Status whose message is the text.
    if (req.path == "/metrics" && got.ok() && got.body.is_object() &&
        got.body.value("kind", "") == "Status") {
      r.set_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      r.body = got.body.value("message", "");
    } else {
      r.set_header("Content-Type", "application/json");
      r.body = got.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    r.set_header("X-Content-Type-Options", "nosniff");
    r.set_header("Cache-Control", "no-store");
    return r;
  }

  std::unique_ptr<hostclient::Client> host_;
  std::unique_ptr<http::Server> server_;
  std::atomic<uint16_t> port_{0};  // set once serving; read by handlers
};

}  // namespace

Result<ListenAddress> parse_listen(const std::string& listen) {
  auto [host, port_text] = split_host(listen);
  ListenAddress out;
  out.host = host;
  int port = -1;
  if (!port_text.empty() && port_text.size() <= 5 &&
      port_text.find_first_not_of("0123456789") == std::string::npos)
    port = std::stoi(port_text);
  if (host.empty() || port < 0 || port > 65535)
    return Status::invalid("--listen: want HOST:PORT, e.g. 127.0.0.1:8001, got \"" + listen + "\"");
  if (!is_loopback(host))
    return Status::invalid("--listen: " + host +
                           " is not a loopback address: the dashboard proxy reads the host with "
                           "the kubeconfig's credentials, so it serves this machine only");
  out.port = static_cast<uint16_t>(port);
  return out;
}

std::optional<http::Response> answer_locally(const http::Request& req, uint16_t port) {
  auto [name, port_text] = split_host(req.header("Host"));
  if (!is_loopback(name) || port_text != std::to_string(port))
    return refusal(Code::kForbidden,
                   "the Host header must name this proxy (127.0.0.1:" + std::to_string(port) +
                       " or localhost:" + std::to_string(port) + ")");
  if (req.path == kPath || req.path.starts_with(std::string(kPath) + "/")) return serve_page(req);
  bool forwarded = false;
  for (std::string_view p : kForwarded) forwarded = forwarded || req.path == p;
  if (!forwarded)
    return refusal(Code::kNotFound, "the server could not find the requested resource");
  if (req.method != "GET")
    return refusal(Code::kMethodNotAllowed,
                   "vkube dashboard is read-only: it forwards GET requests only");
  if (auto watch = http::query_param(req.query, "watch");
      watch && *watch != "false" && *watch != "0")
    return refusal(Code::kBadRequest, "vkube dashboard does not forward watches");
  return std::nullopt;
}

Result<std::unique_ptr<Proxy>> Proxy::start(const ListenAddress& listen,
                                            std::unique_ptr<hostclient::Client> host) {
  auto proxy = std::make_unique<ProxyImpl>(std::move(host));
  VKUBE_RETURN_IF_ERROR(proxy->start(listen));
  return std::unique_ptr<Proxy>(std::move(proxy));
}

}  // namespace vkube::dashboard
