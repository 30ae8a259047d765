// What every Client shares: Cancellation, Response::message, the default
// cancellable calls, and the server URL.
#include <atomic>
#include <map>
#include <mutex>

#include "connection.h"
#include "vkube/hostclient/client.h"

namespace vkube::hostclient {

// Cancellation ---------------------------------------------------------------

struct Cancellation::State {
  std::mutex mu;
  std::atomic<bool> cancelled{false};
  int next_id = 0;
  std::map<int, std::function<void()>> hooks;
};

Cancellation::Cancellation() : state_(std::make_unique<State>()) {}
Cancellation::~Cancellation() = default;

void Cancellation::cancel() {
  // Hooks run under the lock so that unhook() waits for them.
  std::lock_guard lock(state_->mu);
  if (state_->cancelled.exchange(true)) return;
  for (auto& [id, fn] : state_->hooks) fn();
}

bool Cancellation::cancelled() const {
  return state_->cancelled.load();
}

int Cancellation::hook(std::function<void()> fn) {
  std::lock_guard lock(state_->mu);
  if (state_->cancelled.load()) {
    fn();
    return -1;
  }
  int id = state_->next_id++;
  state_->hooks.emplace(id, std::move(fn));
  return id;
}

void Cancellation::unhook(int id) {
  std::lock_guard lock(state_->mu);
  state_->hooks.erase(id);
}

// Response and the defaults of Client -----------------------------------------

std::string Response::message() const {
  if (body.is_object()) {
    auto m = body.find("message");
    if (m != body.end() && m->is_string()) return m->get<std::string>();
  }
  if (body.is_string()) return body.get<std::string>();
  return body.is_null() ? std::string() : body.dump();
}

namespace detail {

Response failure(std::string message) {
  Response r;
  r.body = {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"status", "Failure"},
            {"message", std::move(message)}};
  return r;
}

}  // namespace detail

Response Client::call_cancellable(std::string_view method, std::string_view target,
                                  const json& body, std::string_view content_type,
                                  Cancellation& cancel) {
  if (cancel.cancelled()) return detail::failure("cancelled");
  return call(method, target, body, content_type);
}

Result<Client::Opened> Client::open(std::string_view, std::string_view,
                                    const std::vector<std::pair<std::string, std::string>>&,
                                    std::string_view) {
  return Status::unavailable("this host client cannot open raw connections");
}

Response Client::watch_cancellable(std::string_view target, const WatchHandler& handler,
                                   Cancellation& cancel) {
  if (cancel.cancelled()) return detail::failure("cancelled");
  Response r = watch(target, [&](std::string_view type, json object) {
    return !cancel.cancelled() && handler(type, std::move(object));
  });
  if (cancel.cancelled()) return detail::failure("cancelled");
  return r;
}

// The server URL ---------------------------------------------------------------

namespace detail {

Result<Endpoint> parse_server(const Config& config) {
  std::string_view url = config.server;
  Endpoint e;
  if (url.starts_with("https://")) {
    url.remove_prefix(8);
  } else if (url.starts_with("http://")) {
    e.tls = false;
    url.remove_prefix(7);
  } else {
    return Status::invalid("server \"" + config.server + "\": not an http(s):// URL");
  }
  auto slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  if (slash != std::string_view::npos) e.base_path = std::string(url.substr(slash));
  while (!e.base_path.empty() && e.base_path.back() == '/') e.base_path.pop_back();
  e.host_header = std::string(authority);
  std::string_view port;
  if (authority.starts_with("[")) {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      return Status::invalid("server \"" + config.server + "\": unbalanced '['");
    e.host = std::string(authority.substr(1, close - 1));
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return Status::invalid("server \"" + config.server + "\": bad port");
      port = rest.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    e.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (e.host.empty()) return Status::invalid("server \"" + config.server + "\": no host");
  if (port.empty()) port = e.tls ? "443" : "80";
  if (port.find_first_not_of("0123456789") != std::string_view::npos || port.size() > 5)
    return Status::invalid("server \"" + config.server + "\": bad port");
  e.port = std::string(port);
  e.verify_name = config.tls_server_name.empty() ? e.host : config.tls_server_name;
  return e;
}

}  // namespace detail

}  // namespace vkube::hostclient
