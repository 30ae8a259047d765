#include "tls_stream.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace vkube::http::detail {

namespace {

using Clock = std::chrono::steady_clock;

long tls_stream_bio_ctrl(BIO*, int cmd, long, void*) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;  // nothing is buffered here
}

int tls_stream_bio_write(BIO* bio, const char* data, int len) {
  BIO_clear_retry_flags(bio);
  auto* stream = static_cast<TlsStream*>(BIO_get_data(bio));
  if (std::string* buffer = stream->write_buffer()) {
    buffer->append(data, static_cast<size_t>(len));
    return len;
  }
  int fd = stream->next_layer().socket().native_handle();
  for (;;) {
    // MSG_NOSIGNAL: the transport must not depend on its process ignoring SIGPIPE.
    ssize_t n = ::send(fd, data, static_cast<size_t>(len), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(bio);
    return -1;
  }
}

int tls_stream_bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

}  // namespace

int tls_stream_bio_read(BIO* bio, char* out, int len) {
  BIO_clear_retry_flags(bio);
  auto* s = static_cast<TlsStream*>(BIO_get_data(bio));
  if (len <= 0) return 0;
  if (s->prefix_used_ < s->prefix_.size()) {
    size_t n = std::min(static_cast<size_t>(len), s->prefix_.size() - s->prefix_used_);
    std::memcpy(out, s->prefix_.data() + s->prefix_used_, n);
    s->prefix_used_ += n;
    if (s->prefix_used_ == s->prefix_.size()) {
      std::string().swap(s->prefix_);
      s->prefix_used_ = 0;
    }
    return static_cast<int>(n);
  }
  int fd = s->tcp_.socket().native_handle();
  for (;;) {
    ssize_t n = ::recv(fd, out, static_cast<size_t>(len), MSG_DONTWAIT);
    if (n >= 0) return static_cast<int>(n);  // 0: the peer closed
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(bio);
    return -1;
  }
}

namespace {

// The type of socket_bio_method()'s BIOs.
int socket_bio_type() {
  static const int type = BIO_get_new_index() | BIO_TYPE_SOURCE_SINK;
  return type;
}

const BIO_METHOD* socket_bio_method() {
  static const BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(socket_bio_type(), "vkube socket");
    if (m == nullptr) return static_cast<BIO_METHOD*>(nullptr);
    BIO_meth_set_write(m, tls_stream_bio_write);
    BIO_meth_set_read(m, tls_stream_bio_read);
    BIO_meth_set_ctrl(m, tls_stream_bio_ctrl);
    BIO_meth_set_create(m, tls_stream_bio_create);
    return m;
  }();
  return method;
}

}  // namespace

bool set_tls_write_buffer(SSL* ssl, std::string* buffer) {
  BIO* bio = SSL_get_wbio(ssl);
  if (bio == nullptr || socket_bio_method() == nullptr || BIO_method_type(bio) != socket_bio_type())
    return false;
  static_cast<TlsStream*>(BIO_get_data(bio))->write_buffer_ = buffer;
  return true;
}

struct TlsStream::Deadline {
  explicit Deadline(const executor_type& ex) : timer(ex) {}
  tls_net::steady_timer timer;
  Clock::time_point at = Clock::time_point::max();  // max: none
  uint64_t tick = 0;                                // which wait a timer handler belongs to
  bool armed = false;                               // a wait is under the deadline
  bool fired = false;                               // ... and it passed
  TlsStream* owner = nullptr;
};

TlsStream::TlsStream(boost::beast::tcp_stream&& tcp, SSL_CTX* ctx, std::string_view already_read)
    : tcp_(std::move(tcp)),
      prefix_(already_read),
      deadline_(std::make_shared<Deadline>(tcp_.get_executor())) {
  deadline_->owner = this;
  const BIO_METHOD* method = socket_bio_method();
  SSL* ssl = method == nullptr ? nullptr : SSL_new(ctx);
  BIO* bio = ssl == nullptr ? nullptr : BIO_new(method);
  if (bio == nullptr) {
    if (ssl != nullptr) SSL_free(ssl);
    ERR_clear_error();
    return;
  }
  BIO_set_data(bio, this);
  SSL_set_bio(ssl, bio, bio);  // one reference, owned by the SSL
  SSL_set_accept_state(ssl);
  // Writes return after each record, and take the same bytes from a moved
  // buffer on a retry; buffers are freed while empty (most connections idle).
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                        SSL_MODE_RELEASE_BUFFERS);
  // Read what the socket has, not a record header and then its body: one
  // recv(2) per request instead of two. Reads try OpenSSL before waiting
  // for the socket, so what it holds is never missed.
  SSL_set_read_ahead(ssl, 1);
  ssl_ = ssl;
}

TlsStream::~TlsStream() {
  deadline_->owner = nullptr;
  deadline_->armed = false;
  deadline_->timer.cancel();
  if (ssl_ != nullptr) SSL_free(ssl_);
}

void TlsStream::expires_after(Clock::duration d) {
  deadline_->at = Clock::now() + d;
  tcp_.expires_after(d);
}

void TlsStream::expires_never() {
  deadline_->at = Clock::time_point::max();
  tcp_.expires_never();
}

void TlsStream::arm_timer() {
  Deadline& d = *deadline_;
  d.fired = false;
  ++d.tick;
  if (d.at == Clock::time_point::max()) {
    d.armed = false;
    return;
  }
  d.armed = true;
  d.timer.expires_at(d.at);
  d.timer.async_wait([deadline = deadline_, tick = d.tick](error_code ec) {
    if (ec || deadline->tick != tick || !deadline->armed || deadline->owner == nullptr) return;
    deadline->fired = true;
    error_code ignored;
    deadline->owner->tcp_.socket().cancel(ignored);
  });
}

bool TlsStream::disarm_timer() {
  Deadline& d = *deadline_;
  if (!d.armed) return false;
  d.armed = false;
  ++d.tick;  // a handler already queued does nothing
  d.timer.cancel();
  bool fired = d.fired;
  d.fired = false;
  return fired;
}

TlsStream::Step TlsStream::try_handshake(error_code& ec) {
  ERR_clear_error();
  int r = SSL_do_handshake(ssl_);
  if (r == 1) return Step::kDone;
  return classify(r, ec);
}

// Reads until `b` is full or OpenSSL has no whole record left: a large body
// arrives in as few operations as its records allow.
TlsStream::Step TlsStream::try_read(tls_net::mutable_buffer b, size_t* n, error_code& ec) {
  auto* data = static_cast<char*>(b.data());
  size_t total = 0;
  for (;;) {
    ERR_clear_error();
    size_t got = 0;
    int r = SSL_read_ex(ssl_, data + total, b.size() - total, &got);
    if (r == 1) {
      total += got;
      if (total < b.size() && SSL_has_pending(ssl_) == 1) continue;
      *n = total;
      return Step::kDone;
    }
    Step step = classify(r, ec);
    if (total == 0 || step == Step::kFailed) return step;
    *n = total;  // the rest is not here yet
    return Step::kDone;
  }
}

// Writes record after record until `b` is sent or the socket is full. After
// a partial record, the next write starts with the same bytes, as OpenSSL
// requires of a retry.
TlsStream::Step TlsStream::try_write(tls_net::const_buffer b, size_t* n, error_code& ec) {
  const auto* data = static_cast<const char*>(b.data());
  size_t total = 0;
  for (;;) {
    ERR_clear_error();
    size_t wrote = 0;
    int r = SSL_write_ex(ssl_, data + total, b.size() - total, &wrote);
    if (r == 1) {
      total += wrote;
      if (total < b.size()) continue;
      *n = total;
      return Step::kDone;
    }
    Step step = classify(r, ec);
    if (total == 0 || step == Step::kFailed) return step;
    *n = total;
    return Step::kDone;
  }
}

TlsStream::Step TlsStream::classify(int ret, error_code& ec) {
  int saved_errno = errno;
  int err = SSL_get_error(ssl_, ret);
  switch (err) {
    case SSL_ERROR_WANT_READ:
      return Step::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return Step::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:  // close_notify
      ec = tls_net::error::eof;
      break;
    case SSL_ERROR_SYSCALL: {
      unsigned long code = ERR_peek_last_error();
      if (code != 0) {
        ec = error_code(static_cast<int>(code), tls_net::error::get_ssl_category());
      } else if (saved_errno != 0) {
        ec = error_code(saved_errno, boost::system::system_category());
      } else {
        ec = tls_net::error::eof;
      }
      break;
    }
    case SSL_ERROR_SSL: {
      unsigned long code = ERR_peek_last_error();
      // A peer that closes without close_notify, as most HTTP clients do
      // between requests: the end of the stream, not a protocol error.
      if (ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ec = tls_net::error::eof;
      } else {
        ec = error_code(static_cast<int>(code), tls_net::error::get_ssl_category());
      }
      break;
    }
    default:
      ec = error_code(err, tls_net::error::get_ssl_category());
      break;
  }
  ERR_clear_error();
  return Step::kFailed;
}

}  // namespace vkube::http::detail
