// The HTTP/1.1 transport as vkube serves it: a real http::Server on
// 127.0.0.1 (Beast's request parser with vkube's header limit, the default
// 3 MiB body limit, keep-alive and pipelining, chunked bodies, Expect:
// 100-continue) gets the input as the bytes of one TCP connection; the
// client half-closes and reads until the server closes. Whatever arrives must
// be HTTP responses: a handler's 200 or the transport's own 4xx Status.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "fuzz_util.h"
#include "vkube/http/server.h"

namespace http = vkube::http;

namespace {

std::unique_ptr<http::Server> start_server() {
  http::ServerOptions options;
  options.worker_threads = 2;
  options.read_timeout = std::chrono::seconds(5);
  options.idle_timeout = std::chrono::seconds(5);
  auto server = http::Server::start(options, [](http::Request& req) {
    http::Response r;
    r.status = 200;
    // What the API server reads of every request before routing it.
    (void)req.header("Content-Type");
    (void)http::query_param(req.query, "watch");
    r.body = req.method + " " + req.path + " " + std::to_string(req.body.size());
    return r;
  });
  if (!server.is_ok()) {
    std::fprintf(stderr, "fuzz_http: cannot start the server: %s\n",
                 server.status().message().c_str());
    std::abort();
  }
  return std::move(server).value();
}

int connect_to(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  FUZZ_CHECK(fd >= 0);
  // A source address of its own per connection, rotating through 127.1.0.0/16: one address runs
  // out of ephemeral ports (TIME_WAIT) after ~28,000 connections, well within a minute here.
  static uint32_t next = 0;
  ++next;
  sockaddr_in source{};
  source.sin_family = AF_INET;
  source.sin_addr.s_addr = htonl(0x7f010000u | (next & 0xffffu) | 1u);
  FUZZ_CHECK(::bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof source) == 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  FUZZ_CHECK(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  timeval tv{10, 0};  // longer than the server's read timeout: it must close first
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::unique_ptr<http::Server> server = start_server();
  int fd = connect_to(server->port());
  size_t sent = 0;
  while (sent < size) {
    ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server answered an error and closed
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EAGAIN) {
      std::fprintf(stderr, "fuzz_http: the server neither answered nor closed in 10 s\n");
      std::abort();
    }
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!answer.empty()) FUZZ_CHECK(answer.starts_with("HTTP/1."));
  return 0;
}
