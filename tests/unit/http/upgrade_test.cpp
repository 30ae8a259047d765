// Upgraded connections (Response::upgrade) and the Duplex clients: what a
// WebSocket or SPDY session, or a tenant relaying to its host, relies on.
#include <sys/socket.h>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <thread>

#include <catch2/catch.hpp>

#include "support/temp_dir.h"
#include "vkube/http/duplex.h"
#include "vkube/http/server.h"
#include "vkube/pki/pki.h"

namespace vkube::http {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

struct Certs {
  TempDir dir;
  pki::Bundle bundle;
  Certs() {
    pki::PkiOptions o;
    o.dir = dir.path();
    o.hosts = {"127.0.0.1"};
    auto b = pki::ensure_pki(o);
    REQUIRE(b.is_ok());
    bundle = *b;
  }
};

const Certs& certs() {
  static const Certs c;
  return c;
}

// An SSL_CTX that trusts the test CA.
struct ClientContext {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  explicit ClientContext(const std::string& ca_pem) {
    BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
    X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
    X509_free(ca);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  }
  ~ClientContext() { SSL_CTX_free(ctx); }
};

std::unique_ptr<Duplex> connect(uint16_t port, SSL_CTX* tls) {
  auto tcp = dial_tcp("127.0.0.1", port, 5s);
  REQUIRE(tcp.is_ok());
  std::unique_ptr<Duplex> d = std::move(tcp).value();
  if (tls != nullptr) {
    auto t = tls_client(std::move(d), tls, "127.0.0.1", 5s);
    REQUIRE(t.is_ok());
    d = std::move(t).value();
  }
  d->set_deadline(Duplex::Clock::now() + 30s);
  return d;
}

// The server side of the tests: echoes what comes until the client ends its
// side, then says "bye" and ends its own.
void echo(std::shared_ptr<Duplex> d) {
  if (!d) return;
  std::thread([d] {
    std::string buf(100000, '\0');
    for (;;) {
      auto n = d->read(buf.data(), buf.size());
      if (!n.is_ok() || *n == 0) break;
      if (!d->write(std::string_view(buf.data(), *n)).is_ok()) return;
    }
    (void)d->write("bye");
    d->close_write();
  }).detach();
}

Response upgrade_to_echo(Request&) {
  Response r;
  r.status = 101;
  r.headers = {{"Upgrade", "echo"}, {"Connection", "Upgrade"}};
  r.upgrade = echo;
  return r;
}

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  return s;
}

std::string read_to_end(Duplex& d) {
  std::string out, buf(65536, '\0');
  for (;;) {
    auto n = d.read(buf.data(), buf.size());
    REQUIRE(n.is_ok());
    if (*n == 0) return out;
    out.append(buf.data(), *n);
  }
}

std::unique_ptr<Server> start(ServerOptions o, Handler h) {
  auto s = Server::start(std::move(o), std::move(h));
  REQUIRE(s.is_ok());
  return std::move(s).value();
}

TEST_CASE("An upgraded connection carries bytes both ways at once, over TLS and plain",
          "[http][upgrade]") {
  const bool tls = GENERATE(false, true);
  ServerOptions o;
  o.tls = TlsConfig{certs().bundle.serving.cert_pem, certs().bundle.serving.key_pem, ""};
  o.cleartext_allowed = [](std::string_view, std::string_view) { return true; };
  auto server = start(o, upgrade_to_echo);
  ClientContext ctx(certs().bundle.ca.cert_pem);
  auto d = connect(server->port(), tls ? ctx.ctx : nullptr);
  REQUIRE(write_request(*d, "GET", "/echo",
                        {{"Host", "x"}, {"Upgrade", "echo"}, {"Connection", "Upgrade"}})
              .is_ok());
  auto head = read_response_head(*d);
  REQUIRE(head.is_ok());
  CHECK(head->status == 101);
  CHECK(head->header("upgrade") == "echo");
  CHECK(head->header("Content-Length").empty());

  // More than every buffer between the two ends holds: the echo only
  // completes if both directions move at the same time.
  const std::string sent = pattern(24u << 20);
  std::thread writer([&] {
    for (size_t at = 0; at < sent.size(); at += 300000)
      REQUIRE(d->write(std::string_view(sent).substr(at, 300000)).is_ok());
    d->close_write();
  });
  std::string got = head->rest + read_to_end(*d);
  writer.join();
  size_t first_diff = 0;
  while (first_diff < std::min(got.size(), sent.size()) && got[first_diff] == sent[first_diff])
    ++first_diff;
  INFO("first difference at " << first_diff << " tail " << got.substr(got.size() - 3));
  REQUIRE(got.size() == sent.size() + 3);
  CHECK(got.substr(sent.size()) == "bye");
  CHECK(got.compare(0, sent.size(), sent) == 0);
}

TEST_CASE("A TLS writer waiting on a full socket ends when the client goes or the server stops",
          "[http][upgrade]") {
  const bool shutdown = GENERATE(false, true);
  std::atomic<int> failed{0};
  std::atomic<size_t> written{0};
  ServerOptions o;
  o.tls = TlsConfig{certs().bundle.serving.cert_pem, certs().bundle.serving.key_pem, ""};
  auto server = start(o, [&](Request&) {
    Response r;
    r.status = 101;
    r.headers = {{"Upgrade", "flood"}, {"Connection", "Upgrade"}};
    r.upgrade = [&](std::shared_ptr<Duplex> d) {
      REQUIRE(d);
      std::thread([d, &failed, &written] {
        // Large writes, many TLS records each, into a client that never reads.
        const std::string chunk = pattern(1u << 20);
        for (int i = 0; i < 4096; ++i) {
          if (!d->write(chunk).is_ok()) {
            ++failed;
            return;
          }
          written += chunk.size();
        }
      }).detach();
    };
    return r;
  });
  ClientContext ctx(certs().bundle.ca.cert_pem);
  auto d = connect(server->port(), ctx.ctx);
  REQUIRE(write_request(*d, "GET", "/", {{"Host", "x"}, {"Upgrade", "flood"},
                                         {"Connection", "Upgrade"}})
              .is_ok());
  auto head = read_response_head(*d);
  REQUIRE(head.is_ok());
  REQUIRE(head->status == 101);
  // The writer fills the socket buffers and waits.
  for (int i = 0; i < 200 && written < (1u << 20); ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(100ms);
  const size_t stalled = written;
  CHECK(stalled < (256u << 20));
  if (shutdown) {
    server->shutdown(0ms);
  } else {
    d->close();
    d.reset();
  }
  for (int i = 0; i < 500 && failed < 1; ++i) std::this_thread::sleep_for(10ms);
  CHECK(failed == 1);
}

TEST_CASE("Bytes a client sends right after its upgrade request reach the handler first",
          "[http][upgrade]") {
  auto server = start({}, upgrade_to_echo);
  auto d = connect(server->port(), nullptr);
  REQUIRE(
      d->write("GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nearly")
          .is_ok());
  d->close_write();
  auto head = read_response_head(*d);
  REQUIRE(head.is_ok());
  CHECK(head->status == 101);
  CHECK(head->rest + read_to_end(*d) == "earlybye");
}

TEST_CASE("Server shutdown and a vanished client end an upgraded connection", "[http][upgrade]") {
  std::atomic<int> ended{0};
  auto server = start({}, [&](Request&) {
    Response r;
    r.status = 101;
    r.headers = {{"Upgrade", "wait"}, {"Connection", "Upgrade"}};
    r.upgrade = [&](std::shared_ptr<Duplex> d) {
      REQUIRE(d);
      std::thread([d, &ended] {
        char c;
        auto n = d->read(&c, 1);  // nothing comes: only the end does
        CHECK((!n.is_ok() || *n == 0));
        ++ended;
      }).detach();
    };
    return r;
  });
  auto a = connect(server->port(), nullptr);
  auto b = connect(server->port(), nullptr);
  for (auto* d : {a.get(), b.get()}) {
    REQUIRE(write_request(*d, "GET", "/", {{"Host", "x"}}).is_ok());
    auto head = read_response_head(*d);
    REQUIRE(head.is_ok());
    REQUIRE(head->status == 101);
  }
  a->close();
  a.reset();
  for (int i = 0; i < 500 && ended < 1; ++i) std::this_thread::sleep_for(10ms);
  CHECK(ended == 1);
  server->shutdown(0ms);
  for (int i = 0; i < 500 && ended < 2; ++i) std::this_thread::sleep_for(10ms);
  CHECK(ended == 2);
  CHECK(read_to_end(*b).empty());  // the server's side closed
}

TEST_CASE("Response bodies are read whole: Content-Length, chunked and refused past a limit",
          "[http][upgrade]") {
  class Chunks : public ResponseStream {
   public:
    void start(std::shared_ptr<StreamSink> sink) override {
      sink->write("hello, ");
      sink->write("chunked world");
      sink->close();
    }
    void stop() override {}
  };
  auto server = start({}, [](Request& req) {
    Response r;
    if (req.path == "/chunked")
      r.stream = std::make_shared<Chunks>();
    else
      r.body = std::string(5000, 'x');
    return r;
  });
  for (std::string path : {"/plain", "/chunked"}) {
    auto d = connect(server->port(), nullptr);
    REQUIRE(write_request(*d, "GET", path, {{"Host", "x"}}).is_ok());
    auto head = read_response_head(*d);
    REQUIRE(head.is_ok());
    CHECK(head->status == 200);
    auto body = read_response_body(*d, *head, 1 << 20);
    REQUIRE(body.is_ok());
    CHECK(*body == (path == "/plain" ? std::string(5000, 'x') : "hello, chunked world"));
  }
  auto d = connect(server->port(), nullptr);
  REQUIRE(write_request(*d, "GET", "/plain", {{"Host", "x"}}).is_ok());
  auto head = read_response_head(*d);
  REQUIRE(head.is_ok());
  CHECK(read_response_body(*d, *head, 100).status().code() == Code::kTooLarge);
}

TEST_CASE("Dialing says why it failed, and TLS refuses a certificate it does not trust",
          "[http][upgrade]") {
  auto refused = dial_tcp("127.0.0.1", 1, 2s);
  REQUIRE(!refused.is_ok());
  CHECK(refused.status().message() == "dial tcp 127.0.0.1:1: connect: connection refused");

  ServerOptions o;
  o.tls = TlsConfig{certs().bundle.serving.cert_pem, certs().bundle.serving.key_pem, ""};
  auto server = start(o, upgrade_to_echo);
  ClientContext other(certs().bundle.admin.cert_pem);  // not the CA
  auto tcp = dial_tcp("127.0.0.1", server->port(), 2s);
  REQUIRE(tcp.is_ok());
  auto t = tls_client(std::move(tcp).value(), other.ctx, "127.0.0.1", 2s);
  REQUIRE(!t.is_ok());
  CHECK_THAT(t.status().message(), Catch::Contains("certificate not trusted"));
}

TEST_CASE("relay copies both directions and passes on each end of stream", "[http][upgrade]") {
  auto server = start({}, upgrade_to_echo);
  // The relay stands between a client (one end of a socket pair) and the
  // echo server, as a tenant stands between kubectl and its host.
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  std::unique_ptr<Duplex> client = socket_duplex(fds[0]);
  std::unique_ptr<Duplex> near = socket_duplex(fds[1]);
  auto far = connect(server->port(), nullptr);
  REQUIRE(write_request(*far, "GET", "/", {{"Host", "x"}}).is_ok());
  auto head = read_response_head(*far);
  REQUIRE(head.is_ok());
  auto upstream = with_prefix(std::move(far), head->rest);
  RelayCounts counts;
  std::thread relayer([&] { counts = relay(*near, *upstream); });
  const std::string sent = pattern(3u << 20);
  std::thread writer([&] {
    REQUIRE(client->write(sent).is_ok());
    client->close_write();
  });
  std::string got = read_to_end(*client);
  writer.join();
  relayer.join();
  CHECK(got == sent + "bye");
  CHECK(counts.a_to_b == sent.size());
  CHECK(counts.b_to_a == sent.size() + 3);
}

}  // namespace
}  // namespace vkube::http
