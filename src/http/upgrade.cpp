// Upgraded connections (Response::upgrade): after the head, the connection
// is a Duplex for its handler's threads. The strand moves bytes between the
// socket and the channel's two buffers with non-blocking recv/send, or
// SSL_read/SSL_write under TLS (OpenSSL reads and writes the socket itself,
// tls_stream.h), waiting for readiness with async_wait: reads and writes
// proceed at once in both directions, which Asio-style composed operations
// on the TLS stream would not allow. The buffers are bounded, so a slow
// side holds the other back instead of growing memory.
#include <sys/socket.h>

#include <cerrno>
#include <condition_variable>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>

#include "upgrade.h"
#include "vkube/common/log.h"

namespace vkube::http::detail {

namespace {

constexpr size_t kReadSize = 64 * 1024;
constexpr int kTurns = 16;  // socket operations per turn before yielding the thread

}  // namespace

// Connection: upgrades -------------------------------------------------------------------

void Connection::begin_upgrade() {
  state_ = State::kUpgrading;
  upgrade_ = std::move(response_.upgrade);
  head_.clear();
  head_ += "HTTP/1.1 ";
  head_ += std::to_string(response_.status);
  head_ += ' ';
  head_ += reason_phrase(response_.status);
  head_ += "\r\n";
  for (const Header& h : response_.headers) {
    if (h.name.find_first_of("\r\n:") != std::string::npos ||
        h.value.find_first_of("\r\n") != std::string::npos)
      continue;
    head_ += h.name;
    head_ += ": ";
    head_ += h.value;
    head_ += "\r\n";
  }
  head_ += "\r\n";
  response_ = Response{};
  arm(std::chrono::seconds(0));  // an upgraded connection lasts as long as it likes
  with_stream([&](auto& s) {
    net::async_write(s, net::buffer(head_),
                     beast::bind_front_handler(&Connection::on_upgrade_head, shared_from_this()));
  });
}

void Connection::on_upgrade_head(error_code ec, size_t) {
  auto handler = std::move(upgrade_);
  upgrade_ = nullptr;
  if (state_ != State::kUpgrading || ec) {
    if (handler) handler(nullptr);
    return close_now();
  }
  state_ = State::kUpgraded;
  // Bytes the client sent after the request (its first frames) are the
  // handler's to read first.
  auto seen = buffer_.data();
  std::string already(static_cast<const char*>(seen.data()), seen.size());
  buffer_.clear();
  buffer_.shrink_to_fit();
  channel_ = std::make_shared<UpgradeChannel>(shared_from_this(), std::move(already),
                                              tls_ ? tls_->native_handle() : nullptr,
                                              lowest().socket().native_handle());
  try {
    handler(std::make_shared<UpgradeHandle>(channel_));
  } catch (const std::exception& e) {
    VKUBE_LOG(error, "http: upgrade handler threw", {"error", e.what()});
    return close_now();
  } catch (...) {
    return close_now();
  }
  if (state_ == State::kUpgraded) upgrade_read();
}

Connection::IoResult Connection::upgrade_recv(char* out, size_t size, size_t* n) {
  if (tls_) {
    std::lock_guard io(channel_->io_mutex());  // a handler thread may be writing
    SSL* ssl = tls_->native_handle();
    if (SSL_read_ex(ssl, out, size, n) == 1) {
      // And the records already here: one hand-off to the handler, not one per record.
      size_t more = 0;
      while (*n < size && SSL_read_ex(ssl, out + *n, size - *n, &more) == 1) *n += more;
      ERR_clear_error();
      return IoResult::kData;
    }
    int err = SSL_get_error(ssl, 0);
    ERR_clear_error();
    if (err == SSL_ERROR_WANT_READ) return IoResult::kBlocked;
    if (err == SSL_ERROR_WANT_WRITE) return IoResult::kWantWrite;
    if (err == SSL_ERROR_ZERO_RETURN || err == SSL_ERROR_SYSCALL) return IoResult::kEof;
    return IoResult::kFailed;
  }
  int fd = lowest().socket().native_handle();
  for (;;) {
    ssize_t r = ::recv(fd, out, size, MSG_DONTWAIT);
    if (r > 0) {
      *n = static_cast<size_t>(r);
      return IoResult::kData;
    }
    if (r == 0) return IoResult::kEof;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? IoResult::kBlocked : IoResult::kFailed;
  }
}

void Connection::upgrade_read() {
  if (state_ != State::kUpgraded || up_read_paused_ || up_read_eof_ || up_read_waiting_) return;
  UpgradeChannel* channel = channel_.get();
  if (!channel) return close_now();
  if (up_in_.size() != kReadSize) up_in_.resize(kReadSize);
  for (int turn = 0; turn < kTurns; ++turn) {
    size_t n = 0;
    switch (upgrade_recv(up_in_.data(), up_in_.size(), &n)) {
      case IoResult::kData:
        if (!channel->deliver(up_in_.data(), n)) {
          up_read_paused_ = true;
          return;
        }
        continue;
      case IoResult::kBlocked:
        return upgrade_wait(true);
      case IoResult::kWantWrite:
        return upgrade_wait(false);
      case IoResult::kEof:
        up_read_eof_ = true;
        std::string().swap(up_in_);
        channel->deliver_eof();
        return;
      case IoResult::kFailed:
        channel->fail("the connection failed");
        return close_now();
    }
  }
  net::post(executor_, [self = shared_from_this()] { self->upgrade_read(); });
}

void Connection::upgrade_resume_read() {
  up_read_paused_ = false;
  upgrade_read();
}

void Connection::upgrade_finish() {
  // The handler is done and all it wrote is out: end as a response does.
  channel_->fail("the connection was closed");
  channel_.reset();
  state_ = State::kClosing;
  lowest().expires_after(std::chrono::milliseconds(500));
  buffer_.clear();
  drain();
}

// The handler let go (UpgradeChannel::release, after shutting the sending
// side): the connection ends as a finished response does.
void Connection::upgrade_flush() {
  if (state_ != State::kUpgraded) return;
  if (channel_ && channel_->released()) upgrade_finish();
}

// The reader waits for the socket: readable, or writable for an SSL_read
// that must send first.
void Connection::upgrade_wait(bool for_read) {
  if (up_read_waiting_) return;
  up_read_waiting_ = true;
  lowest().socket().async_wait(
      for_read ? net::socket_base::wait_read : net::socket_base::wait_write,
      [self = shared_from_this()](error_code ec) {
        self->up_read_waiting_ = false;
        if (self->state_ != State::kUpgraded) return;
        if (ec) {
          if (self->channel_) self->channel_->fail("the connection failed");
          return self->close_now();
        }
        self->upgrade_read();
      });
}

}  // namespace vkube::http::detail
