// Client: the connection pool, retries with backoff, credentials and stop().
// The wire itself is connection.cpp's.
#include "vkube/hostclient/client.h"

#include <strings.h>

#include <atomic>
#include <cctype>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "connection.h"
#include "vkube/common/log.h"

namespace vkube::hostclient {

using detail::Clock;

// The client --------------------------------------------------------------------

namespace {

// timeoutSeconds of a watch target, or 0.
long watch_timeout_seconds(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return 0;
  std::string_view query = target.substr(q + 1);
  constexpr std::string_view kParam = "timeoutSeconds=";
  for (size_t pos = 0; pos < query.size();) {
    auto amp = query.find('&', pos);
    std::string_view part = query.substr(pos, amp == std::string_view::npos ? amp : amp - pos);
    if (part.starts_with(kParam)) {
      try {
        return std::stol(std::string(part.substr(kParam.size())));
      } catch (...) {
        return 0;
      }
    }
    if (amp == std::string_view::npos) break;
    pos = amp + 1;
  }
  return 0;
}

Response decode(const detail::WireResponse& w) {
  Response r;
  r.code = w.code;
  if (!w.body.empty()) {
    r.body = json::parse(w.body, nullptr, false);
    if (!r.body.is_discarded()) return r;
  }
  // Not JSON (a proxy's error page, an empty body): a Status saying so.
  r.body = {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"status", r.ok() ? "Success" : "Failure"},
            {"code", w.code},
            {"message", w.body.empty() ? "HTTP " + std::to_string(w.code) : w.body}};
  return r;
}

bool retried_code(int code) {
  return code == 429 || code == 500 || code == 502 || code == 503 || code == 504;
}

// Retry-After in seconds (the HTTP-date form is not used by API servers).
std::optional<std::chrono::milliseconds> retry_after(const std::string& value) {
  if (value.empty() || value.size() > 6 ||
      value.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::chrono::seconds(std::stol(value));
}

class ClientImpl final : public Client {
 public:
  ClientImpl(Config config, Options options, detail::Endpoint endpoint,
             std::shared_ptr<detail::TlsContext> tls)
      : Client(std::move(config)),
        options_(std::move(options)),
        endpoint_(std::move(endpoint)),
        tls_(std::move(tls)),
        rng_(std::random_device{}()) {}

  ~ClientImpl() override { stop(); }

  Response call(std::string_view method, std::string_view target, const json& body,
                std::string_view content_type) override {
    return do_call(method, target, body, content_type, nullptr);
  }
  Response call_cancellable(std::string_view method, std::string_view target, const json& body,
                            std::string_view content_type, Cancellation& cancel) override {
    return do_call(method, target, body, content_type, &cancel);
  }
  Response watch(std::string_view target, const WatchHandler& handler) override {
    return do_watch(target, handler, nullptr);
  }
  Response watch_cancellable(std::string_view target, const WatchHandler& handler,
                             Cancellation& cancel) override {
    return do_watch(target, handler, &cancel);
  }

  void stop() override {
    std::vector<std::unique_ptr<detail::Connection>> idle;
    std::lock_guard lock(mu_);
    stopped_ = true;
    for (InFlight* f : in_flight_) f->cancel();
    idle.swap(idle_);
  }

  bool reachable() const override { return reachable_.load(); }

  Result<Opened> open(std::string_view method, std::string_view target,
                      const std::vector<std::pair<std::string, std::string>>& headers,
                      std::string_view body) override {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return Status::unavailable("host client stopped");
    }
    const auto timeout =
        std::chrono::duration_cast<std::chrono::milliseconds>(options_.request_timeout);
    const std::string where = "the host cluster at " + config_.server;
    uint16_t port = 0;
    try {
      port = static_cast<uint16_t>(std::stoi(endpoint_.port));
    } catch (...) {
      return Status::invalid("bad port in " + config_.server);
    }
    auto tcp = http::dial_tcp(endpoint_.host, port, timeout);
    if (!tcp.is_ok()) return Status::unavailable(where + " is unreachable: " + tcp.status().message());
    std::unique_ptr<http::Duplex> conn = std::move(tcp).value();
    if (endpoint_.tls) {
      auto tls = http::tls_client(std::move(conn), detail::native_context(*tls_),
                                  endpoint_.verify_name, timeout);
      if (!tls.is_ok())
        return Status::unavailable(where + " is unreachable: " + tls.status().message());
      conn = std::move(tls).value();
    }
    std::vector<std::pair<std::string, std::string>> all = {
        {"Host", endpoint_.host_header}, {"User-Agent", options_.user_agent}};
    std::string token = bearer();
    if (!token.empty()) all.emplace_back("Authorization", "Bearer " + token);
    bool connection_named = false;
    for (const auto& h : headers) {
      connection_named = connection_named || strcasecmp(h.first.c_str(), "Connection") == 0;
      all.push_back(h);
    }
    if (!connection_named) all.emplace_back("Connection", "close");
    conn->set_deadline(Clock::now() + options_.request_timeout);
    Status sent = http::write_request(*conn, method, endpoint_.base_path + std::string(target),
                                      all, body);
    if (!sent.is_ok()) return Status::unavailable(where + ": sending the request: " + sent.message());
    auto head = http::read_response_head(*conn);
    if (!head.is_ok())
      return Status::unavailable(where + ": reading the answer: " + head.status().message());
    reachable_ = true;
    conn->set_deadline(http::Duplex::Clock::time_point::max());
    Opened out;
    out.code = head->status;
    out.headers = std::move(head->headers);
    out.connection = http::with_prefix(std::move(conn), std::move(head->rest));
    return out;
  }

 private:
  // One call or watch while it runs: what stop() and a Cancellation end.
  class InFlight {
   public:
    void cancel() {
      std::lock_guard lock(mu_);
      cancelled_ = true;
      if (conn_ != nullptr) conn_->cancel();
      cv_.notify_all();
    }
    // False when cancelled: the connection must not be used.
    bool attach(detail::Connection* c) {
      std::lock_guard lock(mu_);
      conn_ = c;
      if (cancelled_) c->cancel();
      return !cancelled_;
    }
    void detach() {
      std::lock_guard lock(mu_);
      conn_ = nullptr;
    }
    // Sleeps `d`; false when cancelled first.
    bool sleep(Clock::duration d) {
      std::unique_lock lock(mu_);
      return !cv_.wait_for(lock, d, [&] { return cancelled_; });
    }
    bool cancelled() {
      std::lock_guard lock(mu_);
      return cancelled_;
    }

   private:
    std::mutex mu_;
    std::condition_variable cv_;
    detail::Connection* conn_ = nullptr;
    bool cancelled_ = false;
  };

  // Registers `f` with the client and `cancel` for its lifetime.
  class Registration {
   public:
    Registration(ClientImpl& c, InFlight& f, Cancellation* cancel)
        : client_(c), f_(f), cancel_(cancel) {
      {
        std::lock_guard lock(client_.mu_);
        if (client_.stopped_) f_.cancel();
        client_.in_flight_.insert(&f_);
      }
      if (cancel_ != nullptr) id_ = cancel_->hook([this] { f_.cancel(); });
    }
    ~Registration() {
      if (cancel_ != nullptr) cancel_->unhook(id_);
      std::lock_guard lock(client_.mu_);
      client_.in_flight_.erase(&f_);
    }

   private:
    ClientImpl& client_;
    InFlight& f_;
    Cancellation* cancel_;
    int id_ = -1;
  };

  struct Attempt {
    Response response;
    bool retry = false;
    std::optional<std::chrono::milliseconds> retry_after;
  };

  Response stopped_response() {
    std::lock_guard lock(mu_);
    return detail::failure(stopped_ ? "host client stopped" : "cancelled");
  }

  detail::WireRequest wire(std::string_view method, std::string_view target, const json& body,
                           std::string_view content_type) {
    detail::WireRequest w;
    w.method = std::string(method);
    w.target = endpoint_.base_path + std::string(target);
    w.headers.emplace_back("Accept", "application/json");
    w.headers.emplace_back("User-Agent", options_.user_agent);
    std::string token = bearer();
    if (!token.empty()) w.headers.emplace_back("Authorization", "Bearer " + token);
    if (!body.is_null()) {
      w.headers.emplace_back("Content-Type", std::string(content_type));
      w.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    return w;
  }

  Response do_call(std::string_view method, std::string_view target, const json& body,
                   std::string_view content_type, Cancellation* cancel) {
    InFlight f;
    Registration reg(*this, f, cancel);
    const auto give_up = Clock::now() + options_.retry_for;
    auto backoff = options_.initial_backoff;
    for (;;) {
      if (f.cancelled()) return stopped_response();
      // Built per try: the token may have rotated meanwhile.
      detail::WireRequest req = wire(method, target, body, content_type);
      Attempt a = attempt(f, req);
      if (!a.retry) return std::move(a.response);
      auto now = Clock::now();
      std::chrono::milliseconds wait = a.retry_after.value_or(jittered(backoff));
      backoff = std::min(backoff * 2, options_.max_backoff);
      // The server's Retry-After is not cut short; a backoff is, for one
      // last try at the end of retry_for.
      if (now >= give_up || (a.retry_after && now + wait > give_up)) return std::move(a.response);
      auto d = std::min<Clock::duration>(wait, give_up - now);
      VKUBE_LOG(debug, "host client retrying", {"target", req.target}, {"code", a.response.code},
                {"reason", a.response.message()});
      if (!f.sleep(d)) return stopped_response();
    }
  }

  Attempt attempt(InFlight& f, const detail::WireRequest& req) {
    Attempt a;
    detail::WireResponse w;
    std::optional<detail::Failure> failed;
    // A pooled connection the server closed meanwhile costs no backoff.
    for (int tries = 0; tries < 2; ++tries) {
      std::unique_ptr<detail::Connection> conn =
          tries == 0 ? take() : detail::Connection::make(endpoint_, tls_);
      if (!f.attach(conn.get())) return Attempt{stopped_response(), false, std::nullopt};
      failed = conn->exchange(req, Clock::now() + options_.request_timeout, &w);
      f.detach();
      if (!failed) {
        if (conn->reusable()) give_back(std::move(conn));
        break;
      }
      if (!failed->stale) break;
    }
    if (failed) {
      reachable_ = false;
      if (failed->cancelled) return Attempt{stopped_response(), false, std::nullopt};
      a.response = detail::failure(failed->message);
      a.retry = failed->retryable;
      return a;
    }
    reachable_ = true;
    a.response = decode(w);
    a.retry = retried_code(w.code);
    if (a.retry) a.retry_after = retry_after(w.retry_after);
    return a;
  }

  Response do_watch(std::string_view target, const WatchHandler& handler, Cancellation* cancel) {
    InFlight f;
    Registration reg(*this, f, cancel);
    detail::WireRequest req = wire("GET", target, nullptr, {});
    // The server ends the watch after timeoutSeconds; silence well beyond
    // that means a dead connection.
    long timeout = watch_timeout_seconds(target);
    Clock::duration idle =
        timeout > 0 ? std::chrono::seconds(timeout + 30) : Clock::duration(std::chrono::hours(1));
    std::string pending, bad_line;
    bool handler_ended = false;
    auto on_line = [&](std::string_view line) {
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) return true;
      json event = json::parse(line, nullptr, false);
      if (event.is_discarded() || !event.is_object() || !event["type"].is_string()) {
        bad_line = std::string(line.substr(0, 200));
        return false;
      }
      std::string type = event["type"].get<std::string>();
      if (!handler(type, std::move(event["object"]))) {
        handler_ended = true;
        return false;
      }
      return true;
    };
    detail::WireResponse w;
    std::optional<detail::Failure> failed;
    // A watch starts on a kept-alive connection when one is idle (the list
    // before it just left one): a connection, and its TLS handshake on both
    // sides, fewer per informer. One the server closed meanwhile costs a
    // fresh one, at once.
    for (int tries = 0; tries < 2; ++tries) {
      std::unique_ptr<detail::Connection> conn =
          tries == 0 ? take() : detail::Connection::make(endpoint_, tls_);
      if (!f.attach(conn.get())) return stopped_response();
      w = detail::WireResponse();
      failed = conn->stream(
          req, Clock::now() + options_.request_timeout, idle, &w, [&](std::string_view data) {
            pending.append(data);
            size_t start = 0;
            for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
              if (!on_line(std::string_view(pending).substr(start, nl - start))) return false;
            }
            pending.erase(0, start);
            return true;
          });
      f.detach();
      if (!failed || !failed->stale) break;
    }
    if (failed) {
      reachable_ = false;
      if (failed->cancelled) return stopped_response();
      return detail::failure(failed->message);
    }
    reachable_ = true;
    if (w.code != 200) return decode(w);
    if (!handler_ended && bad_line.empty() && !pending.empty()) on_line(pending);
    if (!bad_line.empty()) return detail::failure("malformed watch event: " + bad_line);
    Response r;
    r.code = 200;
    r.body = json::object();
    return r;
  }

  std::unique_ptr<detail::Connection> take() {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
    }
    return detail::Connection::make(endpoint_, tls_);
  }

  void give_back(std::unique_ptr<detail::Connection> c) {
    std::lock_guard lock(mu_);
    if (stopped_ || idle_.size() >= options_.max_connections) return;
    idle_.push_back(std::move(c));
  }

  // "Equal jitter": half the backoff, plus up to the other half at random,
  // so that many clients retrying together spread out.
  std::chrono::milliseconds jittered(std::chrono::milliseconds d) {
    std::lock_guard lock(rng_mu_);
    auto half = d.count() / 2;
    std::uniform_int_distribution<long long> dist(0, std::max<long long>(half, 0));
    return std::chrono::milliseconds(d.count() - half + dist(rng_));
  }

  // The bearer token: token_file re-read whenever it changed (projected
  // service-account tokens rotate), else config.token.
  std::string bearer() {
    if (config_.token_file.empty()) return config_.token;
    std::lock_guard lock(token_mu_);
    std::error_code ec;
    auto mtime = std::filesystem::last_write_time(config_.token_file, ec);
    auto size = ec ? 0 : std::filesystem::file_size(config_.token_file, ec);
    if (!ec && (mtime != token_mtime_ || size != token_size_ || file_token_.empty())) {
      std::ifstream in(config_.token_file);
      std::stringstream ss;
      ss << in.rdbuf();
      std::string t = ss.str();
      while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
      if (in && !t.empty()) {
        file_token_ = std::move(t);
        token_mtime_ = mtime;
        token_size_ = size;
      }
    }
    return file_token_.empty() ? config_.token : file_token_;
  }

  const Options options_;
  const detail::Endpoint endpoint_;
  const std::shared_ptr<detail::TlsContext> tls_;

  std::mutex mu_;
  bool stopped_ = false;
  std::vector<std::unique_ptr<detail::Connection>> idle_;
  std::set<InFlight*> in_flight_;

  std::mutex token_mu_;
  std::string file_token_;
  std::filesystem::file_time_type token_mtime_{};
  uintmax_t token_size_ = 0;

  std::mutex rng_mu_;
  std::mt19937_64 rng_;
  std::atomic<bool> reachable_{false};
};

}  // namespace

Result<std::unique_ptr<Client>> Client::create(Config config, Options options) {
  auto endpoint = detail::parse_server(config);
  if (!endpoint.is_ok()) return endpoint.status();
  std::shared_ptr<detail::TlsContext> tls;
  if (endpoint->tls) {
    auto made = detail::make_tls_context(config);
    if (!made.is_ok()) return made.status();
    tls = std::move(made).value();
  }
  std::unique_ptr<Client> client = std::make_unique<ClientImpl>(
      std::move(config), std::move(options), std::move(endpoint).value(), std::move(tls));
  return client;
}

}  // namespace vkube::hostclient
