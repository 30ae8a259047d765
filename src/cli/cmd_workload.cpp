// `vkube workload`: a small container program for pods of the vkube image on
// `vkube host` (which runs them as local processes), so that logs and exit
// codes can be tried and tested without a container runtime:
//
//   args: [workload, --log-lines, "100", --log-interval-ms, "100", --exit-code, "3"]
//
// prints numbered lines on stdout (every --stderr-every'th on stderr), then
// stays running (--log-lines 0: prints nothing) until --exit-after-ms passes
// or it is stopped, and exits with --exit-code. With --echo-listen it also
// serves a TCP echo port (each connection gets back what it sends), and with
// --source-listen one that sends bytes until the peer closes: the far ends
// for `kubectl port-forward` tests and benchmarks. With --webhook-listen it is an admission
// webhook server (workload_webhook.cpp).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "command.h"
#include "workload_webhook.h"

namespace vkube::cli {
namespace {

void echo_connection(int fd) {
  std::vector<char> buf(256 * 1024);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(fd, buf.data() + off, static_cast<size_t>(n - off));
      if (w <= 0) {
        ::close(fd);
        return;
      }
      off += w;
    }
  }
  ::close(fd);
}

// Sends bytes until the peer goes away: the far end of a download.
void source_connection(int fd) {
  std::vector<char> buf(256 * 1024, 'x');
  while (::send(fd, buf.data(), buf.size(), MSG_NOSIGNAL) > 0) {
  }
  ::close(fd);
}

// Listens on HOST:PORT and serves every connection in its own thread (echo
// or source). Returns false (after printing why) when the address cannot be
// bound.
bool start_server(const std::string& address, void (*serve)(int), const char* what) {
  auto colon = address.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  int port = colon == std::string::npos ? -1 : std::atoi(address.c_str() + colon + 1);
  std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  if (port <= 0 || port > 65535 || inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1) {
    std::fprintf(stderr, "workload: %s %s: want IPv4:PORT\n", what, address.c_str());
    return false;
  }
  sa.sin_port = htons(static_cast<uint16_t>(port));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      ::listen(fd, 128) != 0) {
    std::fprintf(stderr, "workload: cannot listen on %s: %s\n", address.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::fprintf(stdout, "%s: listening on %s\n", what, address.c_str());
  std::fflush(stdout);
  std::thread([fd, serve] {
    for (;;) {
      int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      std::thread(serve, c).detach();
    }
  }).detach();
  return true;
}

}  // namespace

int run_workload(const Args& args) {
  FlagSet flags("workload",
                "A test container for local pods on `vkube host`: prints numbered log lines, "
                "then runs until stopped or --exit-after-ms, and exits with --exit-code.");
  auto log_flags = add_log_flags(flags);
  int64_t& lines = flags.add_int("log-lines", 10, "lines to print (line 1, line 2, ...)");
  int64_t& interval = flags.add_int("log-interval-ms", 0, "milliseconds between lines");
  int64_t& stderr_every = flags.add_int("stderr-every", 0, "every Nth line goes to stderr (0: none)");
  std::string& prefix = flags.add_string("log-prefix", "line", "the text before each number");
  int64_t& exit_after = flags.add_int("exit-after-ms", -1,
                                  "exit this long after the last line (-1: run until stopped)");
  int64_t& exit_code = flags.add_int("exit-code", 0, "the exit code");
  std::string& echo = flags.add_string(
      "echo-listen", "", "also serve a TCP echo port on IPv4:PORT (0.0.0.0 is the pod's IP)");
  std::string& source = flags.add_string(
      "source-listen", "", "also serve a TCP port that sends bytes until the peer closes");
  std::string& webhook = flags.add_string(
      "webhook-listen", "",
      "also serve admission webhooks over HTTPS on IPv4:PORT (paths: /label/KEY/VALUE, /count, "
      "/deny-label/KEY, /deny/MESSAGE, /slow/MS, /warn)");
  std::string& webhook_certs = flags.add_string(
      "webhook-cert-dir", "", "the folder holding tls.crt and tls.key for --webhook-listen");
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  block_signals();
  if (!webhook.empty() && !start_webhook_server(webhook, webhook_certs)) return 2;
  if (!echo.empty() && !start_server(echo, echo_connection, "--echo-listen")) return 2;
  if (!source.empty() && !start_server(source, source_connection, "--source-listen")) return 2;
  for (int64_t i = 1; i <= lines; ++i) {
    FILE* out = stderr_every > 0 && i % stderr_every == 0 ? stderr : stdout;
    std::fprintf(out, "%s %lld\n", prefix.c_str(), static_cast<long long>(i));
    std::fflush(out);
    if (interval > 0 && i < lines) std::this_thread::sleep_for(std::chrono::milliseconds(interval));
  }
  if (exit_after >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(exit_after));
  } else {
    wait_for_signal();
  }
  return static_cast<int>(exit_code);
}

}  // namespace vkube::cli
