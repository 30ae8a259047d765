#include "connection.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <memory>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "tls_context.h"
#include "vkube/common/dial_policy.h"

namespace vkube::hostclient::detail {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

// A whole answer is held in memory; lists are paged, so this only guards
// against a runaway server.
constexpr uint64_t kMaxBody = uint64_t{1} << 30;
constexpr size_t kStreamBuffer = 64 * 1024;

bool is_ip(const std::string& host) {
  error_code ec;
  (void)asio::ip::make_address(host, ec);
  return !ec;
}

// Each connection owns an io_context that only the thread using the
// connection runs, one operation at a time, with a deadline. cancel() from
// another thread stops that io_context, which ends the wait at once; the
// interrupted operation is abandoned with the connection (its handler is
// destroyed, never invoked, since the io_context never runs again).
class BeastConnection final : public Connection {
 public:
  BeastConnection(const Endpoint& endpoint, std::shared_ptr<TlsContext> tls)
      : endpoint_(endpoint), tls_ctx_(std::move(tls)) {
    if (tls_ctx_)
      tls_.emplace(ioc_, tls_ctx_->ctx);
    else
      tcp_.emplace(ioc_);
  }

  std::optional<Failure> exchange(const WireRequest& req, Clock::time_point deadline,
                                  WireResponse* out) override {
    const bool reused = exchanges_ > 0;
    if (auto f = send(req, deadline, reused)) return f;
    bhttp::response_parser<bhttp::string_body> p;
    p.body_limit(kMaxBody);
    std::optional<error_code> done;
    on_stream([&](auto& s) {
      bhttp::async_read(s, buffer_, p, [&](error_code ec, size_t) { done = ec; });
    });
    if (error_code ec = wait(done, deadline)) {
      Failure f = fail(ec, "reading the answer of");
      f.stale = reused && !p.got_some() && !f.cancelled && ec != asio::error::timed_out;
      return f;
    }
    auto& res = p.get();
    fill(res, out);
    out->body = std::move(res.body());
    keep_alive_ = res.keep_alive();
    ++exchanges_;
    return std::nullopt;
  }

  std::optional<Failure> stream(const WireRequest& req, Clock::time_point deadline,
                                Clock::duration idle, WireResponse* out,
                                const std::function<bool(std::string_view)>& on_data) override {
    if (auto f = send(req, deadline, false)) return f;
    // A stream ends with its connection.
    keep_alive_ = false;
    bhttp::response_parser<bhttp::buffer_body> p;
    p.body_limit(boost::none);
    std::optional<error_code> done;
    on_stream([&](auto& s) {
      bhttp::async_read_header(s, buffer_, p, [&](error_code ec, size_t) { done = ec; });
    });
    if (error_code ec = wait(done, deadline)) return fail(ec, "reading the answer of");
    fill(p.get(), out);
    if (out->code != 200) {
      bhttp::response_parser<bhttp::string_body> whole(std::move(p));
      whole.body_limit(kMaxBody);
      done.reset();
      on_stream([&](auto& s) {
        bhttp::async_read(s, buffer_, whole, [&](error_code ec, size_t) { done = ec; });
      });
      if (error_code ec = wait(done, deadline)) return fail(ec, "reading the answer of");
      out->body = std::move(whole.get().body());
      return std::nullopt;
    }
    std::vector<char> buf(kStreamBuffer);
    while (!p.is_done()) {
      p.get().body().data = buf.data();
      p.get().body().size = buf.size();
      done.reset();
      on_stream([&](auto& s) {
        bhttp::async_read_some(s, buffer_, p, [&](error_code ec, size_t) { done = ec; });
      });
      error_code ec = wait(done, Clock::now() + idle);
      if (ec == bhttp::error::need_buffer) ec = {};
      size_t n = buf.size() - p.get().body().size;
      if (n > 0 && !on_data(std::string_view(buf.data(), n))) return std::nullopt;
      if (ec) return fail(ec, "reading the stream of");
    }
    return std::nullopt;
  }

  void cancel() override {
    cancelled_ = true;
    ioc_.stop();
  }

  bool reusable() const override { return connected_ && !broken_ && keep_alive_ && !cancelled_; }

 private:
  template <typename F>
  void on_stream(F&& f) {
    if (tls_)
      f(*tls_);
    else
      f(*tcp_);
  }

  beast::tcp_stream& lowest() { return tls_ ? beast::get_lowest_layer(*tls_) : *tcp_; }

  // Runs what was started on ioc_ until it completes (its error), `deadline`
  // passes (timed_out) or cancel() (operation_aborted).
  error_code wait(const std::optional<error_code>& done, Clock::time_point deadline) {
    ioc_.restart();
    // Not run_until(deadline): asio caps each of its waits at one second,
    // which would wake every idle watch (seven per tenant) once a second.
    // A timer ends the wait at the deadline instead. cancel() sets the flag
    // before it stops ioc_: either the loop sees the flag, or run_one()
    // returns 0 for the stop.
    auto expired = std::make_shared<bool>(false);
    asio::steady_timer timer(ioc_, deadline);
    timer.async_wait([expired](const error_code& ec) {
      if (!ec) *expired = true;
    });
    while (!done && !*expired && !cancelled_)
      if (ioc_.run_one() == 0) break;
    timer.cancel();
    if (done) {
      if (*done) broken_ = true;
      return *done;
    }
    broken_ = true;
    return cancelled_ ? error_code(asio::error::operation_aborted)
                      : error_code(asio::error::timed_out);
  }

  Failure fail(const error_code& ec, const std::string& what) {
    broken_ = true;
    Failure f;
    if (cancelled_) {
      f.cancelled = true;
      f.retryable = false;
      f.message = "cancelled";
      return f;
    }
    f.message = what + " " + endpoint_.host_header + ": " +
                (ec == asio::error::timed_out ? std::string("timed out") : ec.message());
    return f;
  }

  std::optional<Failure> send(const WireRequest& req, Clock::time_point deadline, bool reused) {
    if (broken_ || cancelled_) {
      Failure f;
      f.cancelled = cancelled_;
      f.retryable = !cancelled_;
      f.message = cancelled_ ? "cancelled" : "connection broken";
      return f;
    }
    if (!connected_) {
      if (auto f = connect(deadline)) return f;
    }
    bhttp::request<bhttp::string_body> r;
    r.method_string(req.method);
    r.target(req.target);
    r.version(11);
    r.set(bhttp::field::host, endpoint_.host_header);
    for (const auto& [name, value] : req.headers) r.set(name, value);
    r.body() = req.body;
    r.prepare_payload();
    r.keep_alive(true);
    std::optional<error_code> done;
    on_stream(
        [&](auto& s) { bhttp::async_write(s, r, [&](error_code ec, size_t) { done = ec; }); });
    if (error_code ec = wait(done, deadline)) {
      Failure f = fail(ec, "sending to");
      f.stale = reused && !f.cancelled && ec != asio::error::timed_out;
      return f;
    }
    return std::nullopt;
  }

  std::optional<Failure> connect(Clock::time_point deadline) {
    tcp::resolver resolver(ioc_);
    tcp::resolver::results_type results;
    std::optional<error_code> done;
    resolver.async_resolve(endpoint_.host, endpoint_.port,
                           [&](error_code ec, tcp::resolver::results_type r) {
                             done = ec;
                             results = std::move(r);
                           });
    if (error_code ec = wait(done, deadline)) return fail(ec, "resolving");
    // An embedded host's made-up addresses are answered here, not dialled.
    for (const auto& r : results) {
      Status allowed = dial_policy::check(r.endpoint().address().to_string(), r.endpoint().port());
      if (!allowed.is_ok()) {
        Failure f;
        f.retryable = false;
        f.message = allowed.message();
        return f;
      }
    }
    done.reset();
    lowest().async_connect(results, [&](error_code ec, const tcp::endpoint&) { done = ec; });
    if (error_code ec = wait(done, deadline)) return fail(ec, "connecting to");
    error_code ignored;
    lowest().socket().set_option(tcp::no_delay(true), ignored);
    if (tls_) {
      if (auto f = handshake(deadline)) return f;
    }
    connected_ = true;
    return std::nullopt;
  }

  std::optional<Failure> handshake(Clock::time_point deadline) {
    SSL* ssl = tls_->native_handle();
    const std::string& name = endpoint_.verify_name;
    const bool ip = is_ip(name);
    // SNI carries names only (RFC 6066).
    if (!ip) SSL_set_tlsext_host_name(ssl, name.c_str());
    if (tls_ctx_->verify) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      int rc = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                  : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
      if (rc != 1) {
        ERR_clear_error();
        broken_ = true;
        Failure f;
        f.retryable = false;
        f.message = "TLS: cannot verify the server name \"" + name + "\"";
        return f;
      }
    }
    tls_ctx_->offer_session(ssl);
    std::optional<error_code> done;
    tls_->async_handshake(ssl::stream_base::client, [&](error_code ec) { done = ec; });
    error_code ec = wait(done, deadline);
    if (!ec) return std::nullopt;
    tls_ctx_->forget_session();
    Failure f = fail(ec, "TLS handshake with");
    // An OpenSSL error (untrusted certificate, wrong name, no common
    // protocol) repeats on every try; a reset or timeout may not.
    if (!f.cancelled && ec.category() == asio::error::get_ssl_category()) {
      f.retryable = false;
      long verify = SSL_get_verify_result(ssl);
      if (verify != X509_V_OK)
        f.message = "TLS: the certificate of " + endpoint_.host_header +
                    " is not trusted: " + X509_verify_cert_error_string(verify) +
                    " (check the certificate authority and the server name \"" + name + "\")";
    }
    ERR_clear_error();
    return f;
  }

  template <typename Message>
  static void fill(const Message& res, WireResponse* out) {
    out->code = static_cast<int>(res.result_int());
    out->content_type = std::string(res[bhttp::field::content_type]);
    out->retry_after = std::string(res[bhttp::field::retry_after]);
  }

  Endpoint endpoint_;
  std::shared_ptr<TlsContext> tls_ctx_;
  // Declared before the streams: they must go first.
  asio::io_context ioc_;
  std::optional<beast::tcp_stream> tcp_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
  beast::flat_buffer buffer_;
  std::atomic<bool> cancelled_{false};
  bool connected_ = false;
  bool broken_ = false;
  bool keep_alive_ = true;
  int exchanges_ = 0;
};

}  // namespace

std::unique_ptr<Connection> Connection::make(const Endpoint& endpoint,
                                             std::shared_ptr<TlsContext> tls) {
  return std::make_unique<BeastConnection>(endpoint, endpoint.tls ? std::move(tls) : nullptr);
}

}  // namespace vkube::hostclient::detail
