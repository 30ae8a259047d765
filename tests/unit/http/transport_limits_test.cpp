// The transport refuses what Go's net/http refuses, with its bytes: a
// cleartext request on the TLS port (which must never carry credentials) and
// a transfer-coding other than chunked (the stuff of request smuggling). And
// an answer's lease lasts until it has been sent.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "support/temp_dir.h"
#include "vkube/http/server.h"
#include "vkube/pki/pki.h"

namespace vkube::http {
namespace {

using namespace std::chrono_literals;

// Sends `request` on a fresh connection and returns every byte the server
// sends until it closes (or 5 s pass).
std::string talk(uint16_t port, std::string_view request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
      out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

const pki::Bundle& certs() {
  static testing::TempDir dir;
  static const pki::Bundle bundle = [] {
    pki::PkiOptions po;
    po.dir = dir.path();
    auto b = pki::ensure_pki(po);
    REQUIRE(b.is_ok());
    return std::move(b).value();
  }();
  return bundle;
}

std::unique_ptr<Server> start(ServerOptions o, std::atomic<int>* handled) {
  o.worker_threads = 2;
  auto s = Server::start(std::move(o), [handled](Request& req) {
    ++*handled;
    Response r;
    r.body = "handled " + req.method + " " + std::to_string(req.body.size());
    return r;
  });
  REQUIRE(s.is_ok());
  return std::move(s).value();
}

constexpr std::string_view kGoRefusal =
    "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

TEST_CASE("cleartext on the TLS port gets Go's 400 and the connection closes", "[http]") {
  std::atomic<int> handled{0};
  ServerOptions o;
  o.tls = TlsConfig{certs().serving.cert_pem, certs().serving.key_pem, certs().ca.cert_pem};
  auto server = start(o, &handled);
  const uint16_t port = server->port();

  CHECK(talk(port,
             "GET /api/v1/secrets HTTP/1.1\r\nHost: x\r\n"
             "Authorization: Bearer secret\r\n\r\n") == kGoRefusal);
  CHECK(talk(port,
             "POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"
             "{}") == kGoRefusal);
  CHECK(talk(port, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n") == kGoRefusal);
  // Go answers only what looks like GET, HEAD, POST, PUT or OPTIONS.
  CHECK(talk(port, "DELETE /api/v1/namespaces/a HTTP/1.1\r\nHost: x\r\n\r\n").empty());
  CHECK(handled == 0);
}

TEST_CASE("a TLS port lets the cleartext it allows in, never with credentials", "[http]") {
  std::atomic<int> handled{0};
  ServerOptions o;
  o.tls = TlsConfig{certs().serving.cert_pem, certs().serving.key_pem, certs().ca.cert_pem};
  o.cleartext_allowed = [](std::string_view method, std::string_view target) {
    return method == "GET" && target == "/readyz";
  };
  auto server = start(o, &handled);
  const uint16_t port = server->port();
  std::string ok = talk(port, "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(ok.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(ok.ends_with("handled GET 0"));
  CHECK(talk(port, "GET /readyz HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YTpi\r\n\r\n") ==
        kGoRefusal);
  CHECK(talk(port, "GET /version HTTP/1.1\r\nHost: x\r\n\r\n") == kGoRefusal);
  CHECK(handled == 1);
}

TEST_CASE("a transfer-coding other than one chunked gets Go's 501", "[http]") {
  std::atomic<int> handled{0};
  auto server = start({}, &handled);
  const uint16_t port = server->port();
  const std::string refusal =
      "HTTP/1.1 501 Not Implemented\r\nContent-Type: text/plain; charset=utf-8\r\n"
      "Connection: close\r\n\r\nUnsupported transfer encoding";
  const std::string body = "5\r\nhello\r\n0\r\n\r\n";
  CHECK(talk(port, "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" +
                       body) == refusal);
  CHECK(talk(port, "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" + body) ==
        refusal);
  CHECK(talk(port,
             "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
             "Transfer-Encoding: chunked\r\n\r\n" +
                 body) == refusal);
  CHECK(handled == 0);
  // One "chunked" is read as ever.
  std::string ok = talk(port,
                        "POST /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                        "Transfer-Encoding: Chunked\r\n\r\n" +
                            body);
  CHECK(ok.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(ok.ends_with("handled POST 5"));
}

TEST_CASE("an answer's lease is let go once it has been sent", "[http]") {
  std::atomic<bool> released{false};
  const std::string big(4u << 20, 'x');
  auto server = Server::start({}, [&](Request&) {
    Response r;
    r.body = big;
    r.lease = std::shared_ptr<void>(nullptr, [&](void*) { released = true; });
    return r;
  });
  REQUIRE(server.is_ok());
  std::string got =
      talk((*server)->port(), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(got.ends_with(big));
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (!released && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  CHECK(released);
}

}  // namespace
}  // namespace vkube::http
