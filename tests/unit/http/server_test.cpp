// The HTTP transport as a client sees it: raw sockets for exact bytes, curl
// for TLS and client certificates.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "support/run.h"
#include "support/temp_dir.h"
#include "vkube/http/server.h"

namespace vkube::http {
namespace {

using namespace std::chrono_literals;
using testing::run;
using testing::TempDir;

// A blocking HTTP/1.1 client over one TCP connection; every read gives up
// after a few seconds so a broken server fails the test instead of hanging it.
class RawClient {
 public:
  struct Reply {
    int status = 0;
    std::string head;
    std::string body;
    bool complete = false;
  };

  explicit RawClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { close(); }

  bool connected() const { return connected_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Status line and headers of the next response; status 0 when none came.
  Reply read_head() {
    Reply r;
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return r;
    }
    r.head = buf_.substr(0, end + 4);
    buf_.erase(0, end + 4);
    if (r.head.size() > 12) r.status = std::atoi(r.head.substr(9, 3).c_str());
    return r;
  }

  // The data of the next chunk of a chunked body; nullopt at the last chunk
  // (or when the connection ends first, with `*ended` set).
  std::optional<std::string> read_chunk(bool* broken = nullptr) {
    std::string line;
    if (!read_line(line)) {
      if (broken) *broken = true;
      return std::nullopt;
    }
    size_t size = std::strtoul(line.c_str(), nullptr, 16);
    if (!ensure(size + 2)) {
      if (broken) *broken = true;
      return std::nullopt;
    }
    std::string data = buf_.substr(0, size);
    buf_.erase(0, size + 2);
    if (size == 0) return std::nullopt;
    return data;
  }

  Reply read_reply() {
    Reply r = read_head();
    if (r.status == 0) return r;
    std::string lower = r.head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("transfer-encoding: chunked") != std::string::npos) {
      bool broken = false;
      while (auto chunk = read_chunk(&broken)) r.body += *chunk;
      r.complete = !broken;
      return r;
    }
    size_t at = lower.find("content-length: ");
    size_t length =
        at == std::string::npos ? 0 : std::strtoul(lower.c_str() + at + 16, nullptr, 10);
    if (!ensure(length)) return r;
    r.body = buf_.substr(0, length);
    buf_.erase(0, length);
    r.complete = true;
    return r;
  }

  // True when the server closes the connection (EOF or reset) within the timeout.
  bool wait_closed() {
    char c[4096];
    for (;;) {
      ssize_t n = ::recv(fd_, c, sizeof c, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }

 private:
  bool fill() {
    char tmp[16384];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  bool ensure(size_t n) {
    while (buf_.size() < n) {
      if (!fill()) return false;
    }
    return true;
  }
  bool read_line(std::string& line) {
    size_t end;
    while ((end = buf_.find("\r\n")) == std::string::npos) {
      if (!fill()) return false;
    }
    line = buf_.substr(0, end);
    buf_.erase(0, end + 2);
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

std::unique_ptr<Server> start_server(Handler handler, ServerOptions options = {}) {
  options.worker_threads = 4;
  auto server = Server::start(std::move(options), std::move(handler));
  REQUIRE(server.is_ok());
  return std::move(server).value();
}

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 3000ms) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A producer that records what the transport tells it.
class TestStream : public ResponseStream {
 public:
  void start(std::shared_ptr<StreamSink> sink) override {
    std::lock_guard lock(mu_);
    sink_ = std::move(sink);
    started_ = true;
  }
  void stop() override { ++stops_; }

  std::shared_ptr<StreamSink> sink() {
    std::lock_guard lock(mu_);
    return sink_;
  }
  bool started() {
    std::lock_guard lock(mu_);
    return started_;
  }
  int stops() const { return stops_; }

 private:
  std::mutex mu_;
  std::shared_ptr<StreamSink> sink_;
  bool started_ = false;
  std::atomic<int> stops_{0};
};

Handler stream_handler(std::shared_ptr<TestStream> stream) {
  return [stream](Request&) {
    Response r;
    r.set_header("Content-Type", "application/json");
    r.stream = stream;
    return r;
  };
}

TEST_CASE("query strings and header helpers", "[http]") {
  CHECK(percent_decode("a%2Fb+c", false) == "a/b+c");
  CHECK(percent_decode("a%2fb+c", true) == "a/b c");
  CHECK(percent_decode("100%", false) == "100%");
  CHECK(percent_decode("%zz%4", false) == "%zz%4");

  auto params = parse_query("a=1&b=&c&&d=x%20y+z");
  REQUIRE(params.size() == 4);
  CHECK(params[0] == std::pair<std::string, std::string>{"a", "1"});
  CHECK(params[1] == std::pair<std::string, std::string>{"b", ""});
  CHECK(params[2] == std::pair<std::string, std::string>{"c", ""});
  CHECK(params[3] == std::pair<std::string, std::string>{"d", "x y z"});

  std::string_view q = "labelSelector=app%3Dweb%2Ctier+in+(a)&limit=5&limit=6&watch";
  CHECK(query_param(q, "labelSelector") == "app=web,tier in (a)");
  CHECK(query_param(q, "limit") == "5");
  CHECK(query_param(q, "watch") == "");
  CHECK_FALSE(query_param(q, "continue").has_value());

  Request req;
  req.headers = {{"Content-Type", "application/json"}, {"X-Twice", "1"}, {"x-twice", "2"}};
  CHECK(req.header("content-type") == "application/json");
  CHECK(req.header("X-TWICE") == "1");
  CHECK(req.header("Accept").empty());

  Response resp;
  resp.headers = {{"content-type", "text/plain"}, {"X-A", "1"}, {"Content-Type", "x"}};
  resp.set_header("Content-Type", "application/json");
  REQUIRE(resp.headers.size() == 2);
  CHECK(resp.headers[0].value == "application/json");
  resp.set_header("X-B", "2");
  CHECK(resp.headers.size() == 3);
}

TEST_CASE("plain HTTP: two requests on one keep-alive connection", "[http]") {
  std::atomic<bool> saw_tls{true};
  std::string remote;
  auto server = start_server([&](Request& req) {
    saw_tls = req.tls;
    remote = req.remote;
    Response r;
    r.set_header("Content-Type", "text/plain");
    r.body = req.method + " " + req.path + " ?" + req.query +
             " x=" + std::string(req.header("x-test")) + " body=" + req.body;
    return r;
  });

  RawClient client(server->port());
  REQUIRE(client.connected());
  REQUIRE(
      client.send("GET /api/v1/namespaces/a%20b/pods?limit=5&x=%2F HTTP/1.1\r\n"
                  "Host: test\r\nX-Test: one\r\n\r\n"));
  auto first = client.read_reply();
  CHECK(first.status == 200);
  CHECK(first.complete);
  CHECK_THAT(first.head,
             Catch::Contains("Content-Length: ") && Catch::Contains("Content-Type: text/plain"));
  CHECK(first.body == "GET /api/v1/namespaces/a b/pods ?limit=5&x=%2F x=one body=");
  CHECK(server->open_connections() == 1);

  REQUIRE(
      client.send("POST /api/v1/pods HTTP/1.1\r\nHost: test\r\nx-TEST: two\r\n"
                  "Content-Length: 5\r\n\r\nhello"));
  auto second = client.read_reply();
  CHECK(second.status == 200);
  CHECK(second.body == "POST /api/v1/pods ? x=two body=hello");
  CHECK_FALSE(saw_tls);
  CHECK_THAT(remote, Catch::StartsWith("127.0.0.1:"));

  client.close();
  CHECK(eventually([&] { return server->open_connections() == 0; }));
}

TEST_CASE("malformed requests and failing handlers get Status errors", "[http]") {
  auto server = start_server([](Request& req) -> Response {
    if (req.path == "/throw") throw std::runtime_error("boom");
    return Response{};
  });

  RawClient bad(server->port());
  REQUIRE(bad.send("GET / HTTP/1.1\r\nBad Header Without Colon\r\n\r\n"));
  auto reply = bad.read_reply();
  CHECK(reply.status == 400);
  CHECK_THAT(reply.body, Catch::Contains(R"("reason":"BadRequest")"));
  CHECK(bad.wait_closed());

  RawClient thrower(server->port());
  REQUIRE(thrower.send("GET /throw HTTP/1.1\r\nHost: x\r\n\r\n"));
  reply = thrower.read_reply();
  CHECK(reply.status == 500);
  CHECK_THAT(reply.body, Catch::Contains(R"("kind":"Status")") && Catch::Contains(R"("code":500)"));
  // The connection survives a failing handler.
  REQUIRE(thrower.send("GET /fine HTTP/1.1\r\nHost: x\r\n\r\n"));
  CHECK(thrower.read_reply().status == 200);
}

TEST_CASE("a body over the limit gets 413, one within it passes with 100-continue", "[http]") {
  std::atomic<int> calls{0};
  auto server = start_server([&](Request& req) {
    ++calls;
    Response r;
    r.body = std::to_string(req.body.size());
    return r;
  });
  const std::string expected =
      R"json({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)json"
      R"json("message":"the request body is too large (limit 3145728 bytes)",)json"
      R"json("reason":"RequestEntityTooLarge","code":413})json";

  // Sent in full without waiting, as kubectl would.
  RawClient client(server->port());
  std::string body(4u << 20, 'x');
  REQUIRE(client.send("POST /api/v1/configmaps HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n"));
  client.send(body);  // the server may already have answered
  auto reply = client.read_reply();
  CHECK(reply.status == 413);
  CHECK(reply.body == expected);
  CHECK_THAT(reply.head, Catch::Contains("Connection: close"));
  CHECK(client.wait_closed());

  // curl sends "Expect: 100-continue" for large bodies.
  TempDir dir;
  std::string url = "http://127.0.0.1:" + std::to_string(server->port()) + "/upload";
  { std::ofstream(dir.sub("big")) << body; }
  auto big = run("curl -sS --max-time 5 --data-binary @" + dir.sub("big") + " " + url);
  CHECK(big.output == expected);
  { std::ofstream(dir.sub("ok")) << std::string(2u << 20, 'y'); }
  auto ok = run("curl -sS --max-time 5 -H 'Expect: 100-continue' --data-binary @" + dir.sub("ok") +
                " " + url);
  CHECK(ok.output == std::to_string(2u << 20));
  CHECK(calls == 1);
}

// Certificates made with the openssl CLI: a self-signed serving certificate,
// a client CA with a client certificate (CN alice, O dev and ops), and a
// client certificate the CA did not sign.
struct TestCerts {
  TempDir dir;
  bool ok = false;

  TestCerts() {
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 ";
    const std::string d = dir.path() + "/";
    ok = run("openssl req -x509" + ec + "-keyout " + d + "server.key -out " + d +
             "server.crt -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1")
                 .exit_code == 0 &&
         run("openssl req -x509" + ec + "-keyout " + d + "ca.key -out " + d +
             "ca.crt -subj /CN=test-ca")
                 .exit_code == 0 &&
         run("openssl req" + ec + "-keyout " + d + "client.key -out " + d +
             "client.csr -subj /CN=alice/O=dev/O=ops")
                 .exit_code == 0 &&
         run("openssl x509 -req -days 1 -in " + d + "client.csr -CA " + d + "ca.crt -CAkey " + d +
             "ca.key -CAcreateserial -out " + d + "client.crt")
                 .exit_code == 0 &&
         run("openssl req -x509" + ec + "-keyout " + d + "other.key -out " + d +
             "other.crt -subj /CN=mallory/O=system:masters")
                 .exit_code == 0;
  }
  std::string file(const std::string& name) const { return read_file(dir.sub(name)); }
  std::string path(const std::string& name) const { return dir.sub(name); }
};

// Made once per test run: the openssl CLI is the slow part of these tests.
const TestCerts& certs() {
  static const TestCerts certs;
  return certs;
}

Response whoami(Request& req) {
  Response r;
  r.body = req.tls ? "tls" : "plain";
  if (req.peer) {
    r.body += " cn=" + req.peer->common_name + " o=";
    for (size_t i = 0; i < req.peer->organizations.size(); ++i) {
      r.body += (i ? "," : "") + req.peer->organizations[i];
    }
  } else {
    r.body += " anonymous";
  }
  return r;
}

TEST_CASE("a TLS port serves cleartext only where it is allowed, never with credentials",
          "[http]") {
  const TestCerts& certs = http::certs();
  REQUIRE(certs.ok);
  ServerOptions options;
  options.tls = TlsConfig{certs.file("server.crt"), certs.file("server.key"), ""};
  options.cleartext_allowed = [](std::string_view, std::string_view target) {
    return target == "/whoami";
  };
  auto server = start_server(whoami, options);
  std::string port = std::to_string(server->port());

  auto tls = run("curl -sS --max-time 5 --cacert " + certs.path("server.crt") +
                 " https://127.0.0.1:" + port + "/whoami https://127.0.0.1:" + port + "/again");
  CHECK(tls.output == "tls anonymoustls anonymous");
  auto plain = run("curl -sS --max-time 5 http://127.0.0.1:" + port + "/whoami");
  CHECK(plain.output == "plain anonymous");
  // Go's net/http answer, then the connection closes.
  const std::string go_refusal =
      "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
  auto other = run("curl -sS -i --max-time 5 http://127.0.0.1:" + port + "/again");
  CHECK(other.output == go_refusal);
  auto token = run(
      "curl -sS -i --max-time 5 -H 'Authorization: Bearer t' http://127.0.0.1:" + port + "/whoami");
  CHECK(token.output == go_refusal);

  ServerOptions bad;
  bad.tls = TlsConfig{certs.file("server.crt"), certs.file("other.key"), ""};
  auto refused = Server::start(bad, whoami);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == Code::kInvalid);
}

TEST_CASE("TLS connections keep their deadlines and read what arrives in any shape", "[http]") {
  // Pipelined requests in one record, a request sent a byte per record, and
  // clients that stall: in the handshake, in a request, or idle between two.
  const TestCerts& certs = http::certs();
  REQUIRE(certs.ok);
  ServerOptions options;
  options.tls = TlsConfig{certs.file("server.crt"), certs.file("server.key"), ""};
  options.read_timeout = std::chrono::seconds(1);
  options.idle_timeout = std::chrono::seconds(1);
  auto server = start_server(
      [](Request& req) {
        Response r;
        r.body = "path=" + req.path;
        return r;
      },
      options);
  TempDir dir;
  std::ofstream(dir.sub("shapes.py")) << R"(
import socket, ssl, sys, time
port = int(sys.argv[1])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE

def tls():
    return ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)))

def read_all(s):
    data = b""
    while True:
        try:
            b = s.recv(65536)
        except (ConnectionResetError, ssl.SSLError, OSError):
            break
        if not b:
            break
        data += b
    return data

def closed_after(s):
    start = time.monotonic()
    read_all(s)
    return time.monotonic() - start

s = tls()
s.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
data = read_all(s)
print("pipelined", data.count(b"HTTP/1.1 200"), b"path=/a" in data, b"path=/b" in data)

s = tls()
for c in b"GET /bytes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n":
    s.sendall(bytes([c]))
print("bytewise", b"path=/bytes" in read_all(s))

s = tls()
s.sendall(b"GET /idle HTTP/1.1\r\nHost: x\r\n\r\n")
time.sleep(0.2)
t = closed_after(s)
print("idle", 0.5 < t < 3)

s = tls()
s.sendall(b"GET /stalled HTTP/1.1\r\n")
print("stalled request", closed_after(s) < 3)

raw = socket.create_connection(("127.0.0.1", port))
raw.sendall(b"\x16\x03\x01\x00\x80")
print("stalled handshake", closed_after(raw) < 3)
)";
  auto r = run("timeout 30 /usr/bin/python3 " + dir.sub("shapes.py") + " " +
               std::to_string(server->port()));
  CHECK(r.output ==
        "pipelined 2 True True\n"
        "bytewise True\n"
        "idle True\n"
        "stalled request True\n"
        "stalled handshake True\n");
  CHECK(eventually([&] { return server->open_connections() == 0; }));
}
TEST_CASE("a verified client certificate names the peer", "[http]") {
  const TestCerts& certs = http::certs();
  REQUIRE(certs.ok);
  ServerOptions options;
  options.tls = TlsConfig{certs.file("server.crt"), certs.file("server.key"), certs.file("ca.crt")};
  auto server = start_server(whoami, options);
  std::string curl =
      "curl -sS --max-time 5 -k https://127.0.0.1:" + std::to_string(server->port()) + "/whoami";

  auto alice =
      run(curl + " --cert " + certs.path("client.crt") + " --key " + certs.path("client.key"));
  CHECK(alice.output == "tls cn=alice o=dev,ops");
  // Asked, not required: token users connect without a certificate.
  CHECK(run(curl).output == "tls anonymous");
  // A certificate the CA did not sign fails the handshake.
  auto mallory =
      run(curl + " --cert " + certs.path("other.crt") + " --key " + certs.path("other.key"));
  CHECK(mallory.exit_code != 0);
  CHECK_THAT(mallory.output, !Catch::Contains("cn="));
}

// Writes from start() itself, as a watch replaying its initial events does.
class EagerStream : public ResponseStream {
 public:
  EagerStream(std::vector<std::string> chunks, bool finish)
      : chunks_(std::move(chunks)), finish_(finish) {}
  void start(std::shared_ptr<StreamSink> sink) override {
    for (const auto& c : chunks_) sink->write(c);
    if (finish_) sink->close();
    sink_ = std::move(sink);
  }
  void stop() override { ++stops; }
  std::atomic<int> stops{0};

 private:
  std::vector<std::string> chunks_;
  bool finish_;
  std::shared_ptr<StreamSink> sink_;
};

TEST_CASE("responses and streams over TLS, large ones too, end by either side", "[http]") {
  const TestCerts& certs = http::certs();
  REQUIRE(certs.ok);
  const std::string big(300 * 1024, 'x');
  auto finished = std::make_shared<EagerStream>(std::vector<std::string>{"a", "b"}, true);
  auto endless = std::make_shared<EagerStream>(std::vector<std::string>{"a", "b"}, false);
  auto large = std::make_shared<EagerStream>(std::vector<std::string>{"s", big, "s", big}, true);
  ServerOptions options;
  options.tls = TlsConfig{certs.file("server.crt"), certs.file("server.key"), ""};
  auto server = start_server(
      [&](Request& req) {
        Response r;
        if (req.path == "/large") {
          r.body = big;
          return r;
        }
        r.stream = req.path == "/finished" ? finished : req.path == "/big" ? large : endless;
        return r;
      },
      options);
  std::string url = "https://127.0.0.1:" + std::to_string(server->port());
  std::string curl = "curl -sS -k --max-time 5 ";

  auto sizes = run(curl + "-o /dev/null -o /dev/null -w '%{size_download} ' " + url + "/large " +
                   url + "/big");
  CHECK(sizes.output ==
        std::to_string(big.size()) + " " + std::to_string(2 * big.size() + 2) + " ");
  CHECK(run(curl + url + "/finished").output == "ab");
  CHECK(finished->stops == 0);
  // -s without -S: curl's timeout message would interleave with the body.
  auto cut = run("curl -s -k --max-time 0.3 " + url + "/endless");
  CHECK(cut.output == "ab");
  CHECK(eventually([&] { return endless->stops == 1; }));
}

// Reads one streamed response with an 8 KiB receive buffer, 8 KiB a
// millisecond, over TLS or plain TCP, and returns its decoded body.
std::string read_stream_slowly(uint16_t port, const std::string& mode) {
  TempDir dir;
  std::ofstream(dir.sub("slow.py")) << R"(
import socket, ssl, sys, time
port, tls = int(sys.argv[1]), sys.argv[2] == "tls"
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
s.connect(("127.0.0.1", port))
if tls:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    s = ctx.wrap_socket(s)
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
data = b""
while True:
    b = s.recv(8192)
    if not b:
        break
    data += b
    time.sleep(0.001)
head, _, body = data.partition(b"\r\n\r\n")
out = b""
while True:
    line, _, body = body.partition(b"\r\n")
    n = int(line, 16)
    if n == 0:
        break
    out += body[:n]
    body = body[n + 2:]
sys.stdout.buffer.write(out)
)";
  return run("timeout 30 /usr/bin/python3 " + dir.sub("slow.py") + " " + std::to_string(port) +
             " " + mode)
      .output;
}

TEST_CASE("a stream to a client that reads slowly waits for it and loses nothing", "[http]") {
  // 4 MiB queued at once for a client with an 8 KiB receive buffer that
  // reads 8 KiB a millisecond: the socket fills, the connection waits for it
  // to drain (SSL_ERROR_WANT_WRITE under TLS), then goes on.
  const TestCerts& certs = http::certs();
  REQUIRE(certs.ok);
  std::vector<std::string> chunks;
  for (int i = 0; i < 64; ++i)
    chunks.push_back(std::string(64 * 1024, static_cast<char>('a' + i % 26)));
  auto stream = std::make_shared<EagerStream>(chunks, true);
  ServerOptions options;
  options.tls = TlsConfig{certs.file("server.crt"), certs.file("server.key"), ""};
  options.cleartext_allowed = [](std::string_view, std::string_view) { return true; };
  auto server = start_server(
      [&](Request&) {
        Response r;
        r.stream = stream;
        return r;
      },
      options);
  std::string want;
  for (const auto& c : chunks) want += c;
  for (std::string mode : {"tls", "plain"}) {
    INFO(mode);
    std::string body = read_stream_slowly(server->port(), mode);
    CHECK(body.size() == want.size());
    CHECK((body == want));
  }
  CHECK(stream->stops == 0);
}

TEST_CASE("a stream delivers chunks written from another thread until the client leaves",
          "[http]") {
  auto stream = std::make_shared<TestStream>();
  auto server = start_server(stream_handler(stream));
  RawClient client(server->port());
  REQUIRE(client.send("GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto head = client.read_head();
  CHECK(head.status == 200);
  CHECK_THAT(head.head, Catch::Contains("Transfer-Encoding: chunked") &&
                            Catch::Contains("Content-Type: application/json") &&
                            !Catch::Contains("Content-Length"));
  REQUIRE(eventually([&] { return stream->started(); }));

  std::thread producer([sink = stream->sink()] {
    sink->write("{\"type\":\"ADDED\"}\n");
    sink->write("");  // ignored: it would end the response
    sink->write("{\"type\":\"MODIFIED\"}\n");
  });
  producer.join();
  CHECK(client.read_chunk() == "{\"type\":\"ADDED\"}\n");
  CHECK(client.read_chunk() == "{\"type\":\"MODIFIED\"}\n");
  CHECK(stream->stops() == 0);

  client.close();
  CHECK(eventually([&] { return stream->stops() == 1; }));
  CHECK(eventually([&] { return !stream->sink()->write("late"); }));
  CHECK(eventually([&] { return server->open_connections() == 0; }));
  std::this_thread::sleep_for(20ms);
  CHECK(stream->stops() == 1);
}

TEST_CASE("a stream closed by its producer ends with the last chunk", "[http]") {
  auto stream = std::make_shared<TestStream>();
  auto server = start_server(stream_handler(stream));
  RawClient client(server->port());
  REQUIRE(client.send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n"));
  CHECK(client.read_head().status == 200);
  REQUIRE(eventually([&] { return stream->started(); }));
  auto sink = stream->sink();
  CHECK(sink->write("a"));
  CHECK(sink->write("b"));
  sink->close();
  CHECK_FALSE(sink->write("c"));

  std::string body;
  bool broken = false;
  while (auto chunk = client.read_chunk(&broken)) body += *chunk;
  CHECK_FALSE(broken);
  CHECK(body == "ab");
  CHECK(client.wait_closed());
  CHECK(stream->stops() == 0);
}

TEST_CASE("a client too slow for its stream is cut off", "[http]") {
  auto stream = std::make_shared<TestStream>();
  ServerOptions options;
  options.stream_buffer_limit = 256 * 1024;
  auto server = start_server(stream_handler(stream), options);
  RawClient client(server->port());  // sends, then never reads
  REQUIRE(client.send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n"));
  REQUIRE(eventually([&] { return stream->started(); }));
  auto sink = stream->sink();
  std::string chunk(64 * 1024, 'z');
  bool refused = false;
  for (int i = 0; i < 4000 && !refused; ++i) refused = !sink->write(chunk);
  CHECK(refused);
  CHECK(eventually([&] { return stream->stops() == 1; }));
  CHECK(eventually([&] { return server->open_connections() == 0; }));
}

TEST_CASE("a producer on the stream's own thread writes in order, straight or queued", "[http]") {
  // write_here sends at once when nothing is ahead of it; after a queued
  // write() or a chunk the socket did not take (a client that reads slowly),
  // later chunks queue behind, so the order holds either way.
  const TestCerts& certs = http::certs();
  REQUIRE(certs.ok);
  ServerOptions options;
  options.tls = TlsConfig{certs.file("server.crt"), certs.file("server.key"), ""};
  options.cleartext_allowed = [](std::string_view, std::string_view) { return true; };
  const std::string big(1024 * 1024, 'x');
  for (std::string mode : {"tls", "plain"}) {
    INFO(mode);
    auto stream = std::make_shared<TestStream>();
    auto server = start_server(stream_handler(stream), options);
    std::string body;
    std::thread client([&] { body = read_stream_slowly(server->port(), mode); });
    REQUIRE(eventually([&] { return stream->started(); }));
    std::this_thread::sleep_for(50ms);  // the head has gone out
    auto sink = stream->sink();
    auto home = sink->home();
    REQUIRE(home != nullptr);
    std::atomic<bool> done{false};
    std::thread::id ran_on;
    home->post([&, sink] {
      ran_on = std::this_thread::get_id();
      CHECK(sink->write_here("a"));
      CHECK(sink->write("b"));
      CHECK(sink->write_here("c"));
      CHECK(sink->write_here(big));
      CHECK(sink->write_here("d"));
      CHECK(sink->write_here("e"));
      sink->close();
      CHECK_FALSE(sink->write_here("f"));
      done = true;
    });
    CHECK(eventually([&] { return done.load(); }));
    client.join();
    CHECK(body.size() == big.size() + 5);
    CHECK((body == "abc" + big + "de"));
    CHECK(ran_on != std::this_thread::get_id());
    CHECK(stream->stops() == 0);

    // Once the transport is gone, tasks are dropped, not run.
    server->shutdown(0ms);
    auto dropped = std::make_shared<int>(0);
    home->post([dropped] { ++*dropped; });
    CHECK(dropped.use_count() == 1);
    CHECK(*dropped == 0);
  }
}
TEST_CASE("shutdown stops open streams and ends them with the last chunk", "[http]") {
  auto stream = std::make_shared<TestStream>();
  auto server = start_server(stream_handler(stream));
  RawClient watcher(server->port());
  REQUIRE(watcher.send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n"));
  CHECK(watcher.read_head().status == 200);
  REQUIRE(eventually([&] { return stream->started(); }));
  REQUIRE(stream->sink()->write("event\n"));
  RawClient idle(server->port());  // an idle keep-alive connection

  auto before = std::chrono::steady_clock::now();
  server->shutdown(2000ms);
  CHECK(std::chrono::steady_clock::now() - before < 1500ms);
  CHECK(stream->stops() == 1);
  CHECK(server->open_connections() == 0);
  CHECK_FALSE(stream->sink()->write("after"));

  std::string body;
  bool broken = false;
  while (auto chunk = watcher.read_chunk(&broken)) body += *chunk;
  CHECK_FALSE(broken);
  CHECK(body == "event\n");
  CHECK(watcher.wait_closed());
  CHECK(idle.wait_closed());
  server->shutdown(0ms);  // idempotent
  CHECK(stream->stops() == 1);
}

TEST_CASE("shutdown lets an in-flight handler answer", "[http]") {
  std::atomic<bool> entered{false};
  auto server = start_server([&](Request&) {
    entered = true;
    std::this_thread::sleep_for(200ms);
    Response r;
    r.body = "done";
    return r;
  });
  RawClient client(server->port());
  REQUIRE(client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  REQUIRE(eventually([&] { return entered.load(); }));
  std::thread stopper([&] { server->shutdown(2000ms); });
  auto reply = client.read_reply();
  CHECK(reply.status == 200);
  CHECK(reply.body == "done");
  CHECK_THAT(reply.head, Catch::Contains("Connection: close"));
  CHECK(client.wait_closed());
  client.close();
  stopper.join();
  CHECK(server->open_connections() == 0);
}

TEST_CASE("a deferred answer is sent when completed, from any thread, in order", "[http]") {
  // Completed later by another thread, or before the handler returns; the
  // handler's worker is not held meanwhile (2 workers serve 3 pending).
  std::mutex mu;
  std::vector<std::shared_ptr<DeferredResponse>> pending;
  ServerOptions o;
  o.worker_threads = 2;
  auto server = Server::start(o, [&](Request& req) {
    auto d = std::make_shared<DeferredResponse>();
    d->then([](Response& r) { r.set_header("X-Step", "one"); });
    Response later;
    later.deferred = d;
    if (req.path == "/now") {
      Response r;
      r.status = 201;
      r.body = "now";
      d->complete(std::move(r));
    } else {
      std::lock_guard lock(mu);
      pending.push_back(d);
    }
    d->then([](Response& r) { r.body += "+two"; });
    return later;
  });
  REQUIRE(server.is_ok());

  RawClient now((*server)->port());
  REQUIRE(now.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto first = now.read_reply();
  CHECK(first.status == 201);
  CHECK(first.body == "now+two");
  CHECK_THAT(first.head, Catch::Contains("X-Step: one"));

  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<RawClient>((*server)->port()));
    REQUIRE(clients.back()->send("GET /later HTTP/1.1\r\nHost: x\r\n\r\n"));
  }
  REQUIRE(eventually([&] {
    std::lock_guard lock(mu);
    return pending.size() == 3;
  }));
  std::thread finisher([&] {
    std::lock_guard lock(mu);
    for (size_t i = 0; i < pending.size(); ++i) {
      Response r;
      r.status = 200;
      r.body = "later " + std::to_string(i);
      pending[i]->complete(std::move(r));
    }
  });
  finisher.join();
  std::set<std::string> bodies;
  for (auto& c : clients) {
    auto reply = c->read_reply();
    CHECK(reply.status == 200);
    CHECK_THAT(reply.head, Catch::Contains("X-Step: one"));
    bodies.insert(reply.body);
  }
  CHECK(bodies == std::set<std::string>{"later 0+two", "later 1+two", "later 2+two"});
  // The connection goes on with the next request.
  REQUIRE(now.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n"));
  CHECK(now.read_reply().body == "now+two");
}

TEST_CASE("requests that run inline are answered while every worker is busy", "[http]") {
  // One worker, held by a slow request; /fast runs on the I/O thread
  // (runs_inline), deferred or not, and answers meanwhile.
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  ServerOptions o;
  o.worker_threads = 1;
  o.runs_inline = [](const Request& req) { return req.path.starts_with("/fast"); };
  std::atomic<int> slow_started{0};
  auto server = Server::start(o, [&](Request& req) {
    Response r;
    if (req.path == "/slow") {
      ++slow_started;
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return release; });
      r.body = "slow";
      return r;
    }
    if (req.path == "/fast/deferred") {
      auto d = std::make_shared<DeferredResponse>();
      std::thread([d] {
        Response done;
        done.status = 201;
        done.body = "deferred";
        d->complete(std::move(done));
      }).detach();
      r.deferred = d;
      return r;
    }
    r.body = "fast";
    return r;
  });
  REQUIRE(server.is_ok());

  RawClient slow((*server)->port());
  REQUIRE(slow.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"));
  REQUIRE(eventually([&] { return slow_started.load() == 1; }));

  RawClient fast((*server)->port());
  REQUIRE(fast.send("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto reply = fast.read_reply();
  CHECK(reply.status == 200);
  CHECK(reply.body == "fast");
  REQUIRE(fast.send("POST /fast/deferred HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
  reply = fast.read_reply();
  CHECK(reply.status == 201);
  CHECK(reply.body == "deferred");

  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  auto slow_reply = slow.read_reply();
  CHECK(slow_reply.status == 200);
  CHECK(slow_reply.body == "slow");
}

TEST_CASE("several I/O threads each serve their own connections", "[http]") {
  // Connections are spread over the I/O threads; each keeps one thread for
  // all its requests (inline ones run there).
  ServerOptions o;
  o.io_threads = 3;
  o.runs_inline = [](const Request&) { return true; };
  std::mutex mu;
  std::map<std::string, std::set<std::thread::id>> threads_by_client;
  auto server = start_server(
      [&](Request& req) {
        std::lock_guard lock(mu);
        threads_by_client[std::string(req.header("X-Client"))].insert(std::this_thread::get_id());
        Response r;
        r.body = req.header("X-Client");
        return r;
      },
      o);
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 6; ++i) clients.push_back(std::make_unique<RawClient>(server->port()));
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 6; ++i) {
      REQUIRE(clients[static_cast<size_t>(i)]->send("GET / HTTP/1.1\r\nHost: x\r\nX-Client: c" +
                                                    std::to_string(i) + "\r\n\r\n"));
    }
    for (int i = 0; i < 6; ++i) {
      auto reply = clients[static_cast<size_t>(i)]->read_reply();
      CHECK(reply.status == 200);
      CHECK(reply.body == "c" + std::to_string(i));
    }
  }
  std::set<std::thread::id> all;
  for (const auto& [client, ids] : threads_by_client) {
    CHECK(ids.size() == 1);
    all.insert(ids.begin(), ids.end());
  }
  CHECK(threads_by_client.size() == 6);
  CHECK(all.size() == 3);
  server->shutdown(std::chrono::milliseconds(100));
}

TEST_CASE("DeferredResponse::wait gives the final answer", "[http]") {
  auto d = std::make_shared<DeferredResponse>();
  Response r;
  r.deferred = d;
  std::thread later([d] {
    std::this_thread::sleep_for(20ms);
    Response done;
    done.status = 409;
    d->complete(std::move(done));
  });
  Response got = DeferredResponse::wait(std::move(r));
  later.join();
  CHECK(got.status == 409);
  CHECK_FALSE(got.deferred);
  Response plain;
  plain.status = 204;
  CHECK(DeferredResponse::wait(std::move(plain)).status == 204);
}

TEST_CASE("idle keep-alive connections are closed", "[http]") {
  ServerOptions options;
  options.idle_timeout = std::chrono::seconds(1);
  auto server = start_server([](Request&) { return Response{}; }, options);
  RawClient client(server->port());
  REQUIRE(client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  CHECK(client.read_reply().status == 200);
  auto before = std::chrono::steady_clock::now();
  CHECK(client.wait_closed());
  CHECK(std::chrono::steady_clock::now() - before < 3s);
}

TEST_CASE("a port in use is reported as unavailable", "[http]") {
  auto first = start_server([](Request&) { return Response{}; });
  ServerOptions options;
  options.port = first->port();
  auto second = Server::start(options, [](Request&) { return Response{}; });
  REQUIRE_FALSE(second.is_ok());
  CHECK(second.status().code() == Code::kUnavailable);
  CHECK_THAT(second.status().message(), Catch::Contains("in use"));

  options.host = "192.0.2.1";  // TEST-NET-1: not an address of this machine
  options.port = 0;
  auto bad = Server::start(options, [](Request&) { return Response{}; });
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().code() == Code::kInvalid);
}

}  // namespace
}  // namespace vkube::http
