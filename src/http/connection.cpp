// Connection: TLS detection, request reading, handler dispatch and plain
// (Content-Length) responses. Streaming responses are in stream.cpp.
#include "connection.h"

#include <span>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/http/read.hpp>

#include "sink.h"
#include "tls.h"
#include "upgrade.h"
#include "vkube/common/log.h"

namespace vkube::http::detail {
namespace {

namespace http = beast::http;
using tcp = net::ip::tcp;

constexpr size_t kHeaderLimit = 64 * 1024;
constexpr size_t kReadChunk = 8 * 1024;
// How long a closing connection keeps reading (and discarding) what the client
// still sends, so that closing does not reset the connection before the
// client has read our last response (Go's net/http waits 500 ms too).
constexpr auto kLinger = std::chrono::milliseconds(500);
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// Go's net/http writes these bytes itself, below its handlers (server.go);
// clients and probes that tell servers apart by them see the same.
constexpr std::string_view kCleartextOnTls =
    "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
constexpr std::string_view kUnsupportedTransferEncoding =
    "HTTP/1.1 501 Not Implemented\r\nContent-Type: text/plain; charset=utf-8\r\n"
    "Connection: close\r\n\r\nUnsupported transfer encoding";

std::string format_remote(const tcp::socket& socket) {
  error_code ec;
  tcp::endpoint ep = socket.remote_endpoint(ec);
  if (ec) return {};
  net::ip::address address = ep.address();
  // A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d; show a.b.c.d.
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = net::ip::make_address_v4(net::ip::v4_mapped, address.to_v6());
  }
  std::string text = address.to_string();
  if (address.is_v6()) text = "[" + text + "]";
  return text + ":" + std::to_string(ep.port());
}

// Absolute-form targets ("http://host/path?q") are allowed by HTTP/1.1.
std::string_view origin_form(std::string_view target) {
  if (target.empty() || target.front() == '/') return target;
  size_t scheme = target.find("://");
  if (scheme == std::string_view::npos) return target;
  size_t slash = target.find_first_of("/?", scheme + 3);
  if (slash == std::string_view::npos) return "/";
  return target.substr(slash);  // "?q" without a path: dispatch() makes the path "/"
}

bool is_protocol_error(const error_code& ec) {
  if (ec.category() != http::make_error_code(http::error::bad_method).category()) return false;
  return ec != http::error::end_of_stream && ec != http::error::partial_message &&
         ec != http::error::short_read;
}

}  // namespace

// Connection: set-up ------------------------------------------------------------

Connection::Connection(ServerCore& core, tcp::socket socket, std::shared_ptr<IoHome> home)
    : core_(core),
      executor_(socket.get_executor()),
      home_(std::move(home)),
      tcp_(std::move(socket)) {
  remote_ = format_remote(tcp_.socket());
  core_.connection_opened();
}

Connection::~Connection() {
  if (sink_) sink_->detach();
  stop_stream();
  if (open_counted_) core_.connection_closed();
  core_.remove(this);
}

void Connection::arm(std::chrono::seconds timeout) {
  // Only with no read or write pending: Beast applies a deadline to the
  // operations started after it is set.
  if (tls_) {
    if (timeout.count() > 0) {
      tls_->expires_after(timeout);
    } else {
      tls_->expires_never();
    }
  } else if (timeout.count() > 0) {
    tcp_.expires_after(timeout);
  } else {
    tcp_.expires_never();
  }
}

void Connection::start() {
  net::dispatch(executor_, [self = shared_from_this()] {
    if (self->state_ != State::kDetecting) return;
    self->arm(self->core_.options.read_timeout);
    beast::async_detect_ssl(self->tcp_, self->buffer_,
                            beast::bind_front_handler(&Connection::on_detect, self));
  });
}

void Connection::on_detect(error_code ec, bool is_tls) {
  if (state_ != State::kDetecting) return;
  if (ec || core_.stopping) return close_now();
  if (!is_tls) {
    cleartext_on_tls_ = core_.tls != nullptr;
    return read_request();
  }
  if (!core_.tls) {
    VKUBE_LOG(debug, "http: TLS handshake on a plain HTTP server", {"remote", remote_});
    return close_now();
  }
  state_ = State::kHandshaking;
  // The bytes read to detect TLS are OpenSSL's to read first.
  auto seen = buffer_.data();
  tls_.emplace(std::move(tcp_), core_.tls->native_handle(),
               std::string_view(static_cast<const char*>(seen.data()), seen.size()));
  buffer_.clear();
  buffer_.shrink_to_fit();
  if (!tls_->ok()) {
    VKUBE_LOG(error, "http: cannot set up TLS for a connection", {"remote", remote_});
    return close_now();
  }
  arm(core_.options.read_timeout);
  tls_->async_handshake(beast::bind_front_handler(&Connection::on_handshake, shared_from_this()));
}

void Connection::on_handshake(error_code ec) {
  if (state_ != State::kHandshaking) return;
  if (ec) {
    VKUBE_LOG(debug, "http: TLS handshake failed", {"remote", remote_}, {"error", ec.message()});
    return close_now();
  }
  ++core_.tls_handshakes;
  if (SSL_session_reused(tls_->native_handle()) == 1) ++core_.tls_resumptions;
  peer_ = verified_peer(tls_->native_handle());
  if (core_.stopping) return close_now();
  read_request();
}

// Reading a request --------------------------------------------------------------

void Connection::read_next() {
  if (core_.stopping) return close_gracefully();
  if (buffer_.size() > 0) {  // a pipelined request is already here
    arm(core_.options.read_timeout);
    return read_request();
  }
  // Wait for the first byte under the idle timeout; the request itself then
  // gets the read timeout.
  state_ = State::kIdle;
  arm(core_.options.idle_timeout);
  with_stream([&](auto& s) {
    s.async_read_some(buffer_.prepare(kReadChunk),
                      beast::bind_front_handler(&Connection::on_idle_data, shared_from_this()));
  });
}

void Connection::on_idle_data(error_code ec, size_t n) {
  if (state_ != State::kIdle) return;
  if (ec) return close_now();
  buffer_.commit(n);
  arm(core_.options.read_timeout);
  read_request();
}

void Connection::read_request() {
  state_ = State::kReading;
  head_request_ = false;
  http10_ = false;
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  parser_->body_limit(core_.options.body_limit);
  with_stream([&](auto& s) {
    http::async_read_header(s, buffer_, *parser_,
                            beast::bind_front_handler(&Connection::on_header, shared_from_this()));
  });
}

void Connection::on_header(error_code ec, size_t) {
  if (state_ != State::kReading) return;
  if (ec) return on_read_error(ec);
  if (cleartext_on_tls_ && cleartext_refused()) return refuse_cleartext();
  if (transfer_encoding_refused()) return send_raw(kUnsupportedTransferEncoding);
  if (parser_->is_done()) return dispatch();
  auto& req = parser_->get();
  if (req.version() >= 11 && iequals(req[http::field::expect], "100-continue")) {
    // The body fits the limit (a larger Content-Length failed above), so invite it.
    with_stream([&](auto& s) {
      net::async_write(
          s, net::buffer(kContinue.data(), kContinue.size()),
          beast::bind_front_handler(&Connection::on_continue_sent, shared_from_this()));
    });
    return;
  }
  on_continue_sent({}, 0);
}

void Connection::on_continue_sent(error_code ec, size_t) {
  if (state_ != State::kReading) return;
  if (ec) return close_now();
  with_stream([&](auto& s) {
    http::async_read(s, buffer_, *parser_,
                     beast::bind_front_handler(&Connection::on_body, shared_from_this()));
  });
}

void Connection::on_body(error_code ec, size_t) {
  if (state_ != State::kReading) return;
  if (ec) return on_read_error(ec);
  dispatch();
}

void Connection::on_read_error(error_code ec) {
  if (cleartext_on_tls_ && ec != http::error::end_of_stream) {
    // Nothing but a refusal is owed to a cleartext client of a TLS port.
    if (parser_ && parser_->is_header_done()) return refuse_cleartext();
    return close_now();
  }
  // A second Transfer-Encoding field, or one beside Content-Length.
  if (ec == http::error::bad_transfer_encoding) return send_raw(kUnsupportedTransferEncoding);
  if (ec == http::error::body_limit) {
    return send_error(413, "RequestEntityTooLarge",
                      "the request body is too large (limit " +
                          std::to_string(core_.options.body_limit) + " bytes)");
  }
  if (ec == http::error::header_limit) {
    return send_error(
        431, "RequestHeaderFieldsTooLarge",
        "the request header is too large (limit " + std::to_string(kHeaderLimit) + " bytes)");
  }
  if (is_protocol_error(ec)) {
    VKUBE_LOG(debug, "http: malformed request", {"remote", remote_}, {"error", ec.message()});
    return send_error(400, "BadRequest", "malformed HTTP request: " + ec.message());
  }
  close_now();  // end of stream, timeout, reset: nobody to answer
}

bool Connection::cleartext_refused() {
  const auto& req = parser_->get();
  // Credentials must never cross the wire in the clear, whatever the path.
  if (req.find(http::field::authorization) != req.end()) return true;
  const auto& allowed = core_.options.cleartext_allowed;
  return !allowed ||
         !allowed(std::string_view(req.method_string()), std::string_view(req.target()));
}

void Connection::refuse_cleartext() {
  const auto& req = parser_->get();
  // Go answers only when the first five bytes look like one of these
  // requests (tlsRecordHeaderLooksLikeHTTP); anything else just closes.
  std::string_view method = req.method_string(), target = req.target();
  std::string first(method);
  first += ' ';
  first.append(target.substr(0, 4));
  first.resize(std::min<size_t>(first.size(), 5));
  VKUBE_LOG(debug, "http: cleartext request on the TLS port", {"remote", remote_});
  for (std::string_view prefix : {"GET /", "HEAD ", "POST ", "PUT /", "OPTIO"}) {
    if (first == prefix) return send_raw(kCleartextOnTls);
  }
  close_now();
}

bool Connection::transfer_encoding_refused() {
  const auto& req = parser_->get();
  if (req.version() < 11) return false;  // HTTP/1.0 has no transfer-codings; Go ignores the field
  size_t fields = 0;
  bool chunked = false;
  for (const auto& field : req) {
    if (field.name() != http::field::transfer_encoding) continue;
    ++fields;
    std::string_view v = field.value();
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    chunked = iequals(v, "chunked");
  }
  // Go (and nginx) take exactly one field saying exactly "chunked": other
  // codings ("gzip, chunked") are where request smuggling lives.
  return fields > 1 || (fields == 1 && !chunked);
}

void Connection::send_raw(std::string_view bytes) {
  state_ = State::kWriting;
  keep_alive_ = false;
  response_ = Response{};
  head_.assign(bytes);
  arm(core_.options.read_timeout);
  with_stream([&](auto& s) {
    net::async_write(s, net::buffer(head_),
                     beast::bind_front_handler(&Connection::on_written, shared_from_this()));
  });
}

// Running the handler ------------------------------------------------------------

void Connection::dispatch() {
  auto& msg = parser_->get();
  state_ = State::kHandling;
  request_.method.assign(msg.method_string());
  std::string_view target = msg.target();
  request_.target.assign(target);
  target = origin_form(target);
  size_t q = target.find('?');
  request_.path.clear();
  append_percent_decoded(request_.path, target.substr(0, q), false);
  if (request_.path.empty()) request_.path = "/";
  request_.query.assign(q == std::string_view::npos ? std::string_view() : target.substr(q + 1));
  // Reuse the header strings of the previous request on this connection.
  size_t i = 0;
  for (const auto& field : msg) {
    if (i == request_.headers.size()) request_.headers.emplace_back();
    request_.headers[i].name.assign(field.name_string());
    request_.headers[i].value.assign(field.value());
    ++i;
  }
  request_.headers.resize(i);
  request_.body = std::move(msg.body());
  request_.remote = remote_;
  request_.tls = tls_.has_value();
  request_.peer = peer_;
  keep_alive_ = msg.keep_alive() && !core_.stopping;
  http10_ = msg.version() < 11;
  head_request_ = msg.method() == http::verb::head;
  parser_.reset();

  core_.handler_started();
  if (core_.options.runs_inline && !core_.stopping && core_.options.runs_inline(request_)) {
    return run_handler(true);
  }
  core_.workers->post([self = shared_from_this()] { self->run_handler(false); });
}

void Connection::run_handler(bool on_strand) {
  if (core_.abandon) {
    response_ = status_response(503, "ServiceUnavailable", "the server is shutting down");
  } else {
    try {
      response_ = core_.handler(request_);
    } catch (const std::exception& e) {
      VKUBE_LOG(error, "http: handler threw", {"path", request_.path}, {"error", e.what()});
      response_ = status_response(500, "InternalError",
                                  "an internal error occurred while handling the request");
    } catch (...) {
      VKUBE_LOG(error, "http: handler threw", {"path", request_.path});
      response_ = status_response(500, "InternalError",
                                  "an internal error occurred while handling the request");
    }
  }
  if (response_.deferred) {
    // The answer comes when the handler's work completes, on the thread that
    // completes it; this thread goes back to the pool.
    std::shared_ptr<DeferredResponse> deferred = std::move(response_.deferred);
    response_ = Response{};
    deferred->on_complete([self = shared_from_this()](Response r) {
      if (r.deferred) {
        VKUBE_LOG(error, "http: a deferred response completed with another deferred one");
        r = status_response(500, "InternalError", "the handler returned an invalid response");
      }
      self->response_ = std::move(r);
      net::post(self->executor_, [self] { self->on_response(); });
      self->core_.handler_finished();
    });
    return;
  }
  if (on_strand) {
    core_.handler_finished();
    return on_response();
  }
  net::post(executor_, [self = shared_from_this()] { self->on_response(); });
  core_.handler_finished();
}

// Writing the response -----------------------------------------------------------

void Connection::on_response() {
  if (state_ != State::kHandling) {  // closed by a forced shutdown meanwhile
    response_ = Response{};
    return;
  }
  const bool switching = response_.status == 101 && response_.upgrade;
  if (!switching && (response_.status < 200 || response_.status > 599)) {
    VKUBE_LOG(error, "http: handler returned an invalid status", {"status", response_.status});
    response_ = status_response(500, "InternalError", "the handler returned an invalid status");
  }
  if (response_.upgrade) {
    if (!head_request_ && !core_.stopping) return begin_upgrade();
    auto handler = std::move(response_.upgrade);
    response_ = status_response(503, "ServiceUnavailable", "the server is shutting down");
    handler(nullptr);
  }
  if (response_.stream) {
    if (!head_request_ && status_allows_body(response_.status) && !core_.stopping) {
      return begin_stream();
    }
    response_.stream.reset();  // never started, so never stopped
    if (core_.stopping) {
      response_ = status_response(503, "ServiceUnavailable", "the server is shutting down");
    }
  }
  write_response();
}

void Connection::send_error(int code, std::string_view reason, std::string_view message) {
  response_ = status_response(code, reason, message);
  keep_alive_ = false;
  write_response();
}

void Connection::write_response() {
  bool close = !keep_alive_ || core_.stopping || wants_close(response_.headers);
  keep_alive_ = !close;
  bool has_body = status_allows_body(response_.status);
  Framing framing;
  const std::string_view body = response_.body_bytes();
  if (has_body) framing.content_length = body.size();
  framing.close = close;
  framing.keep_alive_header = http10_ && !close;
  format_head(head_, response_.status, response_.headers, framing);

  state_ = State::kWriting;
  arm(core_.options.read_timeout);  // also bounds a client that never reads
  response_buffers_[0] = net::buffer(head_);
  size_t count = 1;
  if (has_body && !head_request_ && !body.empty()) {
    response_buffers_[count++] = net::buffer(body.data(), body.size());
  }
  // A span, not a std::array: Asio's two-buffer specialisation hands the
  // stream an empty first buffer once the head is out (a stream that wrote
  // zero bytes for it would end async_write early without an error).
  std::span<const net::const_buffer> buffers(response_buffers_.data(), count);
  with_stream([&](auto& s) {
    net::async_write(s, buffers,
                     beast::bind_front_handler(&Connection::on_written, shared_from_this()));
  });
}

void Connection::on_written(error_code ec, size_t) {
  if (state_ != State::kWriting) return;
  response_ = Response{};  // release the body now, not at the next request
  if (ec) return close_now();
  if (!keep_alive_) return close_gracefully();
  read_next();
}

// Closing --------------------------------------------------------------------------

void Connection::shutdown_graceful() {
  switch (state_) {
    case State::kDetecting:
    case State::kHandshaking:
    case State::kIdle:
    case State::kReading:
      return close_now();
    case State::kHandling:
    case State::kWriting:
      keep_alive_ = false;  // close once the response is out
      return;
    case State::kStreaming:
      return end_stream_for_shutdown();
    case State::kUpgrading:
    case State::kUpgraded:
      return close_now();
    case State::kClosing:
    case State::kClosed:
      return;
  }
}

void Connection::close_gracefully() {
  if (state_ == State::kClosing || state_ == State::kClosed) return;
  state_ = State::kClosing;
  error_code ec;
  lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return close_now();
  lowest().expires_after(kLinger);
  buffer_.clear();
  drain();
}

void Connection::drain() {
  // Raw TCP even under TLS: the bytes are discarded, never decrypted.
  lowest().async_read_some(buffer_.prepare(kReadChunk),
                           beast::bind_front_handler(&Connection::on_drained, shared_from_this()));
}

void Connection::on_drained(error_code ec, size_t) {
  if (state_ != State::kClosing) return;
  if (ec) return close_now();  // EOF, timeout or reset
  drain();
}

void Connection::close_now() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  if (channel_) channel_->fail("the connection was closed");
  channel_.reset();
  if (sink_) sink_->detach();
  stop_stream();
  stream_.reset();
  lowest().close();
  if (open_counted_) {
    open_counted_ = false;
    core_.connection_closed();
  }
}

}  // namespace vkube::http::detail
