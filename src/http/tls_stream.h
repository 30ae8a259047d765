// A TLS stream on a TCP socket for the connections of the transport, with
// OpenSSL reading and writing the socket itself through a BIO on its file
// descriptor. Asio's ssl::stream keeps two 17 KiB buffers of its own and a
// BIO pair of two more per connection, and copies every byte through them:
// about 60 KiB more per open connection, 60 MiB for a thousand watches.
// Here OpenSSL's own buffers are all there is, and they are released while
// idle. Asio only waits for the socket to be readable or writable.
//
// An AsyncReadStream and AsyncWriteStream for Beast's HTTP reads and Asio's
// writes, with deadlines as beast::tcp_stream has them. One read and one
// write at most may be pending, and not both at once. Private to the
// transport.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace vkube::http::detail {

namespace tls_net = boost::asio;

class TlsStream {
 public:
  using executor_type = boost::beast::tcp_stream::executor_type;
  using error_code = boost::system::error_code;

  // A server-side TLS stream on `tcp`. `already_read` is what was read from
  // the socket before (the start of the ClientHello, read to detect TLS):
  // OpenSSL reads it first. ok() is false when OpenSSL could not set up.
  TlsStream(boost::beast::tcp_stream&& tcp, SSL_CTX* ctx, std::string_view already_read);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  bool ok() const { return ssl_ != nullptr; }
  executor_type get_executor() { return tcp_.get_executor(); }
  boost::beast::tcp_stream& next_layer() { return tcp_; }
  SSL* native_handle() { return ssl_; }
  // Where written records go instead of the socket while set (set_tls_write_buffer).
  std::string* write_buffer() const { return write_buffer_; }

  // The deadline of the operations started after it (and of the TCP
  // stream's own), as beast::tcp_stream::expires_after: when it passes, the
  // pending operation ends with beast::error::timeout.
  void expires_after(std::chrono::steady_clock::duration d);
  void expires_never();

  // Completes with (error_code).
  template <typename Handler>
  auto async_handshake(Handler&& handler) {
    return tls_net::async_compose<Handler, void(error_code)>(
        Op<tls_net::mutable_buffer, kHandshake>{*this, {}}, handler, tcp_);
  }

  // Complete with (error_code, bytes transferred).
  template <typename MutableBuffers, typename Handler>
  auto async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    return tls_net::async_compose<Handler, void(error_code, std::size_t)>(
        Op<MutableBuffers, kRead>{*this, buffers}, handler, tcp_);
  }
  template <typename ConstBuffers, typename Handler>
  auto async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    return tls_net::async_compose<Handler, void(error_code, std::size_t)>(
        Op<ConstBuffers, kWrite>{*this, buffers}, handler, tcp_);
  }

 private:
  enum Kind { kHandshake, kRead, kWrite };
  enum class Step { kDone, kWantRead, kWantWrite, kFailed };

  // One attempt, never blocking. kDone with `*n` bytes (read or written).
  Step try_handshake(error_code& ec);
  Step try_read(tls_net::mutable_buffer b, size_t* n, error_code& ec);
  Step try_write(tls_net::const_buffer b, size_t* n, error_code& ec);
  Step classify(int ret, error_code& ec);

  // What a write sends in one go: the first buffer, or the leading small
  // buffers copied together (a response head and a small body make one
  // record, not two), as Beast's flat_stream does for its ssl_stream.
  template <typename ConstBuffers>
  tls_net::const_buffer flatten(const ConstBuffers& buffers, std::string& scratch) {
    constexpr size_t kCoalesce = 16 * 1024;
    auto it = tls_net::buffer_sequence_begin(buffers);
    auto end = tls_net::buffer_sequence_end(buffers);
    while (it != end && tls_net::const_buffer(*it).size() == 0) ++it;
    if (it == end) return {};
    tls_net::const_buffer first(*it);
    auto next = it;
    ++next;
    if (first.size() >= kCoalesce || next == end || tls_net::const_buffer(*next).size() == 0)
      return first;
    scratch.clear();
    for (; it != end; ++it) {
      tls_net::const_buffer b(*it);
      if (scratch.size() + b.size() > kCoalesce) break;
      scratch.append(static_cast<const char*>(b.data()), b.size());
    }
    return {scratch.data(), scratch.size()};
  }

  template <typename Buffers, Kind kind>
  struct Op {
    Op(TlsStream& stream, const Buffers& b) : s(stream), buffers(b) {}

    TlsStream& s;
    Buffers buffers;
    bool waited = false;  // completing inline is allowed only after a wait
    bool finished = false;
    error_code result;
    size_t transferred = 0;
    std::string scratch;  // flatten()'s copy

    template <typename Self>
    void operator()(Self& self, error_code ec = {}) {
      if (finished) return complete(self, result, transferred);
      if (ec) return finish(self, ec, 0);
      Step step;
      size_t n = 0;
      if constexpr (kind == kHandshake) {
        step = s.try_handshake(ec);
      } else if constexpr (kind == kRead) {
        tls_net::mutable_buffer b;
        for (auto it = tls_net::buffer_sequence_begin(buffers);
             it != tls_net::buffer_sequence_end(buffers); ++it) {
          if (tls_net::mutable_buffer(*it).size() > 0) {
            b = tls_net::mutable_buffer(*it);
            break;
          }
        }
        if (b.size() == 0) return finish(self, {}, 0);
        step = s.try_read(b, &n, ec);
      } else {
        // The same bytes again after a wait: OpenSSL requires it.
        tls_net::const_buffer b = s.flatten(buffers, scratch);
        if (b.size() == 0) return finish(self, {}, 0);
        step = s.try_write(b, &n, ec);
      }
      switch (step) {
        case Step::kDone:
          return finish(self, {}, n);
        case Step::kFailed:
          return finish(self, ec, 0);
        case Step::kWantRead:
          waited = true;
          return s.wait(tls_net::socket_base::wait_read, std::move(self));
        case Step::kWantWrite:
          waited = true;
          return s.wait(tls_net::socket_base::wait_write, std::move(self));
      }
    }

    template <typename Self>
    static void complete(Self& self, error_code ec, size_t n) {
      if constexpr (kind == kHandshake) {
        self.complete(ec);
      } else {
        self.complete(ec, n);
      }
    }

    template <typename Self>
    void finish(Self& self, error_code ec, size_t n) {
      if (waited) return complete(self, ec, n);
      // Not from inside the initiating call: the caller's loop (Beast's
      // read) would recurse.
      finished = true;
      result = ec;
      transferred = n;
      tls_net::post(s.tcp_.get_executor(), std::move(self));
    }
  };

  // Waits for the socket under the deadline, then resumes `self`.
  template <typename Self>
  void wait(tls_net::socket_base::wait_type type, Self&& self) {
    arm_timer();
    tcp_.socket().async_wait(type, [this, self = std::move(self)](error_code ec) mutable {
      if (disarm_timer()) ec = boost::beast::error::timeout;
      self(ec);
    });
  }
  // The deadline's timer for the wait that starts; disarm_timer() after it
  // ends says whether the deadline passed (and cancelled it).
  void arm_timer();
  bool disarm_timer();

  struct Deadline;
  boost::beast::tcp_stream tcp_;
  SSL* ssl_ = nullptr;
  std::string prefix_;  // read before OpenSSL was, served to it first
  size_t prefix_used_ = 0;
  std::shared_ptr<Deadline> deadline_;
  // Set: the records OpenSSL writes are appended here, not sent (set_tls_write_buffer).
  std::string* write_buffer_ = nullptr;

  friend int tls_stream_bio_read(BIO* bio, char* out, int len);
  friend bool set_tls_write_buffer(SSL* ssl, std::string* buffer);
};

// While `buffer` is set (null clears it), the TLS records OpenSSL writes on `ssl` (a
// TlsStream's) are appended to *buffer instead of sent: an upgraded connection's writer sends
// many records with one send(2). The caller serializes this with every SSL call on `ssl`.
// False (and nothing set) when `ssl` is not a TlsStream's.
bool set_tls_write_buffer(SSL* ssl, std::string* buffer);

}  // namespace vkube::http::detail
