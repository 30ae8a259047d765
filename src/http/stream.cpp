// Chunked streaming responses (watch): the sink producers write to, and the
// connection side that drains it onto the socket.
#include <sys/socket.h>

#include <cerrno>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>

#include "connection.h"
#include "sink.h"
#include "tls.h"
#include "vkube/common/log.h"

namespace vkube::http::detail {
namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";
constexpr size_t kPeekSize = 512;

// One chunk of a chunked body: its size line, the data and a CRLF.
void append_chunk(std::string& out, std::string_view chunk) {
  char size_line[kChunkSizeMax];
  out.append(size_line, format_chunk_size(size_line, chunk.size()));
  out += chunk;
  out += kCrlf;
}

}  // namespace

// IoHome ----------------------------------------------------------------------------

void IoHome::post(std::function<void()> task) {
  std::lock_guard lock(mu_);
  if (ioc_ != nullptr) net::post(*ioc_, std::move(task));
}

void IoHome::close() {
  std::lock_guard lock(mu_);
  ioc_ = nullptr;
}

// SinkImpl --------------------------------------------------------------------------

bool SinkImpl::write(std::string chunk) {
  std::lock_guard lock(mu_);
  if (!accepting_) return false;
  if (chunk.empty()) return true;  // an empty chunk would end the response
  if (unsent_ + chunk.size() > limit_) {
    // The client reads slower than the producer writes: cut it off rather
    // than buffer without bound.
    accepting_ = false;
    if (strand_) {
      net::post(*strand_, [weak = connection_] {
        if (auto c = weak.lock()) c->on_stream_overflow();
      });
    }
    return false;
  }
  unsent_ += chunk.size();
  queue_.push_back(std::move(chunk));
  notify_locked();
  return true;
}

bool SinkImpl::write_here(std::string_view chunk) {
  std::shared_ptr<Connection> connection;
  {
    std::lock_guard lock(mu_);
    if (!accepting_) return false;
    if (chunk.empty()) return true;
    // Queued chunks go first; a posted flush will send them.
    if (queue_.empty() && !flush_posted_ && strand_) connection = connection_.lock();
  }
  if (connection) {
    switch (connection->write_stream_now(chunk)) {
      case Connection::DirectWrite::kDone:
        return true;
      case Connection::DirectWrite::kClosed:
        return false;
      case Connection::DirectWrite::kNotNow:
        break;
    }
  }
  return write(std::string(chunk));
}

void SinkImpl::close() {
  std::lock_guard lock(mu_);
  if (!accepting_) return;
  accepting_ = false;
  producer_closed_ = true;
  notify_locked();
}

void SinkImpl::notify_locked() {
  // Posting under the lock keeps detach() a barrier: after it, nothing posts.
  if (flush_posted_ || !strand_) return;
  flush_posted_ = true;
  net::post(*strand_, [weak = connection_] {
    if (auto c = weak.lock()) c->flush_stream();
  });
}

bool SinkImpl::take(std::vector<std::string>& out) {
  std::lock_guard lock(mu_);
  out.swap(queue_);
  flush_posted_ = false;
  return producer_closed_ || ending_;
}

void SinkImpl::sent(size_t bytes) {
  std::lock_guard lock(mu_);
  unsent_ -= std::min(bytes, unsent_);
}

void SinkImpl::end_for_shutdown() {
  std::lock_guard lock(mu_);
  accepting_ = false;
  ending_ = true;
}

void SinkImpl::detach() {
  std::lock_guard lock(mu_);
  accepting_ = false;
  strand_.reset();
  queue_.clear();
}

bool SinkImpl::producer_closed() {
  std::lock_guard lock(mu_);
  return producer_closed_;
}

// Connection: streaming ---------------------------------------------------------------

void Connection::begin_stream() {
  state_ = State::kStreaming;
  stream_ = std::move(response_.stream);
  Framing framing;
  framing.chunked = true;
  // A watch ends when either side goes away; the connection is not reused.
  framing.close = true;
  format_head(head_, response_.status, response_.headers, framing);
  response_ = Response{};
  sink_ = std::make_shared<SinkImpl>(executor_, weak_from_this(), home_,
                                     core_.options.stream_buffer_limit);
  // A watch lasts as long as it likes. No read or write is pending here, so
  // the deadline can be changed; it must not be while streaming.
  arm(std::chrono::seconds(0));
  stream_writing_ = true;
  with_stream([&](auto& s) {
    net::async_write(s, net::buffer(head_),
                     beast::bind_front_handler(&Connection::on_stream_head, shared_from_this()));
  });
}

void Connection::on_stream_head(error_code ec, size_t) {
  stream_writing_ = false;
  if (state_ != State::kStreaming) return;
  if (ec) return close_now();  // never started, so never stopped
  stream_head_sent_ = true;
  // From here on only flush_stream() writes, straight to the socket
  // (SSL_write under TLS: OpenSSL writes to the socket itself, tls_stream.h).
  if (stream_shutdown_) {  // shutdown came while the head was on its way
    sink_->end_for_shutdown();
    return flush_stream();
  }
  stream_started_ = true;
  try {
    stream_->start(sink_);
  } catch (const std::exception& e) {
    VKUBE_LOG(error, "http: stream start threw", {"error", e.what()});
    stream_stop_called_ = true;
    return close_now();
  } catch (...) {
    stream_stop_called_ = true;
    return close_now();
  }
  if (state_ != State::kStreaming) return;
  watch_peer();
  flush_stream();
}

void Connection::watch_peer() {
  // A pending read is how a vanished client is noticed while nothing is
  // written. What a client sends during a watch is discarded, so it is read
  // from the TCP socket even under TLS: never decrypted, and OpenSSL's state
  // is only ever touched by flush_stream's writes.
  buffer_.clear();
  lowest().async_read_some(
      buffer_.prepare(kPeekSize),
      beast::bind_front_handler(&Connection::on_peer_data, shared_from_this()));
}

void Connection::on_peer_data(error_code ec, size_t) {
  if (state_ != State::kStreaming) return;
  if (ec) return close_now();  // the client went away: stop() the producer
  watch_peer();
}

// After the head, stream writes bypass Asio's write operations: a watch sends
// one small chunk to each of many connections per event, and a direct
// send(2), or SSL_write to the socket (tls_stream.h), costs half of an async_write
// through Asio's TLS stream. Only when the socket is full does the
// connection wait, for it to become writable.
void Connection::flush_stream() {
  if (state_ != State::kStreaming || stream_writing_ || !stream_head_sent_) return;
  // A client that keeps up with a busy producer would hold the I/O thread:
  // after a few writes the rest waits its turn.
  constexpr int kWritesPerTurn = 8;
  for (int writes = 0; writes < kWritesPerTurn; ++writes) {
    if (stream_out_sent_ == stream_out_.size() && !next_stream_write()) return;
    switch (send_stream_bytes()) {
      case SendResult::kFailed:
        return close_now();
      case SendResult::kBlocked:
        return wait_stream_writable();
      case SendResult::kProgress:
        break;
    }
    if (stream_out_sent_ < stream_out_.size()) continue;
    sink_->sent(stream_payload_);
    if (stream_last_sent_) return close_now();
    // A large write (a watch's initial events) does not stay allocated for
    // the life of the stream.
    constexpr size_t kKeepCapacity = 64 * 1024;
    if (stream_out_.capacity() > kKeepCapacity) {
      std::string().swap(stream_out_);
      stream_out_sent_ = 0;
    }
  }
  net::post(executor_, [self = shared_from_this()] { self->flush_stream(); });
}

Connection::DirectWrite Connection::write_stream_now(std::string_view chunk) {
  if (state_ != State::kStreaming) return DirectWrite::kClosed;
  if (!stream_head_sent_ || stream_writing_ || stream_out_sent_ != stream_out_.size())
    return DirectWrite::kNotNow;
  stream_out_.clear();
  stream_out_sent_ = 0;
  stream_payload_ = 0;  // never counted in the sink's unsent bytes
  append_chunk(stream_out_, chunk);
  for (;;) {
    switch (send_stream_bytes()) {
      case SendResult::kFailed:
        close_now();
        return DirectWrite::kClosed;
      case SendResult::kBlocked:
        // The rest goes when the socket takes it; later chunks queue up.
        wait_stream_writable();
        return DirectWrite::kDone;
      case SendResult::kProgress:
        if (stream_out_sent_ == stream_out_.size()) return DirectWrite::kDone;
        break;
    }
  }
}

void Connection::wait_stream_writable() {
  stream_writing_ = true;
  lowest().socket().async_wait(
      net::socket_base::wait_write,
      beast::bind_front_handler(&Connection::on_stream_writable, shared_from_this()));
}

bool Connection::next_stream_write() {
  bool finish = sink_->take(stream_batch_);
  if (stream_batch_.empty() && !finish) return false;
  // One size line, the data and a CRLF per chunk.
  stream_out_.clear();
  stream_out_sent_ = 0;
  stream_payload_ = 0;
  for (const std::string& chunk : stream_batch_) {
    append_chunk(stream_out_, chunk);
    stream_payload_ += chunk.size();
  }
  stream_batch_.clear();
  if (finish) {
    stream_out_ += kLastChunk;
    stream_last_sent_ = true;
  }
  return true;
}

Connection::SendResult Connection::send_stream_bytes() {
  const char* data = stream_out_.data() + stream_out_sent_;
  size_t left = stream_out_.size() - stream_out_sent_;
  if (tls_) {
    // After SSL_ERROR_WANT_WRITE the retry passes the same bytes, as OpenSSL
    // requires: stream_out_ does not change until all of it is sent.
    SSL* ssl = tls_->native_handle();
    size_t written = 0;
    if (SSL_write_ex(ssl, data, left, &written) == 1) {
      stream_out_sent_ += written;
      return SendResult::kProgress;
    }
    int err = SSL_get_error(ssl, 0);
    ERR_clear_error();
    return err == SSL_ERROR_WANT_WRITE ? SendResult::kBlocked : SendResult::kFailed;
  }
  int fd = lowest().socket().native_handle();
  for (;;) {
    ssize_t n = ::send(fd, data, left, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      stream_out_sent_ += static_cast<size_t>(n);
      return SendResult::kProgress;
    }
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? SendResult::kBlocked : SendResult::kFailed;
  }
}

void Connection::on_stream_writable(error_code ec) {
  stream_writing_ = false;
  if (state_ != State::kStreaming) return;
  if (ec) return close_now();
  flush_stream();
}

void Connection::on_stream_overflow() {
  if (state_ != State::kStreaming) return;
  VKUBE_LOG(warn, "http: stream client too slow, closing", {"remote", remote_},
            {"limit", core_.options.stream_buffer_limit});
  close_now();
}

void Connection::end_stream_for_shutdown() {
  stream_shutdown_ = true;
  if (!stream_head_sent_) return;  // on_stream_head() finishes the job
  sink_->end_for_shutdown();
  stop_stream();
  flush_stream();
}

void Connection::stop_stream() {
  if (!stream_started_ || stream_stop_called_ || !stream_) return;
  stream_stop_called_ = true;
  if (sink_ && sink_->producer_closed()) return;  // the producer ended it itself
  try {
    stream_->stop();
  } catch (const std::exception& e) {
    VKUBE_LOG(error, "http: stream stop threw", {"error", e.what()});
  } catch (...) {
    VKUBE_LOG(error, "http: stream stop threw");
  }
}

}  // namespace vkube::http::detail
