// Duplex over sockets (plain and TLS client) and the helpers above any
// Duplex: relay, HTTP/1.1 request heads and response reading. No Asio here:
// these are used from plain threads, blocking in poll(2).
#include "vkube/http/duplex.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "vkube/common/dial_policy.h"
#include "wire.h"

namespace vkube::http {

namespace {

using Clock = Duplex::Clock;

int64_t to_ns(Clock::time_point t) {
  return t == Clock::time_point::max()
             ? INT64_MAX
             : std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// poll(2) for `events` on `fd` until the deadline (ns since the clock's
// epoch, INT64_MAX: none). kTimeout when it passes first.
Status wait_fd(int fd, short events, int64_t deadline_ns) {
  for (;;) {
    int timeout_ms = -1;
    if (deadline_ns != INT64_MAX) {
      int64_t now = to_ns(Clock::now());
      if (now >= deadline_ns) return Status(Code::kTimeout, "timed out");
      timeout_ms = static_cast<int>(std::min<int64_t>((deadline_ns - now) / 1000000 + 1, 1 << 30));
    }
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, timeout_ms);
    if (r > 0) return Status::ok();  // ready, or an error/hang-up the next call reports
    if (r == 0) continue;            // the deadline check above ends it
    if (errno != EINTR) return Status::unavailable(std::string("poll: ") + std::strerror(errno));
  }
}

class SocketDuplex : public Duplex {
 public:
  explicit SocketDuplex(int fd) : fd_(fd) {}
  ~SocketDuplex() override {
    close();
    ::close(fd_);
  }

  Result<size_t> read(char* out, size_t size) override {
    for (;;) {
      if (closed_) return Status::cancelled("the connection was closed");
      ssize_t n = ::recv(fd_, out, size, MSG_DONTWAIT);
      if (closed_) return Status::cancelled("the connection was closed");
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        return Status::unavailable(std::string("read: ") + std::strerror(errno));
      VKUBE_RETURN_IF_ERROR(wait_fd(fd_, POLLIN, deadline_.load()));
    }
  }

  Status write(std::string_view data) override {
    while (!data.empty()) {
      if (closed_) return Status::cancelled("the connection was closed");
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        return Status::unavailable(std::string("write: ") + std::strerror(errno));
      VKUBE_RETURN_IF_ERROR(wait_fd(fd_, POLLOUT, deadline_.load()));
    }
    return Status::ok();
  }

  void close_write() override { ::shutdown(fd_, SHUT_WR); }

  void close() override {
    // shutdown() wakes a thread blocked in poll on this socket; the
    // descriptor itself stays valid until the destructor.
    if (!closed_.exchange(true)) ::shutdown(fd_, SHUT_RDWR);
  }

  void set_deadline(Clock::time_point deadline) override { deadline_ = to_ns(deadline); }

  int fd() const { return fd_; }
  int64_t deadline_ns() const { return deadline_.load(); }
  bool closed() const { return closed_; }

 private:
  const int fd_;
  std::atomic<bool> closed_{false};
  std::atomic<int64_t> deadline_{INT64_MAX};
};

std::string ssl_error_text(const char* what) {
  std::string out = what;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += ": ";
    out += buf;
  }
  return out;
}

// A TLS client on a socket. OpenSSL is not safe for concurrent calls on one
// SSL, so every SSL_* call holds mu_; none blocks (the socket is used with
// MSG_DONTWAIT semantics: SSL returns WANT_READ/WANT_WRITE), and waiting
// for the socket happens outside the lock, so a reader waiting for data
// never holds up a writer.
class TlsDuplex : public Duplex {
 public:
  TlsDuplex(std::unique_ptr<SocketDuplex> tcp, SSL* ssl) : tcp_(std::move(tcp)), ssl_(ssl) {}
  ~TlsDuplex() override {
    close();
    SSL_free(ssl_);
  }

  Status handshake() {
    for (;;) {
      std::unique_lock lock(mu_);
      int r = SSL_connect(ssl_);
      if (r == 1) return Status::ok();
      int err = SSL_get_error(ssl_, r);
      lock.unlock();
      if (err == SSL_ERROR_WANT_READ) {
        VKUBE_RETURN_IF_ERROR(wait_fd(tcp_->fd(), POLLIN, tcp_->deadline_ns()));
      } else if (err == SSL_ERROR_WANT_WRITE) {
        VKUBE_RETURN_IF_ERROR(wait_fd(tcp_->fd(), POLLOUT, tcp_->deadline_ns()));
      } else {
        long verify = SSL_get_verify_result(ssl_);
        if (verify != X509_V_OK)
          return Status::unavailable(std::string("TLS handshake: certificate not trusted: ") +
                                     X509_verify_cert_error_string(verify));
        return Status::unavailable(ssl_error_text("TLS handshake failed"));
      }
    }
  }

  Result<size_t> read(char* out, size_t size) override {
    const int len = static_cast<int>(std::min<size_t>(size, 1 << 30));
    for (;;) {
      if (tcp_->closed()) return Status::cancelled("the connection was closed");
      std::unique_lock lock(mu_);
      int r = SSL_read(ssl_, out, len);
      if (r > 0) {
        // Then what else is there without waiting: one record is at most 16 KiB, and a
        // relay writes on what each read returns.
        size_t got = static_cast<size_t>(r);
        while (got < static_cast<size_t>(len)) {
          int more = SSL_read(ssl_, out + got, len - static_cast<int>(got));
          if (more <= 0) {
            ERR_clear_error();  // WANT_READ, or an end the next read reports
            break;
          }
          got += static_cast<size_t>(more);
        }
        return got;
      }
      int err = SSL_get_error(ssl_, r);
      lock.unlock();
      if (err == SSL_ERROR_ZERO_RETURN) return size_t{0};
      if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
        return size_t{0};  // EOF without close_notify
      if (tcp_->closed()) return Status::cancelled("the connection was closed");
      if (err == SSL_ERROR_WANT_READ) {
        VKUBE_RETURN_IF_ERROR(wait_fd(tcp_->fd(), POLLIN, tcp_->deadline_ns()));
      } else if (err == SSL_ERROR_WANT_WRITE) {
        VKUBE_RETURN_IF_ERROR(wait_fd(tcp_->fd(), POLLOUT, tcp_->deadline_ns()));
      } else {
        return Status::unavailable(ssl_error_text("TLS read failed"));
      }
    }
  }

  Status write(std::string_view data) override {
    while (!data.empty()) {
      if (tcp_->closed()) return Status::cancelled("the connection was closed");
      std::unique_lock lock(mu_);
      int r =
          SSL_write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
      if (r > 0) {
        data.remove_prefix(static_cast<size_t>(r));
        continue;
      }
      int err = SSL_get_error(ssl_, r);
      lock.unlock();
      if (err == SSL_ERROR_WANT_WRITE) {
        VKUBE_RETURN_IF_ERROR(wait_fd(tcp_->fd(), POLLOUT, tcp_->deadline_ns()));
      } else if (err == SSL_ERROR_WANT_READ) {
        VKUBE_RETURN_IF_ERROR(wait_fd(tcp_->fd(), POLLIN, tcp_->deadline_ns()));
      } else {
        return Status::unavailable(ssl_error_text("TLS write failed"));
      }
    }
    return Status::ok();
  }

  void close_write() override {
    {
      std::lock_guard lock(mu_);
      SSL_shutdown(ssl_);  // close_notify; one attempt is enough before FIN
    }
    tcp_->close_write();
  }

  void close() override { tcp_->close(); }
  void set_deadline(Clock::time_point deadline) override { tcp_->set_deadline(deadline); }

 private:
  std::unique_ptr<SocketDuplex> tcp_;
  SSL* ssl_;
  std::mutex mu_;
};

void copy_one_way(Duplex& from, Duplex& to, uint64_t* count, std::atomic<bool>* failed,
                  Duplex& other_side) {
  std::string buf(256 * 1024, '\0');
  for (;;) {
    Result<size_t> n = from.read(buf.data(), buf.size());
    if (!n.is_ok()) break;
    if (*n == 0) {
      to.close_write();
      return;
    }
    if (!to.write(std::string_view(buf.data(), *n)).is_ok()) break;
    *count += *n;
  }
  // A failure ends both directions at once.
  failed->store(true);
  from.close();
  to.close();
  other_side.close();
}

class PrefixedDuplex : public Duplex {
 public:
  PrefixedDuplex(std::unique_ptr<Duplex> d, std::string prefix)
      : d_(std::move(d)), prefix_(std::move(prefix)) {}
  Result<size_t> read(char* out, size_t size) override {
    if (used_ < prefix_.size()) {
      size_t n = std::min(size, prefix_.size() - used_);
      std::memcpy(out, prefix_.data() + used_, n);
      used_ += n;
      if (used_ == prefix_.size()) std::string().swap(prefix_);
      return n;
    }
    return d_->read(out, size);
  }
  Status write(std::string_view data) override { return d_->write(data); }
  void close_write() override { d_->close_write(); }
  void close() override { d_->close(); }
  void set_deadline(Clock::time_point t) override { d_->set_deadline(t); }

 private:
  std::unique_ptr<Duplex> d_;
  std::string prefix_;
  size_t used_ = 0;
};

}  // namespace

std::unique_ptr<Duplex> with_prefix(std::unique_ptr<Duplex> d, std::string already_read) {
  if (already_read.empty()) return d;
  return std::make_unique<PrefixedDuplex>(std::move(d), std::move(already_read));
}

RelayCounts relay(Duplex& a, Duplex& b) {
  RelayCounts counts;
  std::atomic<bool> failed{false};
  std::thread forward([&] { copy_one_way(a, b, &counts.a_to_b, &failed, b); });
  copy_one_way(b, a, &counts.b_to_a, &failed, a);
  forward.join();
  a.close();
  b.close();
  return counts;
}

Status write_all(Duplex& d, std::initializer_list<std::string_view> pieces) {
  for (std::string_view p : pieces) VKUBE_RETURN_IF_ERROR(d.write(p));
  return Status::ok();
}

std::unique_ptr<Duplex> socket_duplex(int fd) {
  return std::make_unique<SocketDuplex>(fd);
}

Result<std::unique_ptr<Duplex>> dial_tcp(const std::string& host, uint16_t port,
                                         std::chrono::milliseconds timeout) {
  const std::string where =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) return Status::unavailable("dial tcp " + where + ": " + ::gai_strerror(rc));
  const int64_t deadline = to_ns(Clock::now() + timeout);
  std::string last = "no address";
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    // An embedded host's made-up addresses are answered here, not dialled.
    char numeric[INET6_ADDRSTRLEN] = {};
    if (::getnameinfo(ai->ai_addr, ai->ai_addrlen, numeric, sizeof numeric, nullptr, 0,
                      NI_NUMERICHOST) == 0) {
      if (Status allowed = dial_policy::check(numeric, port); !allowed.is_ok()) {
        ::freeaddrinfo(found);
        return allowed;
      }
    }
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      last = std::strerror(errno);
      continue;
    }
    int r = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
      Status s = wait_fd(fd, POLLOUT, deadline);
      if (!s.is_ok()) {
        ::close(fd);
        last = s.code() == Code::kTimeout ? "i/o timeout" : s.message();
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      r = err == 0 ? 0 : -1;
      errno = err;
    }
    if (r != 0) {
      last = std::strerror(errno);
      ::close(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::freeaddrinfo(found);
    return socket_duplex(fd);
  }
  ::freeaddrinfo(found);
  for (char& c : last) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return Status::unavailable("dial tcp " + where + ": connect: " + last);
}

Result<std::unique_ptr<Duplex>> tls_client(std::unique_ptr<Duplex> tcp, ssl_ctx_st* ctx,
                                           const std::string& server_name,
                                           std::chrono::milliseconds timeout) {
  auto* sock = dynamic_cast<SocketDuplex*>(tcp.get());
  if (sock == nullptr) return Status::invalid("TLS needs a socket connection");
  std::unique_ptr<SocketDuplex> owned(static_cast<SocketDuplex*>(tcp.release()));
  SSL* ssl = SSL_new(ctx);
  if (ssl == nullptr) return Status::internal(ssl_error_text("SSL_new"));
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_set_fd(ssl, owned->fd());
  // Read what the socket holds, several records at once, not each record's header and
  // then its body: half the recv(2) calls of a stream. read() always asks OpenSSL before
  // waiting for the socket, so what it buffered is never missed.
  SSL_set_read_ahead(ssl, 1);
  SSL_set_default_read_buffer_len(ssl, 64 * 1024);
  // An IP address is checked as one (no SNI for it, as Go's client does).
  in6_addr ip6;
  in_addr ip4;
  const bool is_ip = ::inet_pton(AF_INET, server_name.c_str(), &ip4) == 1 ||
                     ::inet_pton(AF_INET6, server_name.c_str(), &ip6) == 1;
  if (!server_name.empty()) {
    if (!is_ip) SSL_set_tlsext_host_name(ssl, server_name.c_str());
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    if (is_ip)
      X509_VERIFY_PARAM_set1_ip_asc(param, server_name.c_str());
    else
      X509_VERIFY_PARAM_set1_host(param, server_name.c_str(), 0);
  }
  owned->set_deadline(Clock::now() + timeout);
  auto duplex = std::make_unique<TlsDuplex>(std::move(owned), ssl);
  Status s = duplex->handshake();
  if (!s.is_ok()) return s;
  duplex->set_deadline(Clock::time_point::max());
  return std::unique_ptr<Duplex>(std::move(duplex));
}

// HTTP/1.1 over a Duplex ---------------------------------------------------------------

std::string_view ResponseHead::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (detail::iequals(k, name)) return v;
  return {};
}

Status write_request(Duplex& d, std::string_view method, std::string_view target,
                     const std::vector<std::pair<std::string, std::string>>& headers,
                     std::string_view body) {
  std::string head;
  head.reserve(256);
  head.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
  bool has_length = false;
  for (const auto& [k, v] : headers) {
    if (k.find_first_of("\r\n") != std::string::npos ||
        v.find_first_of("\r\n") != std::string::npos)
      return Status::invalid("header " + k + " holds a line break");
    has_length = has_length || detail::iequals(k, "Content-Length");
    head.append(k).append(": ").append(v).append("\r\n");
  }
  if (!body.empty() && !has_length)
    head.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  head.append("\r\n");
  if (body.size() < 16 * 1024) {
    head.append(body);
    return d.write(head);
  }
  return write_all(d, {head, body});
}

Result<ResponseHead> read_response_head(Duplex& d) {
  constexpr size_t kLimit = 64 * 1024;
  std::string buf;
  size_t end = std::string::npos;
  char chunk[8192];
  while (end == std::string::npos) {
    if (buf.size() > kLimit) return Status::bad_request("the response head is over 64 KiB");
    Result<size_t> n = d.read(chunk, sizeof chunk);
    if (!n.is_ok()) return n.status();
    if (*n == 0)
      return Status::unavailable(buf.empty() ? "the server closed the connection without answering"
                                             : "the server closed the connection mid-answer");
    const size_t from = buf.size() < 3 ? 0 : buf.size() - 3;
    buf.append(chunk, *n);
    end = buf.find("\r\n\r\n", from);
  }
  ResponseHead head;
  head.rest = buf.substr(end + 4);
  std::string_view text(buf.data(), end);
  size_t eol = text.find("\r\n");
  std::string_view status_line = text.substr(0, eol);
  // "HTTP/1.1 101 Switching Protocols"
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12 || status_line[8] != ' ')
    return Status::bad_request("not an HTTP response: " + std::string(status_line.substr(0, 40)));
  try {
    head.status = std::stoi(std::string(status_line.substr(9, 3)));
  } catch (...) {
    return Status::bad_request("bad HTTP status line: " + std::string(status_line));
  }
  if (status_line.size() > 13) head.reason = std::string(status_line.substr(13));
  while (eol != std::string_view::npos) {
    text.remove_prefix(eol + 2);
    eol = text.find("\r\n");
    std::string_view line = text.substr(0, eol);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    head.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  return head;
}

namespace {

// Reads more into `buf` (appending); false at end of stream.
Result<bool> fill(Duplex& d, std::string& buf) {
  char chunk[16384];
  Result<size_t> n = d.read(chunk, sizeof chunk);
  if (!n.is_ok()) return n.status();
  if (*n == 0) return false;
  buf.append(chunk, *n);
  return true;
}

}  // namespace

Result<std::string> read_response_body(Duplex& d, ResponseHead& head, size_t limit) {
  std::string buf = std::move(head.rest);
  head.rest.clear();
  const Status too_large(Code::kTooLarge,
                         "the response body is over " + std::to_string(limit) + " bytes");
  if (head.status < 200 || head.status == 204 || head.status == 304) return std::string();
  std::string_view length = head.header("Content-Length");
  if (detail::iequals(head.header("Transfer-Encoding"), "chunked")) {
    std::string body;
    size_t pos = 0;
    for (;;) {
      size_t eol;
      while ((eol = buf.find("\r\n", pos)) == std::string::npos) {
        Result<bool> more = fill(d, buf);
        if (!more.is_ok()) return more.status();
        if (!*more) return Status::unavailable("the server closed the connection mid-body");
      }
      size_t size = 0;
      try {
        size = std::stoul(buf.substr(pos, eol - pos), nullptr, 16);
      } catch (...) {
        return Status::bad_request("bad chunk size in the response");
      }
      pos = eol + 2;
      if (size == 0) return body;
      if (body.size() + size > limit) return too_large;
      while (buf.size() < pos + size + 2) {
        Result<bool> more = fill(d, buf);
        if (!more.is_ok()) return more.status();
        if (!*more) return Status::unavailable("the server closed the connection mid-body");
      }
      body.append(buf, pos, size);
      pos += size + 2;
      if (pos > 1 << 20) {
        buf.erase(0, pos);
        pos = 0;
      }
    }
  }
  if (!length.empty()) {
    size_t want = 0;
    try {
      want = std::stoul(std::string(length));
    } catch (...) {
      return Status::bad_request("bad Content-Length in the response");
    }
    if (want > limit) return too_large;
    while (buf.size() < want) {
      Result<bool> more = fill(d, buf);
      if (!more.is_ok()) return more.status();
      if (!*more) return Status::unavailable("the server closed the connection mid-body");
    }
    buf.resize(want);
    return buf;
  }
  for (;;) {  // until the end of the stream
    if (buf.size() > limit) return too_large;
    Result<bool> more = fill(d, buf);
    if (!more.is_ok()) return more.status();
    if (!*more) return buf;
  }
}

}  // namespace vkube::http
