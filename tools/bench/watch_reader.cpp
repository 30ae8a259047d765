#include "watch_reader.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace bench {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr int kSetupTimeoutMs = 30000;
constexpr int kGatherUs = 250;

}  // namespace

// One watch connection and its chunked-body decoder.
struct WatchReaders::Stream {
  int index = 0;
  int fd = -1;
  SSL* ssl = nullptr;
  bool done = false;

  enum class Part { kSize, kData, kDataEnd, kTrailer };
  Part part = Part::kSize;
  uint64_t size = 0;        // the chunk size being read (kSize)
  bool size_digits = true;  // still in the hex digits (not an extension)
  uint64_t data_left = 0;   // of the chunk's data (kData)
  std::string line;         // an unfinished body line

  ~Stream() {
    if (ssl != nullptr) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
  }

  // Reads what is there without blocking: bytes read (> 0), 0 at the end of
  // the stream, -1 when it would block, -2 on an error.
  long read_some(char* buf, size_t cap) {
    if (ssl != nullptr) {
      size_t n = 0;
      if (SSL_read_ex(ssl, buf, cap, &n) == 1) return static_cast<long>(n);
      int err = SSL_get_error(ssl, 0);
      ERR_clear_error();
      if (err == SSL_ERROR_WANT_READ) return -1;
      return err == SSL_ERROR_ZERO_RETURN ? 0 : -2;
    }
    for (;;) {
      ssize_t n = ::recv(fd, buf, cap, 0);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
    }
  }

  // Chunked decoding; body lines go to on_line. False once the last chunk
  // has come.
  bool feed(const char* p, size_t n, int64_t ns, const OnLine& on_line) {
    const char* end = p + n;
    while (p < end) {
      switch (part) {
        case Part::kSize: {
          char c = *p++;
          if (c == '\n') {
            if (size == 0) {
              part = Part::kTrailer;
              return false;
            }
            data_left = size;
            size = 0;
            size_digits = true;
            part = Part::kData;
          } else if (size_digits) {
            int digit = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
            if (digit >= 0) {
              size = size * 16 + static_cast<uint64_t>(digit);
            } else {
              size_digits = false;  // ';' extensions or the CR
            }
          }
          break;
        }
        case Part::kData: {
          size_t take = static_cast<size_t>(std::min<uint64_t>(data_left, end - p));
          std::string_view data(p, take);
          p += take;
          data_left -= take;
          for (;;) {
            size_t nl = data.find('\n');
            if (nl == std::string_view::npos) break;
            if (line.empty()) {
              on_line(index, data.substr(0, nl), ns);
            } else {
              line.append(data.substr(0, nl));
              on_line(index, line, ns);
              line.clear();
            }
            data.remove_prefix(nl + 1);
          }
          line.append(data);
          if (data_left == 0) part = Part::kDataEnd;
          break;
        }
        case Part::kDataEnd:  // the CRLF after the data
          if (*p++ == '\n') part = Part::kSize;
          break;
        case Part::kTrailer:
          return false;
      }
    }
    return true;
  }
};

WatchReaders::WatchReaders(int threads, OnLine on_line) : on_line_(std::move(on_line)) {
  for (int i = 0; i < std::max(1, threads); ++i)
    epoll_fds_.push_back(::epoll_create1(EPOLL_CLOEXEC));
  for (size_t i = 0; i < epoll_fds_.size(); ++i) {
    threads_.emplace_back([this, i] { run(static_cast<int>(i)); });
  }
}

WatchReaders::~WatchReaders() {
  stop();
}

void WatchReaders::stop() {
  stopping_.store(true);
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  streams_.clear();
  for (int fd : epoll_fds_) ::close(fd);
  epoll_fds_.clear();
}

namespace {

std::string ssl_error(const char* what) {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return std::string(what) + ": " + (e != 0 ? buf : std::strerror(errno));
}

}  // namespace

std::string WatchReaders::open(int index, const WatchTarget& target) {
  auto s = std::make_unique<Stream>();
  s->index = index;
  s->fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->fd < 0) return std::string("socket: ") + std::strerror(errno);
  int one = 1;
  ::setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(target.port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s->fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return std::string("connect: ") + std::strerror(errno);

  // The set-up is blocking; SSL calls on a blocking socket need no retry loop.
  std::string request = "GET " + target.path +
                        " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(target.port) +
                        "\r\nUser-Agent: bench_api\r\nAccept: application/json\r\n";
  if (!target.bearer.empty()) request += "Authorization: Bearer " + target.bearer + "\r\n";
  request += "\r\n";
  timeval tv{kSetupTimeoutMs / 1000, 0};
  ::setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (target.tls != nullptr) {
    s->ssl = SSL_new(target.tls);
    if (s->ssl == nullptr || SSL_set_fd(s->ssl, s->fd) != 1) return ssl_error("SSL_new");
    // One read(2) for a record rather than one for its header and one for the rest.
    SSL_set_read_ahead(s->ssl, 1);
    if (SSL_connect(s->ssl) != 1) return ssl_error("TLS handshake");
    size_t written = 0;
    if (SSL_write_ex(s->ssl, request.data(), request.size(), &written) != 1)
      return ssl_error("TLS write");
  } else if (::send(s->fd, request.data(), request.size(), MSG_NOSIGNAL) !=
             static_cast<ssize_t>(request.size())) {
    return std::string("send: ") + std::strerror(errno);
  }

  // The response head.
  std::string head;
  char buf[16384];
  size_t head_end = std::string::npos;
  while (head_end == std::string::npos) {
    long n = 0;
    if (s->ssl != nullptr) {
      size_t got = 0;
      n = SSL_read_ex(s->ssl, buf, sizeof buf, &got) == 1 ? static_cast<long>(got) : -1;
    } else {
      n = ::recv(s->fd, buf, sizeof buf, 0);
    }
    if (n <= 0) return "connection ended before the response head";
    head.append(buf, static_cast<size_t>(n));
    head_end = head.find("\r\n\r\n");
    if (head.size() > 65536) return "response head too large";
  }
  if (head.compare(0, 12, "HTTP/1.1 200") != 0)
    return "response: " + head.substr(0, std::min<size_t>(head.size(), 300));
  std::string lower = head.substr(0, head_end);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("transfer-encoding: chunked") == std::string::npos)
    return "the watch response is not chunked";

  // From here the reader thread owns it, non-blocking.
  ::fcntl(s->fd, F_SETFL, ::fcntl(s->fd, F_GETFL) | O_NONBLOCK);
  Stream* stream = s.get();
  std::string rest = head.substr(head_end + 4);
  if (!rest.empty()) stream->feed(rest.data(), rest.size(), steady_ns(), on_line_);
  streams_.push_back(std::move(s));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = stream;
  int ep = epoll_fds_[static_cast<size_t>(index) % epoll_fds_.size()];
  if (::epoll_ctl(ep, EPOLL_CTL_ADD, stream->fd, &ev) != 0)
    return std::string("epoll_ctl: ") + std::strerror(errno);
  return {};
}

void WatchReaders::run(int lane) {
  int ep = epoll_fds_[static_cast<size_t>(lane)];
  epoll_event events[256];
  static thread_local char buf[65536];
  while (!stopping_.load(std::memory_order_relaxed)) {
    int n = ::epoll_wait(ep, events, 256, 50);
    for (int i = 0; i < n; ++i) {
      auto* s = static_cast<Stream*>(events[i].data.ptr);
      if (s->done) continue;
      // One read per wake-up, unless it filled the buffer or OpenSSL holds
      // more records: the epoll is level-triggered, so what is left in the
      // socket wakes it again, and a read that would block costs a syscall.
      // Delayed ACKs, as for a request-response connection: otherwise
      // Linux acknowledges a small pushed segment as soon as it is read, and
      // on loopback the reader pays for both ends of every ACK in the middle
      // of a fan-out. The kernel leaves this mode whenever a delayed ACK
      // fires (between two events, mostly), so it is set again before each
      // read: set after, it would come too late for the read that ACKs.
      int zero = 0;
      ::setsockopt(s->fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof zero);
      for (;;) {
        long got = s->read_some(buf, sizeof buf);
        if (got == -1) break;
        bool more = got > 0 && s->feed(buf, static_cast<size_t>(got), steady_ns(), on_line_);
        if (!more) {
          s->done = true;
          ::epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, nullptr);
          ended_.fetch_add(1);
          break;
        }
        bool pending = s->ssl != nullptr ? SSL_has_pending(s->ssl) == 1
                                         : static_cast<size_t>(got) == sizeof buf;
        if (!pending) break;
      }
    }
    // Wake-ups cost the reader more than its reads: while events arrive,
    // let them gather for a moment (which counts in the latency measured).
    if (n > 0) std::this_thread::sleep_for(std::chrono::microseconds(kGatherUs));
  }
}

}  // namespace bench
