// bench_list_flood: what a burst of concurrent full LISTs costs a `vkube
// serve` in memory, and how many of them it turns away with 429.
//
// It starts `vkube serve` on a fresh data directory (127.0.0.1, a free port),
// creates N ConfigMaps of V bytes each in namespace default (8 connections),
// then opens C TLS connections with the admin certificate, and once all are
// open sends one GET /api/v1/namespaces/default/configmaps on each at the
// same moment. Every response is read whole (and discarded) as fast as the
// client can. The server's RSS is sampled every 2 ms meanwhile; its VmHWM
// (the kernel's peak) is read before and after.
//
// Printed: the list size, the answers by status (200, 429, other), the
// server's RSS before the burst, its peak during it (sampled and VmHWM),
// the burst's wall time, and the latency of each LIST answered 200 at the
// first try (p50, p99, max, from the moment all clients are released).
// With --retries K, a 429 is retried after its Retry-After, up to K times,
// as client-go does; the final counts are printed too. --rounds R repeats
// the burst R times (new connections each time) and prints the figures of
// all rounds together, then the server's RSS at once and after --idle S
// seconds without requests (3). Arguments after "--" go to `vkube serve`
// as they are (e.g. -- --max-read-inflight-mib 0 to measure without the
// byte budget).
//
// A benchmark, not a test: it exits 0 whatever the numbers; 1 when the
// server does not start or setup fails. The server is stopped and the data
// directory removed before it exits.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "children.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Config {
  std::string vkube = VKUBE_BENCH_DEFAULT_VKUBE;
  int objects = 3000;
  int value_bytes = 1024;
  int clients = 500;
  int retries = 0;
  int rounds = 1;
  double idle_s = 3;
  std::vector<std::string> serve_args;
};

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "bench_list_flood: %s\n", message.c_str());
  for (auto& slot : vkube::bench::g_children) {
    if (pid_t pid = slot.load(); pid > 0) kill(pid, SIGKILL);
  }
  std::exit(1);
}

uint16_t free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    fail("cannot find a free port");
  close(fd);
  return ntohs(addr.sin_port);
}

// A kB figure from /proc/PID/status ("VmRSS", "VmHWM"); -1 when gone.
long proc_kb(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(field) && line[std::strlen(field)] == ':')
      return std::strtol(line.c_str() + std::strlen(field) + 1, nullptr, 10);
  }
  return -1;
}

// One blocking keep-alive HTTPS connection to the server.
class Conn {
 public:
  Conn(SSL_CTX* ctx, uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{60, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return;
    ssl_ = SSL_new(ctx);
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, "127.0.0.1");
    ok_ = SSL_connect(ssl_) == 1;
  }
  ~Conn() {
    if (ssl_) SSL_free(ssl_);
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return ok_; }

  struct Answer {
    int status = -1;  // -1: the connection failed
    size_t body_bytes = 0;
    int retry_after = 0;
    std::string body;  // kept only when asked
  };

  Answer request(const std::string& method, const std::string& path, const std::string& body,
                 bool keep_body) {
    Answer a;
    if (!ok_) return a;
    std::string req =
        method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n";
    if (!body.empty())
      req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n";
    req += "\r\n" + body;
    if (SSL_write(ssl_, req.data(), static_cast<int>(req.size())) <= 0) return a;
    std::string head;
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return a;
    head = buf_.substr(0, end + 2);
    buf_.erase(0, end + 4);
    a.status = std::atoi(head.c_str() + 9);
    std::string lower = head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t cl = lower.find("\r\ncontent-length:");
    size_t length =
        cl == std::string::npos ? 0 : std::strtoul(lower.c_str() + cl + 17, nullptr, 10);
    if (size_t ra = lower.find("\r\nretry-after:"); ra != std::string::npos)
      a.retry_after = std::atoi(lower.c_str() + ra + 14);
    while (a.body_bytes < length) {
      if (buf_.empty() && !fill()) {
        a.status = -1;
        return a;
      }
      size_t take = std::min(buf_.size(), length - a.body_bytes);
      if (keep_body) a.body.append(buf_, 0, take);
      buf_.erase(0, take);
      a.body_bytes += take;
    }
    return a;
  }

 private:
  bool fill() {
    char chunk[64 * 1024];
    int n = SSL_read(ssl_, chunk, sizeof chunk);
    if (n <= 0) return false;
    buf_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  bool ok_ = false;
  std::string buf_;
};

SSL_CTX* client_tls(const std::string& pki) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (SSL_CTX_load_verify_locations(ctx, (pki + "/ca.crt").c_str(), nullptr) != 1 ||
      SSL_CTX_use_certificate_chain_file(ctx, (pki + "/admin.crt").c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, (pki + "/admin.key").c_str(), SSL_FILETYPE_PEM) != 1)
    fail("client TLS from " + pki + " failed");
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return ctx;
}

void create_objects(SSL_CTX* ctx, uint16_t port, const Config& config) {
  const std::string value(static_cast<size_t>(config.value_bytes), 'v');
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      Conn c(ctx, port);
      if (!c.ok()) return void(failed = true);
      for (int i; (i = next++) < config.objects;) {
        std::string body = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-)" +
                           std::to_string(i) + R"("},"data":{"key":")" + value + "\"}}";
        for (;;) {
          auto a = c.request("POST", "/api/v1/namespaces/default/configmaps", body, false);
          if (a.status == 201 || a.status == 409) break;
          if (a.status != 429) return void(failed = true);
          std::this_thread::sleep_for(std::chrono::seconds(std::max(1, a.retry_after)));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failed) fail("creating the ConfigMaps failed");
}

struct Flood {
  std::map<int, int> first;  // status of each client's first answer
  std::map<int, int> last;   // after retries
  size_t list_bytes = 0;
  long peak_rss_kb = 0;
  double seconds = 0;
  std::vector<double> ms;  // each first request's latency, from the common start
};

Flood flood(SSL_CTX* ctx, uint16_t port, pid_t server, const Config& config) {
  Flood out;
  std::mutex mu;
  std::barrier start(config.clients + 1);
  std::atomic<bool> done{false};
  std::vector<std::thread> clients;
  for (int i = 0; i < config.clients; ++i) {
    clients.emplace_back([&] {
      Conn c(ctx, port);
      start.arrive_and_wait();
      const std::string path = "/api/v1/namespaces/default/configmaps";
      auto t0 = Clock::now();
      auto a = c.ok() ? c.request("GET", path, "", false) : Conn::Answer{};
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      int first = a.status;
      for (int r = 0; r < config.retries && a.status == 429; ++r) {
        std::this_thread::sleep_for(std::chrono::seconds(std::max(1, a.retry_after)));
        a = c.request("GET", path, "", false);
      }
      std::lock_guard lock(mu);
      ++out.first[first];
      ++out.last[a.status];
      if (first == 200) out.ms.push_back(ms);
      if (a.status == 200) out.list_bytes = a.body_bytes;
    });
  }
  std::thread sampler([&] {
    while (!done) {
      out.peak_rss_kb = std::max(out.peak_rss_kb, proc_kb(server, "VmRSS"));
      std::this_thread::sleep_for(2ms);
    }
  });
  start.arrive_and_wait();
  auto t0 = Clock::now();
  for (auto& t : clients) t.join();
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  done = true;
  sampler.join();
  return out;
}

// The q-quantile (nearest rank) of sorted values; 0 when there are none.
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(q * static_cast<double>(sorted.size()) + 0.999999);
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

std::string counts(const std::map<int, int>& by_status) {
  int ok = 0, throttled = 0, other = 0;
  for (auto [status, n] : by_status) {
    (status == 200 ? ok : status == 429 ? throttled : other) += n;
  }
  return std::to_string(ok) + " x 200, " + std::to_string(throttled) + " x 429, " +
         std::to_string(other) + " other";
}

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--") {
      c.serve_args.assign(argv + i + 1, argv + argc);
      break;
    } else if (arg == "--vkube") {
      c.vkube = value();
    } else if (arg == "--objects") {
      c.objects = std::stoi(value());
    } else if (arg == "--value-bytes") {
      c.value_bytes = std::stoi(value());
    } else if (arg == "--clients") {
      c.clients = std::stoi(value());
    } else if (arg == "--retries") {
      c.retries = std::stoi(value());
    } else if (arg == "--idle") {
      c.idle_s = std::stod(value());
    } else if (arg == "--rounds") {
      c.rounds = std::max(1, std::stoi(value()));
    } else {
      std::printf(
          "usage: bench_list_flood [--vkube PATH] [--objects N (3000)] [--value-bytes V (1024)]\n"
          "                        [--clients C (500)] [--retries K (0)] [--rounds R (1)]\n"
          "                        [--idle S (3)]\n"
          "                        [-- vkube serve flags]\n");
      std::exit(arg == "--help" ? 0 : 1);
    }
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  Config config = parse(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/bench-list-flood-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) fail("mkdtemp failed");
  const std::string dir = tmpl;
  const uint16_t port = free_port();
  std::vector<std::string> args = {config.vkube,  "serve",    "--data-dir",
                                   dir + "/data", "--listen", "127.0.0.1:" + std::to_string(port),
                                   "--log-level", "warn"};
  args.insert(args.end(), config.serve_args.begin(), config.serve_args.end());
  pid_t server = vkube::bench::spawn_to_files(args, dir + "/log", dir + "/log");
  if (server < 0) fail("cannot start " + config.vkube);
  vkube::bench::track_child(server);

  SSL_CTX* ctx = nullptr;
  for (auto deadline = Clock::now() + 60s;
       !ctx || Conn(ctx, port).request("GET", "/readyz", "", false).status != 200;) {
    if (Clock::now() > deadline || waitpid(server, nullptr, WNOHANG) == server)
      fail("the server did not become ready; see " + dir + "/log");
    if (!ctx && fs::exists(dir + "/data/admin.kubeconfig")) ctx = client_tls(dir + "/data/pki");
    std::this_thread::sleep_for(20ms);
  }
  create_objects(ctx, port, config);
  std::this_thread::sleep_for(500ms);
  long rss_before = proc_kb(server, "VmRSS"), hwm_before = proc_kb(server, "VmHWM");
  Flood f;
  for (int round = 0; round < config.rounds; ++round) {
    Flood one = flood(ctx, port, server, config);
    for (auto [status, n] : one.first) f.first[status] += n;
    for (auto [status, n] : one.last) f.last[status] += n;
    f.list_bytes = std::max(f.list_bytes, one.list_bytes);
    f.peak_rss_kb = std::max(f.peak_rss_kb, one.peak_rss_kb);
    f.seconds += one.seconds;
    f.ms.insert(f.ms.end(), one.ms.begin(), one.ms.end());
  }
  long hwm_after = proc_kb(server, "VmHWM");
  long rss_after = proc_kb(server, "VmRSS");
  std::this_thread::sleep_for(std::chrono::duration<double>(config.idle_s));
  long rss_idle = proc_kb(server, "VmRSS");
  bool alive = waitpid(server, nullptr, WNOHANG) == 0;

  std::printf("objects: %d ConfigMaps of %d bytes; one LIST answers %.1f MiB\n", config.objects,
              config.value_bytes, static_cast<double>(f.list_bytes) / (1 << 20));
  std::printf("clients: %d concurrent LISTs over TLS, %d round(s), %.2f s for all\n",
              config.clients, config.rounds, f.seconds);
  std::printf("answers: %s\n", counts(f.first).c_str());
  std::sort(f.ms.begin(), f.ms.end());
  std::printf("latency of the first answers with 200: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
              quantile(f.ms, 0.5), quantile(f.ms, 0.99), f.ms.empty() ? 0.0 : f.ms.back());
  if (config.retries > 0)
    std::printf("after up to %d retries: %s\n", config.retries, counts(f.last).c_str());
  std::printf("server RSS: %.0f MiB before, peak %.0f MiB sampled, VmHWM %.0f -> %.0f MiB%s\n",
              rss_before / 1024.0, f.peak_rss_kb / 1024.0, hwm_before / 1024.0, hwm_after / 1024.0,
              alive ? "" : " (the server died)");
  std::printf("server RSS after the bursts: %.0f MiB at once, %.0f MiB after %.1f s idle\n",
              rss_after / 1024.0, rss_idle / 1024.0, config.idle_s);
  std::fflush(stdout);

  kill(server, SIGTERM);
  for (auto deadline = Clock::now() + 10s; waitpid(server, nullptr, WNOHANG) != server;) {
    if (Clock::now() > deadline) {
      kill(server, SIGKILL);
      waitpid(server, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  vkube::bench::untrack_child(server);
  SSL_CTX_free(ctx);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
