// bench_api: the API server's request paths over loopback, each figure next
// to its target, with etcd's v3 HTTP/JSON gateway measured on the same machine
// for scale.
//
// What it measures, against a `vkube serve` that it starts itself on a fresh
// data directory (and stops again):
//  1. GET of one ConfigMap: requests/s, p50, p99 at 1 and 64 connections.
//  2. Durable ConfigMap creates (unique names): the same figures.
//  3. LIST of N pods (5,000 by default) as JSON and as a Table: ms per list
//     (p50, p99 over repeated runs) and response bytes.
//  4. Watch fan-out: W watches (1,000) on ConfigMaps, then M paced creates;
//     the time from just before each write (and from its response) until
//     each watcher has the event.
//  5. Time from spawn to /readyz 200 on fresh data directories (and on a
//     restart), and the server's idle RSS after startup and after the run.
//  6. etcd (unless --skip-etcd): the same gets and durable puts through its
//     v3 gateway, values as large as the ConfigMap's JSON, over plain HTTP
//     and over vkube's transport; vkube/etcd ratios.
//  7. Strategic-merge PATCH of a Deployment with 40 containers, one image by
//     its merge key per patch, at 1 and 16 connections (a Deployment each).
//  8. Server-side apply of that whole Deployment, one image changed per
//     apply, at 1 and 16 connections ("n/a" while the server answers 415).
//  9. Durable ConfigMap creates sent as protobuf, against the same as JSON,
//     at 1 and 64 connections.
//
// How: Boost.Beast clients on keep-alive connections, every connection of a
// phase multiplexed on --client-threads asio event loops (default 1) with
// C++20 coroutines; the watches of phase 4 are read by epoll threads with
// plain sockets and OpenSSL (watch_reader.h says why). vkube is spoken
// to over TLS with the admin client certificate from DIR/pki (or, with
// --plain, over plain HTTP with a bearer token); etcd over plain HTTP and,
// when vkube is over TLS, over HTTPS with vkube's serving certificate: the
// ratios the targets judge compare the two on
// the same transport, and the summary shows the plain-HTTP ratios too.
// Load is closed-loop: each connection sends its next request when the
// previous response has arrived.
//
// The client runs on the same CPUs as the server. On a small machine that
// matters (TLS, HTTP parsing and JSON on the client side cost CPU the server
// could have had), and so does anything else running there. Every phase
// prints the cores the server used (and its two busiest threads: one near
// 1.00 is a serial bottleneck), the cores the bench used, and the cores other
// processes took: a server near (CPUs - bench - others) is CPU bound, and its
// figure is a lower bound on what it does with the machine to itself.
//
// It is a benchmark, not a test: a missed target prints MISS and the exit
// code stays 0. Errors (a server that does not start, failed requests in a
// setup step, a bad flag) exit 1. Every process it starts is stopped before
// it exits, and its temporary directory is removed.

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>  // mkdtemp
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>

#include "children.h"
#include "vkube/schema/protobuf.h"
#include "watch_reader.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using net::awaitable;
using net::use_awaitable;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

#ifdef VKUBE_BENCH_DEFAULT_VKUBE
constexpr const char* kDefaultVkube = VKUBE_BENCH_DEFAULT_VKUBE;
#else
constexpr const char* kDefaultVkube = "";
#endif

// The data of every ConfigMap written: with the server's metadata its JSON is
// about 300 bytes, a small but typical object.
constexpr std::string_view kConfigMapData =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
// Per-operation limit on one socket read or write of a request.
constexpr auto kIoTimeout = std::chrono::seconds(60);

// ---------------------------------------------------------------------------
// Errors. Benchmark code throws BenchError; main() catches it, stops every
// child and removes the data.

struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& what) {
  throw BenchError(what);
}

// The first error of many threads or coroutines.
class ErrorSlot {
 public:
  void set(std::string message) {
    std::lock_guard lock(mu_);
    ++count_;
    if (message_.empty()) message_ = std::move(message);
  }
  int64_t count() const {
    std::lock_guard lock(mu_);
    return count_;
  }
  std::string first() const {
    std::lock_guard lock(mu_);
    return message_;
  }

 private:
  mutable std::mutex mu_;
  int64_t count_ = 0;
  std::string message_;
};

// Progress notes go to stderr so that stdout holds only figures.
void note(const std::string& text) {
  std::fprintf(stderr, "# %s\n", text.c_str());
  std::fflush(stderr);
}

// ---------------------------------------------------------------------------
// Small helpers.

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

double ns_to_ms(int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

// The value at fraction `p` of an ascending vector (nearest rank).
template <typename T>
T percentile(const std::vector<T>& sorted, double p) {
  if (sorted.empty()) return T{};
  auto rank = static_cast<size_t>(p * static_cast<double>(sorted.size()));
  return sorted[std::min(rank, sorted.size() - 1)];
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

std::string base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  auto byte = [&](size_t at) { return static_cast<uint32_t>(static_cast<unsigned char>(in[at])); };
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (in.size() - i == 1) {
    uint32_t v = byte(i) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (in.size() - i == 2) {
    uint32_t v = byte(i) << 16 | byte(i + 1) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The last `bytes` of a file, for error messages about a child's log.
std::string file_tail(const std::string& path, size_t bytes = 2000) {
  std::string text = read_file(path);
  if (text.size() > bytes) text = "..." + text.substr(text.size() - bytes);
  return text;
}

// The first line printed by `command` (empty on failure).
std::string first_output_line(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {};
  char buf[256] = {};
  std::string line;
  if (std::fgets(buf, sizeof buf, pipe) != nullptr) line = buf;
  pclose(pipe);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

// A field of /proc/<pid>/status or /proc/<pid>/smaps_rollup in KiB (or a
// plain count, "Threads"), or -1.
int64_t proc_field(pid_t pid, const char* file, std::string_view field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 &&
        line[field.size()] == ':') {
      size_t pos = line.find_first_of("0123456789");
      if (pos == std::string::npos) return -1;
      int64_t value = -1;
      std::from_chars(line.data() + pos, line.data() + line.size(), value);
      return value;
    }
  }
  return -1;
}

int64_t rss_kib(pid_t pid) {
  return proc_field(pid, "status", "VmRSS");
}

std::string mib(int64_t kib) {
  return fmt("%.1f MiB", static_cast<double>(kib) / 1024.0);
}

// The memory of a process in one line: RSS, its anonymous and file-backed
// parts, peak RSS, threads.
std::string memory_line(pid_t pid) {
  int64_t rss = rss_kib(pid);
  int64_t anon = proc_field(pid, "status", "RssAnon");
  int64_t file = proc_field(pid, "status", "RssFile");
  int64_t hwm = proc_field(pid, "status", "VmHWM");
  int64_t threads = proc_field(pid, "status", "Threads");
  return mib(rss) + " (anon " + mib(anon) + ", file " + mib(file) + "; peak " + mib(hwm) + "; " +
         std::to_string(threads) + " threads)";
}

// User + system CPU seconds from a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file.
double stat_cpu_seconds(const std::string& path) {
  std::string stat = read_file(path);
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 > stat.size()) return 0;
  // After ") ": state(3) ppid(4) ... utime(14) stime(15).
  std::vector<std::string_view> fields;
  std::string_view rest(stat);
  rest.remove_prefix(paren + 2);
  while (!rest.empty() && fields.size() < 13) {
    size_t space = rest.find(' ');
    fields.push_back(rest.substr(0, space));
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  if (fields.size() < 13) return 0;
  int64_t utime = 0, stime = 0;
  std::from_chars(fields[11].data(), fields[11].data() + fields[11].size(), utime);
  std::from_chars(fields[12].data(), fields[12].data() + fields[12].size(), stime);
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// User + system CPU seconds of a whole process (all its threads).
double proc_cpu_seconds(pid_t pid) {
  return stat_cpu_seconds("/proc/" + std::to_string(pid) + "/stat");
}

// CPU seconds of each thread of a process, by thread id.
std::vector<std::pair<pid_t, double>> thread_cpu_seconds(pid_t pid) {
  std::vector<std::pair<pid_t, double>> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    pid_t tid = 0;
    std::string name = entry.path().filename().string();
    std::from_chars(name.data(), name.data() + name.size(), tid);
    out.emplace_back(tid, stat_cpu_seconds(entry.path().string() + "/stat"));
  }
  return out;
}

// Busy CPU seconds of the whole machine (all processes), from /proc/stat.
double machine_busy_seconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal)) return 0;
  return static_cast<double>(user + nice + system + irq + softirq + steal) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

double self_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto secs = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return secs(usage.ru_utime) + secs(usage.ru_stime);
}

// CPU used over an interval, in cores: by the server (and its two busiest
// threads: a thread near 1.00 is a serial bottleneck), by this process, and
// by everything else on the machine (other users skew every figure).
class CpuMeter {
 public:
  explicit CpuMeter(pid_t server)
      : server_(server),
        server_start_(proc_cpu_seconds(server)),
        threads_start_(thread_cpu_seconds(server)),
        self_start_(self_cpu_seconds()),
        machine_start_(machine_busy_seconds()),
        start_(Clock::now()) {}
  std::string line(const char* server_name) const {
    double wall = std::chrono::duration<double>(Clock::now() - start_).count();
    if (wall <= 0) return {};
    double server = proc_cpu_seconds(server_) - server_start_;
    double self = self_cpu_seconds() - self_start_;
    double others = std::max(0.0, machine_busy_seconds() - machine_start_ - server - self);
    std::vector<double> per_thread;
    for (const auto& [tid, secs] : thread_cpu_seconds(server_)) {
      double before = 0;
      for (const auto& [old_tid, old_secs] : threads_start_)
        if (old_tid == tid) before = old_secs;
      per_thread.push_back(secs - before);
    }
    std::sort(per_thread.rbegin(), per_thread.rend());
    std::string busiest;
    for (size_t i = 0; i < std::min<size_t>(2, per_thread.size()); ++i)
      busiest += (i == 0 ? "" : " ") + fmt("%.2f", per_thread[i] / wall);
    return std::string(server_name) + " " + fmt("%.2f", server / wall) +
           " cores (busiest threads " + busiest + "), bench " + fmt("%.2f", self / wall) +
           ", others " + fmt("%.2f", others / wall) + " (over " + fmt("%.1f", wall) + " s)";
  }
  double server_seconds() const { return proc_cpu_seconds(server_) - server_start_; }
  double self_seconds() const { return self_cpu_seconds() - self_start_; }

 private:
  pid_t server_;
  double server_start_;
  std::vector<std::pair<pid_t, double>> threads_start_;
  double self_start_;
  double machine_start_;
  Clock::time_point start_;
};

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "unknown";
  return one + " " + five + " " + fifteen;
}

std::string filesystem_name(const std::string& path) {
  struct statfs info {};
  if (statfs(path.c_str(), &info) != 0) return "unknown";
  switch (static_cast<uint64_t>(info.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x794C7630:
      return "overlayfs";
    default:
      break;
  }
  return fmt("0x%.0f", static_cast<double>(info.f_type));
}

// Raises the soft open-file limit to the hard one (children inherit it).
rlim_t raise_nofile() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

// ---------------------------------------------------------------------------
// Child processes. Every pid is also kept in a table so that a Ctrl-C of the
// benchmark stops the servers too (see main).

using vkube::bench::g_children;
using vkube::bench::track_child;
using vkube::bench::untrack_child;

class Child {
 public:
  Child() = default;
  Child(Child&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)),
        name_(std::move(other.name_)),
        log_(std::move(other.log_)) {}
  Child& operator=(Child&& other) noexcept {
    if (this != &other) {
      stop(std::chrono::milliseconds(0));
      pid_ = std::exchange(other.pid_, -1);
      name_ = std::move(other.name_);
      log_ = std::move(other.log_);
    }
    return *this;
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { stop(std::chrono::milliseconds(0)); }

  // Starts argv[0] with stdin from /dev/null and stdout and stderr to
  // `log_path`; *spawned_at is the moment just before the spawn.
  static Child spawn(std::string name, const std::vector<std::string>& argv,
                     const std::string& log_path, Clock::time_point* spawned_at) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    // The benchmark blocks SIGINT and SIGTERM in all its threads (main's
    // signal thread takes them); the child starts with them unblocked.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    *spawned_at = Clock::now();
    int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) fail("cannot start " + argv[0] + ": " + std::strerror(rc));
    track_child(pid);
    Child child;
    child.pid_ = pid;
    child.name_ = std::move(name);
    child.log_ = log_path;
    return child;
  }

  pid_t pid() const { return pid_; }
  const std::string& log() const { return log_; }

  // False once the process has exited (then it is reaped and forgotten).
  bool alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      untrack_child(pid_);
      pid_ = -1;
      exit_status_ = status;
      return false;
    }
    return true;
  }

  // SIGTERM, up to `grace` to exit, then SIGKILL. Returns how it ended.
  std::string stop(std::chrono::milliseconds grace) {
    if (pid_ <= 0) return "not running";
    bool killed = false;
    int status = 0;
    bool reaped = false;
    if (grace.count() > 0) {
      kill(pid_, SIGTERM);
      auto deadline = Clock::now() + grace;
      while (Clock::now() < deadline) {
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          reaped = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    if (!reaped) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      killed = grace.count() > 0;
    }
    untrack_child(pid_);
    pid_ = -1;
    exit_status_ = status;
    if (killed) return "killed after " + std::to_string(grace.count()) + " ms";
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
    return "ended";
  }

  int exit_status() const { return exit_status_; }

 private:
  pid_t pid_ = -1;
  std::string name_;
  std::string log_;
  int exit_status_ = 0;
};

// ---------------------------------------------------------------------------
// Blocking plain-HTTP probes (readiness polling) and free ports.

struct Probe {
  int status = -1;  // -1: nothing answered
  std::string body;
};

// One GET on a fresh connection, "Connection: close".
Probe probe_http(uint16_t port, const char* path) {
  Probe result;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return result;
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return result;
  }
  std::string request =
      std::string("GET ") + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return result;
  }
  std::string data;
  char buf[4096];
  size_t header_end = std::string::npos;
  int64_t content_length = -1;
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (header_end == std::string::npos) {
      header_end = data.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        std::string lower = data.substr(0, header_end);
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        size_t cl = lower.find("\r\ncontent-length:");
        if (cl != std::string::npos) {
          size_t digits = lower.find_first_of("0123456789", cl);
          if (digits != std::string::npos)
            std::from_chars(lower.data() + digits, lower.data() + lower.size(), content_length);
        }
      }
    }
    if (header_end != std::string::npos && content_length >= 0 &&
        data.size() >= header_end + 4 + static_cast<size_t>(content_length)) {
      break;
    }
  }
  close(fd);
  if (data.compare(0, 9, "HTTP/1.1 ") != 0 && data.compare(0, 9, "HTTP/1.0 ") != 0) return result;
  int status = -1;
  std::from_chars(data.data() + 9, data.data() + std::min<size_t>(data.size(), 12), status);
  result.status = status;
  if (header_end != std::string::npos) result.body = data.substr(header_end + 4);
  return result;
}

// `count` distinct free loopback ports (all held open until all are chosen).
std::vector<uint16_t> free_ports(int count) {
  std::vector<int> fds;
  std::vector<uint16_t> ports;
  for (int i = 0; i < count; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket: " + std::string(std::strerror(errno)));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      close(fd);
      fail("cannot find a free port: " + std::string(std::strerror(errno)));
    }
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  return ports;
}

// Polls GET `path` every millisecond until it answers 200 (and `ready_body`
// is in the body, when given). Returns the time from `spawned_at`.
double wait_ready(Child& child, uint16_t port, const char* path, Clock::time_point spawned_at,
                  std::string_view ready_body = {},
                  std::chrono::seconds limit = std::chrono::seconds(60)) {
  Clock::time_point next = Clock::now();
  for (;;) {
    Probe probe = probe_http(port, path);
    Clock::time_point now = Clock::now();
    if (probe.status == 200 &&
        (ready_body.empty() || probe.body.find(ready_body) != std::string::npos)) {
      return ms_between(spawned_at, now);
    }
    if (!child.alive())
      fail("server exited before it was ready; its log:\n" + file_tail(child.log()));
    if (now - spawned_at > limit)
      fail("server not ready after 60 s; its log:\n" + file_tail(child.log()));
    next += std::chrono::milliseconds(1);
    if (next < now) next = now;
    std::this_thread::sleep_until(next);
  }
}

// ---------------------------------------------------------------------------
// The HTTP client: one keep-alive connection, plain or TLS.

struct Target {
  uint16_t port = 0;
  ssl::context* tls = nullptr;  // null: plain HTTP
  std::string bearer;           // sent as "Authorization: Bearer" when set
};

using Request = http::request<http::string_body>;

Request make_request(const Target& target, http::verb verb, std::string path, std::string body = {},
                     std::string_view accept = "application/json") {
  Request req{verb, path, 11};
  req.set(http::field::host, "127.0.0.1:" + std::to_string(target.port));
  req.set(http::field::user_agent, "bench_api");
  if (!accept.empty()) req.set(http::field::accept, accept);
  if (!target.bearer.empty()) req.set(http::field::authorization, "Bearer " + target.bearer);
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
  }
  req.prepare_payload();
  return req;
}

class Conn {
 public:
  Conn(net::io_context& ioc, const Target& target) : ioc_(ioc), target_(target) {}
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  awaitable<void> connect() {
    close();
    tcp::endpoint endpoint(net::ip::address_v4::loopback(), target_.port);
    if (target_.tls != nullptr) {
      tls_.emplace(ioc_, *target_.tls);
      auto& lowest = beast::get_lowest_layer(*tls_);
      lowest.expires_after(kIoTimeout);
      co_await lowest.async_connect(endpoint, use_awaitable);
      lowest.socket().set_option(tcp::no_delay(true));
      co_await tls_->async_handshake(ssl::stream_base::client, use_awaitable);
      lowest.expires_never();
    } else {
      plain_.emplace(ioc_);
      plain_->expires_after(kIoTimeout);
      co_await plain_->async_connect(endpoint, use_awaitable);
      plain_->socket().set_option(tcp::no_delay(true));
      plain_->expires_never();
    }
    open_ = true;
  }

  void close() {
    boost::system::error_code ignored;
    if (tls_) {
      beast::get_lowest_layer(*tls_).socket().close(ignored);
      tls_.reset();
    }
    if (plain_) {
      plain_->socket().close(ignored);
      plain_.reset();
    }
    buffer_.clear();
    open_ = false;
  }

  // Cancels what is pending (the socket stays, so awaiting coroutines resume
  // with an error and can unwind).
  void cancel() {
    boost::system::error_code ignored;
    if (tls_) beast::get_lowest_layer(*tls_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    if (plain_) plain_->socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  // One request and its response (connecting first when needed): the status,
  // and the body in *body.
  awaitable<int> roundtrip(Request& req, std::string* body) {
    if (!open_) co_await connect();
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (tls_) {
      co_await exchange(*tls_, req, parser);
    } else {
      co_await exchange(*plain_, req, parser);
    }
    http::response<http::string_body>& res = parser.get();
    int status = res.result_int();
    if (!res.keep_alive()) close();
    if (body != nullptr) *body = std::move(res.body());
    co_return status;
  }

 private:
  template <typename Stream>
  awaitable<void> exchange(Stream& stream, Request& req,
                           http::response_parser<http::string_body>& parser) {
    auto& lowest = beast::get_lowest_layer(stream);
    lowest.expires_after(kIoTimeout);
    co_await http::async_write(stream, req, use_awaitable);
    co_await http::async_read(stream, buffer_, parser, use_awaitable);
    lowest.expires_never();
  }

  net::io_context& ioc_;
  Target target_;
  std::optional<beast::tcp_stream> plain_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
  beast::flat_buffer buffer_;
  bool open_ = false;
};

std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

// One connection driven synchronously from the calling thread: setup steps
// and the sequential LIST runs.
class SyncClient {
 public:
  explicit SyncClient(const Target& target) : target_(target), conn_(ioc_, target) {}

  const Target& target() const { return target_; }

  int request(Request& req, std::string* body) {
    int status = 0;
    std::exception_ptr error;
    net::co_spawn(ioc_, conn_.roundtrip(req, body), [&](std::exception_ptr e, int s) {
      error = e;
      status = s;
    });
    ioc_.restart();
    ioc_.run();
    if (error)
      fail(std::string(req.method_string()) + " " + std::string(req.target()) + ": " +
           describe(error));
    return status;
  }

  // The body of a request that must answer `expect`.
  std::string must(Request req, int expect) {
    std::string body;
    int status = request(req, &body);
    if (status != expect) {
      fail(std::string(req.method_string()) + " " + std::string(req.target()) + ": HTTP " +
           std::to_string(status) + " (want " + std::to_string(expect) +
           "): " + body.substr(0, 500));
    }
    return body;
  }

 private:
  Target target_;
  net::io_context ioc_{1};
  Conn conn_;
};

// ---------------------------------------------------------------------------
// Closed-loop load: `connections` connections on `lanes` event-loop threads,
// each sending its next request when the previous response is in.

struct LoadSpec {
  std::string label;
  Target target;
  int connections = 1;
  double warmup_s = 0;  // time-limited: not measured
  double seconds = 0;   // time-limited: measured
  int64_t count = 0;    // count-limited instead, when > 0 (all measured)
  int expect = 200;
  std::function<Request(int64_t seq)> make;
  // Instead of make, when set: the n-th request (from 0) of connection `conn`
  // (for connections that each work on an object of their own).
  std::function<Request(int conn, int64_t n)> make_conn;
  std::function<bool(std::string_view body)> check;  // optional
};

// Keys of LoadResult::failures besides HTTP statuses.
constexpr int kConnectionError = -1;
constexpr int kBadBody = -2;

struct LoadResult {
  int64_t requests = 0;  // completed with the expected answer in the window
  int64_t errors = 0;
  std::string first_error;
  double seconds = 0;
  std::vector<int64_t> sorted_ns;  // latencies of requests started in the window
  // Every failed request (warm-up included) by HTTP status other than the
  // expected one, or kConnectionError / kBadBody.
  std::map<int, int64_t> failures;

  double rps() const { return seconds > 0 ? static_cast<double>(requests) / seconds : 0; }
  double p50_ms() const { return ns_to_ms(percentile(sorted_ns, 0.50)); }
  double p99_ms() const { return ns_to_ms(percentile(sorted_ns, 0.99)); }
  double max_ms() const { return sorted_ns.empty() ? 0 : ns_to_ms(sorted_ns.back()); }
};

struct Lane {
  net::io_context ioc{1};
  std::vector<std::unique_ptr<Conn>> conns;
  std::vector<int64_t> latencies;
  int64_t completed = 0;
  std::map<int, int64_t> failures;
  ErrorSlot* errors = nullptr;
};

// Runs every lane's event loop on its own thread until it runs out of work.
void run_lanes(std::vector<std::unique_ptr<Lane>>& lanes) {
  std::vector<std::thread> threads;
  for (auto& lane : lanes) {
    threads.emplace_back([l = lane.get()] {
      l->ioc.restart();
      l->ioc.run();
    });
  }
  for (std::thread& t : threads) t.join();
}

awaitable<void> load_worker(const LoadSpec* spec, Lane* lane, Conn* conn, int index,
                            std::atomic<int64_t>* next, Clock::time_point warm_end,
                            Clock::time_point end) {
  std::string body;
  int io_failures = 0;
  for (int64_t n = 0;; ++n) {
    Clock::time_point t0 = Clock::now();
    if (spec->count == 0 && t0 >= end) break;
    int64_t seq = next->fetch_add(1, std::memory_order_relaxed);
    if (spec->count > 0 && seq >= spec->count) break;
    Request req = spec->make_conn ? spec->make_conn(index, n) : spec->make(seq);
    int status = 0;
    bool io_error = false;
    std::string what;
    try {
      t0 = Clock::now();
      status = co_await conn->roundtrip(req, &body);
    } catch (const std::exception& e) {
      io_error = true;
      what = e.what();
    }
    Clock::time_point t1 = Clock::now();
    if (io_error) {
      lane->errors->set(spec->label + ": connection error: " + what);
      ++lane->failures[kConnectionError];
      conn->close();
      if (++io_failures >= 3) co_return;
      continue;
    }
    if (status != spec->expect) {
      lane->errors->set(spec->label + ": HTTP " + std::to_string(status) + ": " +
                        body.substr(0, 300));
      ++lane->failures[status];
      continue;
    }
    if (spec->check && !spec->check(body)) {
      lane->errors->set(spec->label + ": unexpected body: " + body.substr(0, 300));
      ++lane->failures[kBadBody];
      continue;
    }
    bool counted = spec->count > 0 || (t0 >= warm_end && t0 < end);
    if (counted)
      lane->latencies.push_back(
          std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    if (spec->count > 0 || (t1 >= warm_end && t1 <= end)) ++lane->completed;
  }
}

LoadResult run_load(const LoadSpec& spec, int client_threads) {
  ErrorSlot errors;
  int lane_count = std::clamp(client_threads, 1, spec.connections);
  std::vector<std::unique_ptr<Lane>> lanes;
  for (int i = 0; i < lane_count; ++i) {
    lanes.push_back(std::make_unique<Lane>());
    lanes.back()->errors = &errors;
  }
  for (int i = 0; i < spec.connections; ++i) {
    Lane& lane = *lanes[static_cast<size_t>(i % lane_count)];
    lane.conns.push_back(std::make_unique<Conn>(lane.ioc, spec.target));
  }
  // Connections (and TLS handshakes) first, outside the measurement.
  for (auto& lane : lanes) {
    for (auto& conn : lane->conns) {
      net::co_spawn(lane->ioc, conn->connect(), [&errors](std::exception_ptr e) {
        if (e) errors.set("connect: " + describe(e));
      });
    }
  }
  run_lanes(lanes);
  if (errors.count() > 0) fail(spec.label + ": " + errors.first());

  std::atomic<int64_t> next{0};
  Clock::time_point start = Clock::now();
  auto to_duration = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  Clock::time_point warm_end = start + to_duration(spec.warmup_s);
  Clock::time_point end = warm_end + to_duration(spec.seconds);
  for (size_t l = 0; l < lanes.size(); ++l) {
    Lane* lane = lanes[l].get();
    for (size_t c = 0; c < lane->conns.size(); ++c) {
      // Connection i went to lane i % lane_count, so it is conns[i / lane_count] there.
      int index = static_cast<int>(c * lanes.size() + l);
      net::co_spawn(lane->ioc,
                    load_worker(&spec, lane, lane->conns[c].get(), index, &next, warm_end, end),
                    [&errors](std::exception_ptr e) {
                      if (e) errors.set("worker: " + describe(e));
                    });
    }
  }
  run_lanes(lanes);
  Clock::time_point finish = Clock::now();

  LoadResult result;
  for (auto& lane : lanes) {
    result.requests += lane->completed;
    result.sorted_ns.insert(result.sorted_ns.end(), lane->latencies.begin(), lane->latencies.end());
    for (const auto& [key, count] : lane->failures) result.failures[key] += count;
  }
  std::sort(result.sorted_ns.begin(), result.sorted_ns.end());
  result.errors = errors.count();
  result.first_error = errors.first();
  result.seconds =
      spec.count > 0 ? std::chrono::duration<double>(finish - start).count() : spec.seconds;
  return result;
}

// ---------------------------------------------------------------------------
// Configuration and report.

struct Config {
  bool quick = false;
  double seconds = 5;
  double warmup = 1;
  std::string vkube;
  std::string etcd = "/usr/bin/etcd";
  bool skip_etcd = false;
  std::string only;  // ",phase,phase,": the phases to run; empty: all
  bool only_known = false;
  bool runs(std::string_view phase) const {
    return only.empty() || only.find("," + std::string(phase) + ",") != std::string::npos;
  }
  bool plain = false;
  int client_threads = 1;
  std::string parent_dir;
  int startup_runs = 5;
  int pods = 5000;
  int list_runs = 20;
  int watchers = 1000;
  // Paced well below what saturates two shared CPUs (a write to 1,000 TLS
  // watchers costs the server ~20-30 ms of CPU here): latency, not capacity.
  int watch_writes = 200;
  double watch_rate = 10;
  double settle_s = 1.0;  // idle time before an "idle RSS" reading
};

enum class Verdict { kPass, kMiss, kNotApplicable };

struct TargetRow {
  std::string what;
  std::string measured;
  std::string goal;
  Verdict verdict;
};

// etcd's figures over one transport.
struct EtcdFigures {
  std::optional<LoadResult> get1, get64, put1, put64;
};

// The figures the summary table shows.
struct Figures {
  EtcdFigures etcd_plain, etcd_tls;
  // The etcd figures on vkube's transport, which the ratio targets use.
  const EtcdFigures& etcd_same(const Config& config) const {
    return config.plain ? etcd_plain : etcd_tls;
  }
  std::string configmap_json;  // bench-get as GET returns it
  std::optional<LoadResult> get1, get64, create1, create64;
  std::string get1_cpu, get64_cpu, create1_cpu, create64_cpu;
  double list_json_p50 = 0, list_json_p99 = 0, list_table_p50 = 0, list_table_p99 = 0;
  size_t list_json_bytes = 0, list_table_bytes = 0;
  int pods = 0;
  int watchers = 0, watch_writes = 0;
  double watch_p50 = 0, watch_p99 = 0, watch_max = 0, watch_resp_p50 = 0, watch_resp_p99 = 0;
  double watch_all_p50 = 0, watch_all_p99 = 0;
  int64_t watch_missing = 0;
  double ready_min = 0, ready_median = 0, restart_median = 0, etcd_ready = 0;
  int64_t rss_start_kib = 0, rss_after_kib = 0, rss_peak_kib = 0, etcd_rss_kib = 0;
  std::optional<LoadResult> smp1, smp16, apply1, apply16;
  bool apply_415 = false;     // the server does not take apply-patch yet
  bool patch_errors = false;  // a patch or apply failed, or a read-back differed
  std::optional<LoadResult> pb1, pb64, pbjson1, pbjson64;
};

class Report {
 public:
  explicit Report(bool quick) : quick_(quick) {}

  void figure(const std::string& what, const std::string& value) {
    std::printf("%-46s %s\n", (what + ":").c_str(), value.c_str());
    std::fflush(stdout);
  }

  void heading(const std::string& text) {
    std::printf("\n== %s ==\n", text.c_str());
    std::fflush(stdout);
  }

  void target(std::string what, std::string measured, std::string goal, std::optional<bool> pass,
              bool full_size_only = false) {
    Verdict verdict = !pass ? Verdict::kNotApplicable : *pass ? Verdict::kPass : Verdict::kMiss;
    if (quick_ && full_size_only) verdict = Verdict::kNotApplicable;
    rows_.push_back({std::move(what), std::move(measured), std::move(goal), verdict});
  }

  void print_targets() const {
    int misses = 0;
    std::printf("\ntargets:\n");
    for (const TargetRow& row : rows_) {
      const char* label = row.verdict == Verdict::kPass   ? "PASS"
                          : row.verdict == Verdict::kMiss ? "MISS"
                                                          : "n/a ";
      if (row.verdict == Verdict::kMiss) ++misses;
      std::printf("  %s  %-40s %14s   target %s\n", label, row.what.c_str(), row.measured.c_str(),
                  row.goal.c_str());
    }
    if (quick_) std::printf("  (--quick: reduced sizes; n/a rows are judged only in a full run)\n");
    if (misses == 0) {
      std::printf("  all targets met\n");
    } else {
      std::printf("  %d target%s MISSED\n", misses, misses == 1 ? "" : "s");
    }
    std::fflush(stdout);
  }

 private:
  bool quick_;
  std::vector<TargetRow> rows_;
};

std::string load_line(const LoadResult& r) {
  std::string line = with_commas(static_cast<int64_t>(std::llround(r.rps()))) + " req/s, p50 " +
                     fmt("%.2f", r.p50_ms()) + " ms, p99 " + fmt("%.2f", r.p99_ms()) + " ms, max " +
                     fmt("%.1f", r.max_ms()) + " ms";
  if (r.errors > 0) line += ", " + with_commas(r.errors) + " ERRORS (first: " + r.first_error + ")";
  return line;
}

// ---------------------------------------------------------------------------
// vkube.

struct Vkube {
  Child child;
  uint16_t port = 0;
  std::string dir;
  std::unique_ptr<ssl::context> tls;
  Target target;
  double ready_ms = 0;
};

const char* kBenchToken = "bench-api-token";

std::unique_ptr<ssl::context> client_tls(const std::string& pki) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  try {
    ctx->load_verify_file(pki + "/ca.crt");
    ctx->use_certificate_chain_file(pki + "/admin.crt");
    ctx->use_private_key_file(pki + "/admin.key", ssl::context::pem);
    ctx->set_verify_mode(ssl::verify_peer);
  } catch (const std::exception& e) {
    fail("client TLS from " + pki + ": " + e.what());
  }
  return ctx;
}

// Starts `vkube serve` on `dir` (new or existing) and waits for /readyz.
Vkube start_vkube(const Config& config, const std::string& dir, const std::string& log) {
  Vkube v;
  v.dir = dir;
  v.port = free_ports(1)[0];
  std::vector<std::string> argv = {config.vkube, "serve",    "--data-dir",
                                   dir,          "--listen", "127.0.0.1:" + std::to_string(v.port)};
  if (config.plain) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::ofstream(dir + "/bench-tokens.csv")
        << kBenchToken << ",bench-admin,bench-admin,\"system:masters\"\n";
    argv.push_back("--token-auth-file");
    argv.push_back(dir + "/bench-tokens.csv");
  }
  Clock::time_point spawned;
  v.child = Child::spawn("vkube", argv, log, &spawned);
  v.ready_ms = wait_ready(v.child, v.port, "/readyz", spawned);
  v.target.port = v.port;
  if (config.plain) {
    v.target.bearer = kBenchToken;
  } else {
    v.tls = client_tls(dir + "/pki");
    v.target.tls = v.tls.get();
  }
  return v;
}

// The server's malloc heap from its /metrics (allocated and held free), when
// it exports them: RSS above "allocated" is the allocator's, not live data.
std::string heap_line(const Vkube& v) {
  SyncClient client(v.target);
  std::string body;
  Request req = make_request(v.target, http::verb::get, "/metrics");
  if (client.request(req, &body) != 200) return "n/a";
  auto gauge = [&](std::string_view name) -> std::string {
    size_t at = body.find("\n" + std::string(name) + " ");
    if (at == std::string::npos) return "-";
    return fmt("%.1f MiB", std::atof(body.c_str() + at + name.size() + 2) / 1048576.0);
  };
  return "allocated " + gauge("vkube_heap_allocated_bytes") + ", held free " +
         gauge("vkube_heap_free_bytes");
}

std::string configmap_body(std::string_view name) {
  std::string body = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")";
  body += name;
  body += R"("},"data":{"key":")";
  body += kConfigMapData;
  body += R"("}})";
  return body;
}

std::string pod_body(std::string_view name) {
  std::string body = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")";
  body += name;
  body += R"("},"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10"}]}})";
  return body;
}

// 5. Start to ready, fresh and on restart, and idle RSS, on throwaway servers.
void phase_startup(const Config& config, const std::string& scratch, Report& report, Figures& fig) {
  report.heading("5. start to /readyz 200 (spawn to first 200, polled every 1 ms)");
  std::vector<double> fresh, restart;
  std::vector<double> rss;
  for (int i = 0; i < config.startup_runs; ++i) {
    std::string dir = scratch + "/startup-" + std::to_string(i);
    {
      Vkube v = start_vkube(config, dir, dir + ".log");
      fresh.push_back(v.ready_ms);
      std::this_thread::sleep_for(std::chrono::duration<double>(config.settle_s));
      rss.push_back(static_cast<double>(rss_kib(v.child.pid())));
      if (i == 0)
        report.figure("  idle memory after start (first run)", memory_line(v.child.pid()));
      v.child.stop(std::chrono::seconds(10));
    }
    {
      Vkube v = start_vkube(config, dir, dir + "-restart.log");
      restart.push_back(v.ready_ms);
      v.child.stop(std::chrono::seconds(10));
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string runs;
  for (double ms : fresh) runs += (runs.empty() ? "" : " ") + fmt("%.1f", ms);
  fig.ready_min = *std::min_element(fresh.begin(), fresh.end());
  fig.ready_median = median(fresh);
  fig.restart_median = median(restart);
  report.figure("  fresh data dir (ms, each run)", runs);
  report.figure("  fresh data dir", "min " + fmt("%.1f", fig.ready_min) + " ms, median " +
                                        fmt("%.1f", fig.ready_median) + " ms");
  report.figure("  restart on the same data dir",
                "min " + fmt("%.1f", *std::min_element(restart.begin(), restart.end())) +
                    " ms, median " + fmt("%.1f", fig.restart_median) + " ms");
  report.figure("  idle RSS after start (median of runs)", mib(static_cast<int64_t>(median(rss))));
  report.target("start to ready (median, fresh dir)", fmt("%.1f ms", fig.ready_median), "< 50 ms",
                fig.ready_median < 50);
}

// 1 and 2: GETs and durable creates at 1 and 64 connections.
// The ConfigMap the GETs read (and whose JSON is etcd's value size).
std::string create_get_target(Vkube& v) {
  SyncClient client(v.target);
  client.must(make_request(v.target, http::verb::post, "/api/v1/namespaces/default/configmaps",
                           configmap_body("bench-get")),
              201);
  return client.must(
      make_request(v.target, http::verb::get, "/api/v1/namespaces/default/configmaps/bench-get"),
      200);
}

// 1. GETs at 1 and 64 connections.
void phase_get(const Config& config, Vkube& v, Report& report, Figures& fig) {
  const std::string& got = fig.configmap_json;
  report.heading("1. GET one ConfigMap (" + std::to_string(got.size()) + " bytes of JSON)");
  for (int conns : {1, 64}) {
    LoadSpec spec;
    spec.label = "GET x" + std::to_string(conns);
    spec.target = v.target;
    spec.connections = conns;
    spec.warmup_s = config.warmup;
    spec.seconds = config.seconds;
    spec.expect = 200;
    Target target = v.target;
    spec.make = [target](int64_t) {
      return make_request(target, http::verb::get,
                          "/api/v1/namespaces/default/configmaps/bench-get");
    };
    spec.check = [](std::string_view body) {
      return body.find("\"bench-get\"") != std::string_view::npos;
    };
    CpuMeter cpu(v.child.pid());
    LoadResult r = run_load(spec, config.client_threads);
    std::string cpu_line = cpu.line("vkube");
    report.figure("  " + std::to_string(conns) + " connection" + (conns == 1 ? "" : "s"),
                  load_line(r));
    report.figure("    cpu", cpu_line);
    (conns == 1 ? fig.get1 : fig.get64) = std::move(r);
  }
  report.figure("  vkube memory now", memory_line(v.child.pid()));
}

// 2. Durable creates at 1 and 64 connections.
void phase_create(const Config& config, Vkube& v, Report& report, Figures& fig) {
  report.heading("2. durable ConfigMap creates (POST, unique names)");
  for (int conns : {1, 64}) {
    LoadSpec spec;
    spec.label = "create x" + std::to_string(conns);
    spec.target = v.target;
    spec.connections = conns;
    spec.warmup_s = config.warmup;
    spec.seconds = config.seconds;
    spec.expect = 201;
    Target target = v.target;
    std::string prefix = "c" + std::to_string(conns) + "-";
    spec.make = [target, prefix](int64_t seq) {
      return make_request(target, http::verb::post, "/api/v1/namespaces/default/configmaps",
                          configmap_body(prefix + std::to_string(seq)));
    };
    CpuMeter cpu(v.child.pid());
    LoadResult r = run_load(spec, config.client_threads);
    std::string cpu_line = cpu.line("vkube");
    report.figure("  " + std::to_string(conns) + " connection" + (conns == 1 ? "" : "s"),
                  load_line(r));
    report.figure("    cpu", cpu_line);
    (conns == 1 ? fig.create1 : fig.create64) = std::move(r);
  }
  report.figure("  vkube memory now", memory_line(v.child.pid()));
}

// 3. LIST of many pods, JSON and Table.
void phase_list(const Config& config, Vkube& v, Report& report, Figures& fig) {
  report.heading("3. LIST " + with_commas(config.pods) + " pods");
  LoadSpec spec;
  spec.label = "create pods";
  spec.target = v.target;
  spec.connections = 64;
  spec.count = config.pods;
  spec.expect = 201;
  Target target = v.target;
  spec.make = [target](int64_t seq) {
    char name[32];
    std::snprintf(name, sizeof name, "pod-%05lld", static_cast<long long>(seq));
    return make_request(target, http::verb::post, "/api/v1/namespaces/default/pods",
                        pod_body(name));
  };
  LoadResult created = run_load(spec, config.client_threads);
  if (created.errors > 0) fail("creating pods: " + created.first_error);
  report.figure("  pods created (64 connections)",
                with_commas(created.requests) + " in " + fmt("%.1f", created.seconds) + " s (" +
                    with_commas(std::llround(created.rps())) + "/s)");
  fig.pods = config.pods;

  SyncClient client(v.target);
  struct Variant {
    const char* name;
    std::string accept;
  };
  const std::string table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
  for (const Variant& variant :
       {Variant{"JSON", "application/json"}, Variant{"Table", table_accept}}) {
    std::vector<double> ms;
    size_t bytes = 0;
    CpuMeter cpu(v.child.pid());
    for (int run = 0; run < config.list_runs + 1; ++run) {
      Request req = make_request(v.target, http::verb::get, "/api/v1/namespaces/default/pods", {},
                                 variant.accept);
      std::string body;
      Clock::time_point t0 = Clock::now();
      int status = client.request(req, &body);
      Clock::time_point t1 = Clock::now();
      if (status != 200)
        fail(std::string("LIST pods as ") + variant.name + ": HTTP " + std::to_string(status) +
             ": " + body.substr(0, 300));
      if (run == 0) {
        // The first run is a warm-up; it also checks the answer.
        json doc = json::parse(body);
        const bool table = std::string_view(variant.name) == "Table";
        if (table && doc.value("kind", "") != "Table")
          fail("LIST as Table: kind " + doc.value("kind", "?"));
        size_t items = table ? doc["rows"].size() : doc["items"].size();
        if (items < static_cast<size_t>(config.pods))
          fail(std::string("LIST pods as ") + variant.name + ": " + std::to_string(items) +
               " items, want " + std::to_string(config.pods));
        continue;
      }
      ms.push_back(ms_between(t0, t1));
      bytes = body.size();
    }
    std::sort(ms.begin(), ms.end());
    double p50 = percentile(ms, 0.5), p99 = percentile(ms, 0.99);
    report.figure(std::string("  as ") + variant.name,
                  fmt("%.1f", p50) + " ms p50, " + fmt("%.1f", p99) + " ms p99 (" +
                      std::to_string(ms.size()) + " runs), " +
                      with_commas(static_cast<int64_t>(bytes)) + " bytes");
    report.figure("    vkube cpu per list",
                  fmt("%.1f ms", cpu.server_seconds() * 1000 / (config.list_runs + 1)));
    if (std::string_view(variant.name) == "JSON") {
      fig.list_json_p50 = p50;
      fig.list_json_p99 = p99;
      fig.list_json_bytes = bytes;
    } else {
      fig.list_table_p50 = p50;
      fig.list_table_p99 = p99;
      fig.list_table_bytes = bytes;
    }
  }
  report.figure("  vkube memory now", memory_line(v.child.pid()));
}

// 4. Watch fan-out.
struct WatchRun {
  int watchers = 0;
  int writes = 0;
  std::vector<std::atomic<int64_t>> sent_ns;  // per write: just before the request
  std::vector<std::atomic<int64_t>> resp_ns;  // per write: its response read
  std::vector<int64_t>
      recv_ns;  // [watcher * writes + write]; each watcher's own lane writes its row
  std::atomic<int64_t> delivered{0};
  std::atomic<int64_t> duplicates{0};
  std::atomic<int> established{0};
  std::atomic<bool> stopping{false};
  ErrorSlot errors;
  Target target;
  std::string path;

  WatchRun(int w, int m)
      : watchers(w),
        writes(m),
        sent_ns(static_cast<size_t>(m)),
        resp_ns(static_cast<size_t>(m)),
        recv_ns(static_cast<size_t>(w) * static_cast<size_t>(m), 0) {}
};

void watch_line(WatchRun* run, int w, std::string_view line, int64_t t) {
  if (line.empty()) return;
  if (line.find("\"type\":\"ERROR\"") != std::string_view::npos) {
    run->errors.set("watch ERROR event: " + std::string(line.substr(0, 300)));
    return;
  }
  size_t at = line.find("\"wf-");
  if (at == std::string_view::npos) return;  // not one of ours
  int64_t index = -1;
  const char* first = line.data() + at + 4;
  std::from_chars(first, line.data() + line.size(), index);
  if (index < 0 || index >= run->writes) return;
  int64_t& slot = run->recv_ns[static_cast<size_t>(w) * static_cast<size_t>(run->writes) +
                               static_cast<size_t>(index)];
  if (slot != 0) {
    run->duplicates.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  slot = t;
  run->delivered.fetch_add(1, std::memory_order_relaxed);
}

awaitable<void> watch_writer(WatchRun* run, Conn* conn, double rate, Clock::time_point start) {
  net::steady_timer timer(co_await net::this_coro::executor);
  std::string body;
  co_await conn->connect();  // not in the first write's latency
  for (int i = 0; i < run->writes; ++i) {
    auto due = start +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(i / rate));
    if (Clock::now() < due) {
      timer.expires_at(due);
      co_await timer.async_wait(use_awaitable);
    }
    Request req =
        make_request(run->target, http::verb::post, "/api/v1/namespaces/default/configmaps",
                     configmap_body("wf-" + std::to_string(i)));
    run->sent_ns[static_cast<size_t>(i)].store(now_ns());
    int status = co_await conn->roundtrip(req, &body);
    run->resp_ns[static_cast<size_t>(i)].store(now_ns());
    if (status != 201)
      run->errors.set("watch writer: HTTP " + std::to_string(status) + ": " + body.substr(0, 300));
  }
}

void phase_watch(const Config& config, Vkube& v, Report& report, Figures& fig) {
  const int watchers = config.watchers;
  const int writes = config.watch_writes;
  report.heading("4. watch fan-out: " + with_commas(watchers) + " watches on configmaps, " +
                 with_commas(writes) + " creates at " + fmt("%.0f", config.watch_rate) + "/s");
  SyncClient client(v.target);
  std::string marker =
      client.must(make_request(v.target, http::verb::post, "/api/v1/namespaces/default/configmaps",
                               configmap_body("watch-marker")),
                  201);
  std::string rv = json::parse(marker)["metadata"]["resourceVersion"].get<std::string>();

  WatchRun run(watchers, writes);
  run.target = v.target;
  run.path = "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=" + rv;

  // The watchers on reader threads of their own (watch_reader.h), the writer
  // on an Asio lane; all run until the phase ends.
  WatchRun* r = &run;
  bench::WatchReaders readers(
      std::max(1, config.client_threads),
      [r](int w, std::string_view line, int64_t t) { watch_line(r, w, line, t); });
  bench::WatchTarget watch_target;
  watch_target.port = v.target.port;
  watch_target.tls = v.target.tls != nullptr ? v.target.tls->native_handle() : nullptr;
  watch_target.bearer = v.target.bearer;
  watch_target.path = run.path;
  Lane writer_lane;
  auto writer_guard = net::make_work_guard(writer_lane.ioc);
  std::thread writer_thread([&writer_lane] { writer_lane.ioc.run(); });
  auto stop_all = [&] {
    run.stopping.store(true);
    readers.stop();
    net::post(writer_lane.ioc, [&writer_lane] {
      for (auto& conn : writer_lane.conns) conn->cancel();
    });
    writer_guard.reset();
    if (writer_thread.joinable()) writer_thread.join();
  };

  try {
    CpuMeter setup_cpu(v.child.pid());
    Clock::time_point open_start = Clock::now();
    for (int w = 0; w < watchers; ++w) {
      std::string error = readers.open(w, watch_target);
      if (!error.empty()) fail("opening watch " + std::to_string(w) + ": " + error);
      run.established.fetch_add(1);
    }
    double open_ms = ms_between(open_start, Clock::now());
    report.figure("  watches established", with_commas(run.established.load()) + " in " +
                                               fmt("%.0f", open_ms) + " ms; " +
                                               setup_cpu.line("vkube"));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    report.figure("  vkube memory with the watches open", memory_line(v.child.pid()));

    // The writes.
    CpuMeter cpu(v.child.pid());
    writer_lane.conns.push_back(std::make_unique<Conn>(writer_lane.ioc, v.target));
    Conn* writer_conn = writer_lane.conns.back().get();
    std::atomic<bool> writer_done{false};
    Clock::time_point write_start = Clock::now() + std::chrono::milliseconds(20);
    net::co_spawn(writer_lane.ioc, watch_writer(r, writer_conn, config.watch_rate, write_start),
                  [r, &writer_done](std::exception_ptr e) {
                    if (e) r->errors.set("watch writer: " + describe(e));
                    writer_done.store(true);
                  });
    const int64_t expected = static_cast<int64_t>(watchers) * writes;
    Clock::time_point give_up = Clock::time_point::max();
    while (run.delivered.load() < expected) {
      if (readers.ended() > 0)
        run.errors.set(with_commas(readers.ended()) + " watches ended early");
      if (writer_done.load() && give_up == Clock::time_point::max())
        give_up = Clock::now() + std::chrono::seconds(10);
      if (Clock::now() > give_up) break;
      if (run.errors.count() > 0 && writer_done.load()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    while (!writer_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::string cpu_line = cpu.line("vkube");
    double server_cpu = cpu.server_seconds();
    double bench_cpu = cpu.self_seconds();
    stop_all();

    // Latencies.
    std::vector<int64_t> from_write, from_resp, all_have, first_has;
    from_write.reserve(static_cast<size_t>(expected));
    from_resp.reserve(static_cast<size_t>(expected));
    int64_t before_response = 0;
    for (int i = 0; i < writes; ++i) {
      int64_t sent = run.sent_ns[static_cast<size_t>(i)].load();
      int64_t resp = run.resp_ns[static_cast<size_t>(i)].load();
      if (sent == 0 || resp == 0) continue;  // the writer failed (reported below)
      int64_t last = 0;
      int64_t first = std::numeric_limits<int64_t>::max();
      bool complete = true;
      for (int w = 0; w < watchers; ++w) {
        int64_t t = run.recv_ns[static_cast<size_t>(w) * static_cast<size_t>(writes) +
                                static_cast<size_t>(i)];
        if (t == 0) {
          complete = false;
          continue;
        }
        from_write.push_back(t - sent);
        if (t < resp) ++before_response;
        from_resp.push_back(std::max<int64_t>(0, t - resp));
        last = std::max(last, t);
        first = std::min(first, t);
      }
      if (complete) all_have.push_back(last - sent);
      if (last > 0) first_has.push_back(first - sent);
    }
    std::sort(from_write.begin(), from_write.end());
    std::sort(from_resp.begin(), from_resp.end());
    std::sort(all_have.begin(), all_have.end());
    std::sort(first_has.begin(), first_has.end());
    fig.watchers = watchers;
    fig.watch_writes = writes;
    fig.watch_missing = expected - run.delivered.load();
    fig.watch_p50 = ns_to_ms(percentile(from_write, 0.5));
    fig.watch_p99 = ns_to_ms(percentile(from_write, 0.99));
    fig.watch_max = from_write.empty() ? 0 : ns_to_ms(from_write.back());
    fig.watch_resp_p50 = ns_to_ms(percentile(from_resp, 0.5));
    fig.watch_resp_p99 = ns_to_ms(percentile(from_resp, 0.99));
    fig.watch_all_p50 = ns_to_ms(percentile(all_have, 0.5));
    fig.watch_all_p99 = ns_to_ms(percentile(all_have, 0.99));
    report.figure(
        "  events delivered",
        with_commas(run.delivered.load()) + " of " + with_commas(expected) +
            (fig.watch_missing > 0 ? " (" + with_commas(fig.watch_missing) + " MISSING)" : "") +
            ", " + with_commas(run.duplicates.load()) + " duplicates");
    report.figure("  latency from just before the write",
                  "p50 " + fmt("%.2f", fig.watch_p50) + " ms, p99 " + fmt("%.2f", fig.watch_p99) +
                      " ms, max " + fmt("%.1f", fig.watch_max) + " ms");
    report.figure("  latency from the write's response",
                  "p50 " + fmt("%.2f", fig.watch_resp_p50) + " ms, p99 " +
                      fmt("%.2f", fig.watch_resp_p99) + " ms (" +
                      fmt("%.1f", 100.0 * static_cast<double>(before_response) /
                                      std::max<double>(1, static_cast<double>(from_write.size()))) +
                      "% arrived before the response)");
    report.figure("  until the first watcher has a write",
                  "p50 " + fmt("%.2f", ns_to_ms(percentile(first_has, 0.5))) + " ms, p99 " +
                      fmt("%.2f", ns_to_ms(percentile(first_has, 0.99))) + " ms");
    report.figure("  until every watcher has a write", "p50 " + fmt("%.2f", fig.watch_all_p50) +
                                                           " ms, p99 " +
                                                           fmt("%.2f", fig.watch_all_p99) + " ms");
    report.figure("    cpu", cpu_line);
    double per_event_us =
        server_cpu * 1e6 / std::max<double>(1, static_cast<double>(run.delivered.load()));
    report.figure("    vkube cpu per delivered event",
                  fmt("%.1f us", per_event_us) + " (" +
                      fmt("%.1f", per_event_us * watchers / 1000) +
                      " ms per write to all watchers)");
    report.figure("    bench cpu per write (all watches)",
                  fmt("%.1f ms", bench_cpu * 1000 / std::max(1, writes)));
    if (run.errors.count() > 0)
      report.figure("  ERRORS",
                    with_commas(run.errors.count()) + " (first: " + run.errors.first() + ")");
  } catch (...) {
    stop_all();
    throw;
  }
  writer_lane.conns.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  report.figure("  vkube memory after the watches closed", memory_line(v.child.pid()));
  // The server must have survived 1,000 disconnects.
  Probe probe = probe_http(v.port, "/readyz");
  if (probe.status != 200)
    fail("vkube not ready after the watch phase: HTTP " + std::to_string(probe.status));
}

// ---------------------------------------------------------------------------
// 7 and 8: strategic-merge PATCH and server-side apply of a Deployment with
// 40 containers; 9: ConfigMap creates as protobuf against the same as JSON.

constexpr int kDeploymentContainers = 40;

// The image of container k once a connection's patches 0..sent-1 are in.
// Patch n sets container n % 40, to img:1 in even rounds (n / 40) and img:2
// in odd ones, so every patch changes the image it names; containers no
// patch has touched keep img:0.
std::string model_image(int k, int64_t sent) {
  if (sent <= k) return "img:0";
  int64_t touches = (sent - 1 - k) / kDeploymentContainers + 1;
  return "img:" + std::to_string((touches - 1) % 2 + 1);
}

// A Deployment of 40 containers, each with a name, an image (as the model
// has it after `sent` patches), a port and an env var.
std::string deployment_body(std::string_view name, int64_t sent) {
  std::string body = R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")";
  body += name;
  body += R"(","namespace":"default"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":")";
  body += name;
  body += R"("}},"template":{"metadata":{"labels":{"app":")";
  body += name;
  body += R"("}},"spec":{"containers":[)";
  for (int k = 0; k < kDeploymentContainers; ++k) {
    std::string i = std::to_string(k);
    if (k != 0) body += ',';
    body += R"({"name":"c)" + i + R"(","image":")" + model_image(k, sent) +
            R"(","ports":[{"containerPort":)" + std::to_string(8000 + k) +
            R"(,"protocol":"TCP"}],"env":[{"name":"E)" + i + R"(","value":"v)" + i + R"("}]})";
  }
  body += "]}}}}";
  return body;
}

// The strategic-merge patch n: one container by its merge key, a new image.
std::string smp_body(int64_t n) {
  int k = static_cast<int>(n % kDeploymentContainers);
  return R"({"spec":{"template":{"spec":{"containers":[{"name":"c)" + std::to_string(k) +
         R"(","image":")" + model_image(k, n + 1) + R"("}]}}}})";
}

// Compares a Deployment as GET returns it with the model after `sent`
// patches: "" when all 40 containers are as expected, else the first
// difference. *managers gets its managedFields as manager/operation.
std::string check_deployment(const std::string& body, int64_t sent, std::string* managers) {
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded()) return "GET answered no JSON";
  managers->clear();
  if (doc.contains("metadata") && doc["metadata"].contains("managedFields")) {
    for (const json& entry : doc["metadata"]["managedFields"]) {
      *managers += (managers->empty() ? "" : ", ") + entry.value("manager", "?") + "/" +
                   entry.value("operation", "?");
    }
  }
  const json* containers = nullptr;
  try {
    containers = &doc.at("spec").at("template").at("spec").at("containers");
  } catch (const std::exception&) {
    return "no spec.template.spec.containers";
  }
  if (!containers->is_array() || containers->size() != kDeploymentContainers)
    return std::to_string(containers->size()) + " containers, want " +
           std::to_string(kDeploymentContainers);
  for (int k = 0; k < kDeploymentContainers; ++k) {
    const json& c = (*containers)[static_cast<size_t>(k)];
    std::string want = model_image(k, sent);
    if (c.value("name", "") != "c" + std::to_string(k))
      return "container " + std::to_string(k) + " is named " + c.value("name", "?");
    if (c.value("image", "") != want)
      return "c" + std::to_string(k) + " has image " + c.value("image", "?") + ", want " + want;
    if (!c.contains("ports") || c["ports"].size() != 1 ||
        c["ports"][0].value("containerPort", 0) != 8000 + k)
      return "c" + std::to_string(k) + " lost its port";
    if (!c.contains("env") || c["env"].size() != 1 ||
        c["env"][0].value("name", "") != "E" + std::to_string(k))
      return "c" + std::to_string(k) + " lost its env var";
  }
  return {};
}

// What failed in a load run, by HTTP status: "none", or the counts.
std::string failures_line(const LoadResult& r) {
  if (r.failures.empty()) return "none";
  int64_t non2xx = 0;
  std::string detail;
  for (const auto& [key, count] : r.failures) {
    std::string what = key == kConnectionError ? "connection errors"
                       : key == kBadBody       ? "unexpected bodies"
                                               : "HTTP " + std::to_string(key);
    if (key >= 0 && (key < 200 || key > 299)) non2xx += count;
    detail += (detail.empty() ? "" : ", ") + what + " x" + with_commas(count);
  }
  return with_commas(non2xx) + " non-2xx (" + detail +
         "; warm-up included); first: " + r.first_error;
}

std::string connections_label(int conns) {
  return "  " + std::to_string(conns) + " connection" + (conns == 1 ? "" : "s");
}

// 7 (apply false) and 8 (apply true): each connection patches a Deployment
// of its own (no conflicts between connections); afterwards every Deployment
// is read back and compared with what its patches should have made of it.
void phase_patch(const Config& config, Vkube& v, Report& report, Figures& fig, bool apply) {
  const char* content_type =
      apply ? "application/apply-patch+yaml" : "application/strategic-merge-patch+json";
  const std::string query = apply ? "?fieldManager=bench&force=true" : "?fieldManager=bench";
  const std::string base = "/apis/apps/v1/namespaces/default/deployments";
  report.heading(apply ? "8. server-side apply (PATCH " + std::string(content_type) + query +
                             ") of the whole 40-container Deployment, one image changed each time"
                       : "7. strategic-merge PATCH (" + std::string(content_type) + query +
                             ") of a 40-container Deployment: one container's image by merge key");
  report.figure("  body bytes",
                with_commas(static_cast<int64_t>(
                    (apply ? deployment_body("apply-x16-00", 1) : smp_body(17)).size())));
  SyncClient client(v.target);
  for (int conns : {1, 16}) {
    // The Deployments, created as JSON (and, for apply, applied once as they
    // are: the bench becomes the manager of every field before the timing).
    std::vector<std::string> names;
    for (int i = 0; i < conns; ++i) {
      char name[48];
      std::snprintf(name, sizeof name, "%s-x%d-%02d", apply ? "apply" : "smp", conns, i);
      names.emplace_back(name);
      client.must(make_request(v.target, http::verb::post, base, deployment_body(name, 0)), 201);
    }
    if (apply) {
      bool unsupported = false;
      for (const std::string& name : names) {
        Request req = make_request(v.target, http::verb::patch, base + "/" + name + query,
                                   deployment_body(name, 0));
        req.set(http::field::content_type, content_type);
        std::string body;
        int status = client.request(req, &body);
        if (status == 415) {
          unsupported = true;
          break;
        }
        if (status < 200 || status > 299) {
          report.figure("  ERROR: first apply of " + name,
                        "HTTP " + std::to_string(status) + ": " + body.substr(0, 300));
          fig.patch_errors = true;
        }
      }
      if (unsupported) {
        fig.apply_415 = true;
        report.figure(connections_label(1), "n/a (server answered 415)");
        report.figure(connections_label(16), "n/a (server answered 415)");
        return;
      }
    }

    auto sent = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(conns), 0);
    LoadSpec spec;
    spec.label = std::string(apply ? "apply" : "smp") + " x" + std::to_string(conns);
    spec.target = v.target;
    spec.connections = conns;
    spec.warmup_s = config.warmup;
    spec.seconds = config.seconds;
    spec.expect = 200;
    Target target = v.target;
    spec.make_conn = [target, names, sent, apply, content_type, base, query](int conn, int64_t n) {
      const std::string& name = names[static_cast<size_t>(conn)];
      (*sent)[static_cast<size_t>(conn)] = n + 1;
      Request req = make_request(target, http::verb::patch, base + "/" + name + query,
                                 apply ? deployment_body(name, n + 1) : smp_body(n));
      req.set(http::field::content_type, content_type);
      return req;
    };
    CpuMeter cpu(v.child.pid());
    LoadResult r = run_load(spec, config.client_threads);
    std::string cpu_line = cpu.line("vkube");
    report.figure(connections_label(conns), load_line(r));
    report.figure("    cpu", cpu_line);
    report.figure("    failed requests", failures_line(r));
    if (!r.failures.empty()) fig.patch_errors = true;

    // Read back.
    int64_t good = 0;
    std::string first_bad, managers;
    for (int i = 0; i < conns; ++i) {
      std::string body = client.must(
          make_request(v.target, http::verb::get, base + "/" + names[static_cast<size_t>(i)]), 200);
      std::string bad = check_deployment(body, (*sent)[static_cast<size_t>(i)], &managers);
      if (bad.empty()) {
        ++good;
      } else if (first_bad.empty()) {
        first_bad = names[static_cast<size_t>(i)] + ": " + bad;
      }
    }
    report.figure("    read back", with_commas(good) + " of " + std::to_string(conns) +
                                       " Deployments as the patches made them" +
                                       (first_bad.empty() ? "" : "; MISMATCH " + first_bad));
    report.figure("    managedFields (last one read)", managers.empty() ? "none" : managers);
    if (!first_bad.empty()) fig.patch_errors = true;
    if (apply) {
      (conns == 1 ? fig.apply1 : fig.apply16) = std::move(r);
    } else {
      (conns == 1 ? fig.smp1 : fig.smp16) = std::move(r);
    }
  }
  report.figure("  vkube memory now", memory_line(v.child.pid()));
}

// The ConfigMap of configmap_body (with its namespace) as a protobuf body,
// by the registry's own encoder.
std::string configmap_protobuf(std::string_view name) {
  json obj = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", std::string(name)}, {"namespace", "default"}}},
              {"data", {{"key", std::string(kConfigMapData)}}}};
  auto body = vkube::schema::encode_object(obj);
  if (!body.is_ok()) fail("protobuf encoding of a ConfigMap: " + body.status().message());
  return std::move(body).value();
}

// 9. Durable ConfigMap creates as protobuf, against the same as JSON.
void phase_protobuf(const Config& config, Vkube& v, Report& report, Figures& fig) {
  const std::string path = "/api/v1/namespaces/default/configmaps";
  const std::string pb_accept = "application/vnd.kubernetes.protobuf,application/json";
  const std::string sample = configmap_protobuf("pb-00000");
  report.heading("9. durable ConfigMap creates as protobuf (" + std::to_string(sample.size()) +
                 "-byte body, Accept protobuf) vs JSON (" +
                 std::to_string(configmap_body("pj-00000").size()) + " bytes)");
  // The envelope is what the brief asks for, and the server stores the
  // object the protobuf described.
  auto envelope = vkube::schema::parse_envelope(sample);
  if (!envelope.is_ok() || envelope->api_version != "v1" || envelope->kind != "ConfigMap")
    fail("the protobuf body is not a v1 ConfigMap in runtime.Unknown");
  SyncClient client(v.target);
  {
    Request req =
        make_request(v.target, http::verb::post, path, configmap_protobuf("pb-check"), pb_accept);
    req.set(http::field::content_type, vkube::schema::kProtobufContentType);
    std::string answer = client.must(std::move(req), 201);
    if (!answer.starts_with(vkube::schema::kProtobufMagic))
      fail("protobuf create answered without the k8s protobuf magic");
    json got =
        json::parse(client.must(make_request(v.target, http::verb::get, path + "/pb-check"), 200));
    if (got["metadata"].value("namespace", "") != "default" ||
        got["data"].value("key", "") != kConfigMapData)
      fail("the ConfigMap created as protobuf reads back as " + got.dump().substr(0, 300));
    report.figure("  check", "a protobuf create reads back as JSON with its name, namespace, data");
  }
  for (int conns : {1, 64}) {
    for (bool protobuf : {false, true}) {
      LoadSpec spec;
      spec.label =
          std::string(protobuf ? "protobuf" : "JSON") + " create x" + std::to_string(conns);
      spec.target = v.target;
      spec.connections = conns;
      spec.warmup_s = config.warmup;
      spec.seconds = config.seconds;
      spec.expect = 201;
      Target target = v.target;
      std::string prefix = std::string(protobuf ? "pb" : "pj") + std::to_string(conns) + "-";
      if (protobuf) {
        spec.make = [target, path, prefix, pb_accept](int64_t seq) {
          Request req = make_request(target, http::verb::post, path,
                                     configmap_protobuf(prefix + std::to_string(seq)), pb_accept);
          req.set(http::field::content_type, vkube::schema::kProtobufContentType);
          return req;
        };
        spec.check = [](std::string_view body) {
          return body.starts_with(vkube::schema::kProtobufMagic);
        };
      } else {
        spec.make = [target, path, prefix](int64_t seq) {
          return make_request(target, http::verb::post, path,
                              configmap_body(prefix + std::to_string(seq)));
        };
      }
      CpuMeter cpu(v.child.pid());
      LoadResult r = run_load(spec, config.client_threads);
      std::string cpu_line = cpu.line("vkube");
      report.figure(connections_label(conns) + (protobuf ? ", protobuf" : ", JSON"), load_line(r));
      report.figure("    cpu", cpu_line);
      report.figure("    failed requests", failures_line(r));
      if (protobuf) {
        (conns == 1 ? fig.pb1 : fig.pb64) = std::move(r);
      } else {
        (conns == 1 ? fig.pbjson1 : fig.pbjson64) = std::move(r);
      }
    }
    const LoadResult& pb = *(conns == 1 ? fig.pb1 : fig.pb64);
    const LoadResult& js = *(conns == 1 ? fig.pbjson1 : fig.pbjson64);
    report.figure(connections_label(conns) + ", protobuf/JSON",
                  (js.rps() > 0 ? fmt("%.2fx", pb.rps() / js.rps()) : std::string("-")) +
                      " req/s, p99 " + fmt("%.2f", pb.p99_ms()) + " vs " +
                      fmt("%.2f", js.p99_ms()) + " ms");
  }
  report.figure("  vkube memory now", memory_line(v.child.pid()));
}

// ---------------------------------------------------------------------------
// etcd.

struct Etcd {
  Child child;
  Target plain;  // its plain-HTTP client URL
  Target tls;    // its HTTPS one (when started with a PKI)
  std::unique_ptr<ssl::context> tls_context;
  double ready_ms = 0;
};

// One etcd, serving its clients on a plain-HTTP URL and, given vkube's PKI
// directory, on an HTTPS URL too, with vkube's serving certificate.
Etcd start_etcd(const Config& config, const std::string& dir, const std::string& pki) {
  Etcd e;
  std::vector<uint16_t> ports = free_ports(4);
  auto url = [](const char* scheme, uint16_t port) {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(port);
  };
  std::string client_urls = url("http", ports[0]);
  if (!pki.empty()) client_urls += "," + url("https", ports[2]);
  std::string peer_url = url("http", ports[1]);
  std::vector<std::string> argv = {config.etcd, "--name", "bench", "--data-dir", dir,
                                   "--listen-client-urls", client_urls, "--advertise-client-urls",
                                   client_urls, "--listen-peer-urls", peer_url,
                                   "--initial-advertise-peer-urls", peer_url, "--initial-cluster",
                                   "bench=" + peer_url, "--initial-cluster-state", "new",
                                   // /health on plain HTTP whatever the clients speak
                                   "--listen-metrics-urls", url("http", ports[3])};
  if (!pki.empty()) {
    // No --client-cert-auth: etcd's gateway dials its own gRPC port with
    // the serving certificate as a client certificate, which vkube's (a
    // server-only key usage) cannot be. On keep-alive connections that only
    // changes the handshake, which the figures do not include.
    for (std::string flag :
         {"--cert-file=" + pki + "/server.crt", "--key-file=" + pki + "/server.key"})
      argv.push_back(flag);
  }
  Clock::time_point spawned;
  e.child = Child::spawn("etcd", argv, dir + ".log", &spawned);
  e.ready_ms = wait_ready(e.child, ports[3], "/health", spawned, "true");
  e.plain.port = ports[0];
  if (!pki.empty()) {
    e.tls_context = client_tls(pki);
    e.tls.port = ports[2];
    e.tls.tls = e.tls_context.get();
  }
  return e;
}

std::string etcd_key(std::string_view name) {
  return base64(std::string("/registry/configmaps/default/") + std::string(name));
}

// Gets and durable puts at 1 and 64 connections over one of etcd's URLs.
void etcd_load(const Config& config, Etcd& e, const Target& target, const std::string& value64,
               const char* transport, Report& report, EtcdFigures& out) {
  SyncClient client(target);
  const std::string get_key = etcd_key(std::string("bench-get-") + transport);
  client.must(make_request(target, http::verb::post, "/v3/kv/put",
                           R"({"key":")" + get_key + R"(","value":")" + value64 + R"("})"),
              200);
  const std::string get_body = R"({"key":")" + get_key + R"("})";
  std::string got =
      client.must(make_request(target, http::verb::post, "/v3/kv/range", get_body), 200);
  if (got.find("\"kvs\"") == std::string::npos) fail("etcd range: no kvs in " + got.substr(0, 300));

  for (int conns : {1, 64}) {
    LoadSpec spec;
    spec.label = std::string("etcd ") + transport + " get x" + std::to_string(conns);
    spec.target = target;
    spec.connections = conns;
    spec.warmup_s = config.warmup;
    spec.seconds = config.seconds;
    spec.make = [target, get_body](int64_t) {
      return make_request(target, http::verb::post, "/v3/kv/range", get_body);
    };
    spec.check = [](std::string_view body) {
      return body.find("\"kvs\"") != std::string_view::npos;
    };
    CpuMeter cpu(e.child.pid());
    LoadResult r = run_load(spec, config.client_threads);
    report.figure(std::string("  ") + transport + " range (get), " + std::to_string(conns) +
                      " connection" + (conns == 1 ? "" : "s"),
                  load_line(r));
    report.figure("    cpu", cpu.line("etcd"));
    (conns == 1 ? out.get1 : out.get64) = std::move(r);
  }
  for (int conns : {1, 64}) {
    LoadSpec spec;
    spec.label = std::string("etcd ") + transport + " put x" + std::to_string(conns);
    spec.target = target;
    spec.connections = conns;
    spec.warmup_s = config.warmup;
    spec.seconds = config.seconds;
    std::string prefix = std::string(transport) + "-c" + std::to_string(conns) + "-";
    spec.make = [target, prefix, value64](int64_t seq) {
      return make_request(target, http::verb::post, "/v3/kv/put",
                          R"({"key":")" + etcd_key(prefix + std::to_string(seq)) +
                              R"(","value":")" + value64 + R"("})");
    };
    CpuMeter cpu(e.child.pid());
    LoadResult r = run_load(spec, config.client_threads);
    report.figure(std::string("  ") + transport + " put (create), " + std::to_string(conns) +
                      " connection" + (conns == 1 ? "" : "s"),
                  load_line(r));
    report.figure("    cpu", cpu.line("etcd"));
    (conns == 1 ? out.put1 : out.put64) = std::move(r);
  }
}

// etcd over plain HTTP and, when vkube was measured over TLS, over HTTPS too:
// the ratios the targets judge compare the two servers on the same transport.
// Over HTTPS etcd's gateway also speaks TLS to its own gRPC port, a cost of
// its design that a gRPC client would not pay: the summary shows the
// plain-HTTP ratios next to them.
void phase_etcd(const Config& config, const std::string& scratch, const std::string& value,
                const std::string& pki, Report& report, Figures& fig) {
  std::string version = first_output_line(config.etcd + " --version 2>&1");
  if (version.starts_with("etcd Version: ")) version = version.substr(14);
  const bool tls = !config.plain;
  report.heading("6. etcd " + version + " v3 HTTP/JSON gateway, " +
                 (tls ? "plain HTTP and HTTPS, " : "plain HTTP, ") + std::to_string(value.size()) +
                 "-byte values");
  Etcd e = start_etcd(config, scratch + "/etcd", tls ? pki : std::string());
  fig.etcd_ready = e.ready_ms;
  report.figure("  start to /health true", fmt("%.0f ms", e.ready_ms));
  const std::string value64 = base64(value);
  etcd_load(config, e, e.plain, value64, "plain", report, fig.etcd_plain);
  if (tls) etcd_load(config, e, e.tls, value64, "tls", report, fig.etcd_tls);
  fig.etcd_rss_kib = rss_kib(e.child.pid());
  report.figure("  etcd memory after the run", memory_line(e.child.pid()));
  e.child.stop(std::chrono::seconds(10));
}

// ---------------------------------------------------------------------------
// The summary.

void print_summary(const Config& config, const Figures& fig, Report& report) {
  std::printf("\n== summary ==\n");
  const EtcdFigures& same = fig.etcd_same(config);
  std::printf(
      "vkube over %s; etcd's JSON gateway over the same transport; %u CPUs shared by server "
      "and bench (%d client thread%s)\n",
      config.plain ? "plain HTTP + bearer token" : "HTTPS + client certificate",
      std::max(1u, std::thread::hardware_concurrency()), config.client_threads,
      config.client_threads == 1 ? "" : "s");
  std::printf("%-28s %5s %10s %8s %8s %11s %8s %8s\n", "", "conns", "req/s", "p50 ms", "p99 ms",
              "etcd req/s", "etcd p99", "ratio");
  auto row = [&](const char* what, int conns, const std::optional<LoadResult>& ours,
                 const std::optional<LoadResult>& theirs) {
    if (!ours) return;
    std::string etcd_rps = theirs ? with_commas(std::llround(theirs->rps())) : "-";
    std::string etcd_p99 = theirs ? fmt("%.2f", theirs->p99_ms()) : "-";
    std::string ratio =
        theirs && theirs->rps() > 0 ? fmt("%.2fx", ours->rps() / theirs->rps()) : "-";
    std::printf("%-28s %5d %10s %8.2f %8.2f %11s %8s %8s%s\n", what, conns,
                with_commas(std::llround(ours->rps())).c_str(), ours->p50_ms(), ours->p99_ms(),
                etcd_rps.c_str(), etcd_p99.c_str(), ratio.c_str(),
                ours->errors > 0 ? "  ERRORS" : "");
  };
  row("GET configmap", 1, fig.get1, same.get1);
  row("GET configmap", 64, fig.get64, same.get64);
  row("create configmap (durable)", 1, fig.create1, same.put1);
  row("create configmap (durable)", 64, fig.create64, same.put64);
  if (!config.plain && fig.etcd_plain.put64) {
    // For reference: vkube over TLS against etcd without it.
    row("GET vs etcd plain HTTP", 64, fig.get64, fig.etcd_plain.get64);
    row("create vs etcd plain HTTP", 64, fig.create64, fig.etcd_plain.put64);
  }
  if (fig.apply_415) {
    std::printf("%-28s %5d %s\n", "SSA apply deployment (40c)", 1, "n/a (server answered 415)");
    std::printf("%-28s %5d %s\n", "SSA apply deployment (40c)", 16, "n/a (server answered 415)");
  }
  row("SMP patch deployment (40c)", 1, fig.smp1, std::nullopt);
  row("SMP patch deployment (40c)", 16, fig.smp16, std::nullopt);
  row("SSA apply deployment (40c)", 1, fig.apply1, std::nullopt);
  row("SSA apply deployment (40c)", 16, fig.apply16, std::nullopt);
  if (fig.patch_errors) std::printf("  (patch/apply phases had ERRORS: see their figures)\n");
  // The protobuf rows: the ratio column is protobuf req/s over JSON req/s.
  auto pb_row = [&](const char* what, int conns, const std::optional<LoadResult>& r,
                    const std::optional<LoadResult>& json_run) {
    if (!r) return;
    std::string ratio = json_run && json_run->rps() > 0
                            ? fmt("%.2fx", r->rps() / json_run->rps()) + " of JSON"
                            : "-";
    std::printf("%-28s %5d %10s %8.2f %8.2f %11s %8s %8s%s\n", what, conns,
                with_commas(std::llround(r->rps())).c_str(), r->p50_ms(), r->p99_ms(), "-", "-",
                ratio.c_str(), r->errors > 0 ? "  ERRORS" : "");
  };
  row("create configmap, JSON", 1, fig.pbjson1, std::nullopt);
  pb_row("create configmap, protobuf", 1, fig.pb1, fig.pbjson1);
  row("create configmap, JSON", 64, fig.pbjson64, std::nullopt);
  pb_row("create configmap, protobuf", 64, fig.pb64, fig.pbjson64);
  if (fig.pods > 0) {
    std::printf("%-28s %s\n", ("LIST " + with_commas(fig.pods) + " pods, JSON").c_str(),
                (fmt("%.1f", fig.list_json_p50) + " ms p50, " + fmt("%.1f", fig.list_json_p99) +
                 " ms p99, " + with_commas(static_cast<int64_t>(fig.list_json_bytes)) + " bytes")
                    .c_str());
    std::printf("%-28s %s\n", ("LIST " + with_commas(fig.pods) + " pods, Table").c_str(),
                (fmt("%.1f", fig.list_table_p50) + " ms p50, " + fmt("%.1f", fig.list_table_p99) +
                 " ms p99, " + with_commas(static_cast<int64_t>(fig.list_table_bytes)) + " bytes")
                    .c_str());
  }
  if (fig.watchers > 0) {
    std::printf(
        "%-28s %s\n",
        ("watch " + with_commas(fig.watchers) + " x " + with_commas(fig.watch_writes)).c_str(),
        ("delivery p50 " + fmt("%.2f", fig.watch_p50) + " ms, p99 " + fmt("%.2f", fig.watch_p99) +
         " ms; all watchers p99 " + fmt("%.2f", fig.watch_all_p99) + " ms; " +
         with_commas(fig.watch_missing) + " missing")
            .c_str());
  }
  if (fig.ready_median > 0) {
    std::printf(
        "%-28s %s\n", "start to ready",
        ("min " + fmt("%.1f", fig.ready_min) + " ms, median " + fmt("%.1f", fig.ready_median) +
         " ms; restart median " + fmt("%.1f", fig.restart_median) + " ms" +
         (fig.etcd_ready > 0 ? "; etcd " + fmt("%.0f", fig.etcd_ready) + " ms" : ""))
            .c_str());
  }
  std::printf("%-28s %s\n", "vkube RSS",
              ("idle after start " + mib(fig.rss_start_kib) + ", idle after run " +
               mib(fig.rss_after_kib) + ", peak " + mib(fig.rss_peak_kib) +
               (fig.etcd_rss_kib > 0 ? "; etcd after its run " + mib(fig.etcd_rss_kib) : ""))
                  .c_str());

  // Targets.
  auto ratio_target = [&](const char* what, const std::optional<LoadResult>& ours,
                          const std::optional<LoadResult>& theirs) {
    if (!ours) return;
    if (!theirs || theirs->rps() <= 0) {
      report.target(what, "-", ">= 2x etcd", std::nullopt);
      return;
    }
    double ratio = ours->rps() / theirs->rps();
    report.target(what, fmt("%.2fx", ratio), ">= 2x etcd", ratio >= 2.0);
  };
  ratio_target("creates/s vs etcd puts/s, 64 connections", fig.create64, same.put64);
  ratio_target("gets/s vs etcd ranges/s, 64 connections", fig.get64, same.get64);
  if (!config.plain) {
    auto info = [&](const char* what, const std::optional<LoadResult>& ours,
                    const std::optional<LoadResult>& theirs) {
      if (!ours || !theirs || theirs->rps() <= 0) return;
      report.target(what, fmt("%.2fx", ours->rps() / theirs->rps()), ">= 2x etcd", std::nullopt);
    };
    info("creates/s vs etcd plain HTTP (info)", fig.create64, fig.etcd_plain.put64);
    info("gets/s vs etcd plain HTTP (info)", fig.get64, fig.etcd_plain.get64);
  }
  auto p99_target = [&](const std::string& what, const std::optional<LoadResult>& r) {
    if (!r) return;
    report.target(what, fmt("%.2f ms", r->p99_ms()), "< 20 ms", r->p99_ms() < 20 && r->errors == 0);
  };
  p99_target("p99 GET, 1 connection", fig.get1);
  p99_target("p99 GET, 64 connections", fig.get64);
  p99_target("p99 create, 1 connection", fig.create1);
  p99_target("p99 create, 64 connections", fig.create64);
  if (fig.watchers > 0) {
    report.target("p99 watch delivery (" + with_commas(fig.watchers) + " watchers)",
                  fmt("%.2f ms", fig.watch_p99), "< 20 ms",
                  fig.watch_p99 < 20 && fig.watch_missing == 0, true);
  }
  report.target("idle RSS after start", mib(fig.rss_start_kib), "< 20 MiB",
                fig.rss_start_kib < 20 * 1024);
  report.target("idle RSS after the run (info)", mib(fig.rss_after_kib), "< 20 MiB", std::nullopt);
  report.print_targets();
  std::printf(
      "load average at the end: %s (other processes' CPU use is in each phase's cpu line)\n",
      load_average().c_str());
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------
// Flags and main.

void usage() {
  std::printf(
      "usage: bench_api [flags]\n"
      "  --quick             small sizes and short phases (about 20 s): a smoke run\n"
      "  --seconds N         measured seconds per throughput phase (default 5; 1 with --quick)\n"
      "  --vkube PATH        the vkube binary (default: the one in this build tree)\n"
      "  --etcd PATH         the etcd binary (default /usr/bin/etcd)\n"
      "  --skip-etcd         do not run the etcd comparison\n"
      "  --only LIST         run only these phases, comma-separated: "
      "startup,get,create,list,watch,smp,apply,protobuf,etcd\n"
      "  --plain             talk to vkube over plain HTTP with a bearer token instead of TLS\n"
      "  --client-threads N  event-loop threads of the load generator (default 1)\n"
      "  --dir PATH          where the temporary directory goes (default $TMPDIR or /tmp)\n"
      "  --pods N            pods to LIST (default 5000; 500 with --quick)\n"
      "  --watchers N        watch connections (default 1000; 200 with --quick)\n"
      "  --watch-writes N    creates the watchers see (default 200; 40 with --quick)\n"
      "  --watch-rate N      those creates per second (default 10; 20 with --quick)\n");
}

std::optional<Config> parse_args(int argc, char** argv, int* exit_code) {
  Config config;
  std::optional<double> seconds;
  std::optional<int> pods, watchers, writes;
  std::optional<double> rate;
  auto number = [&](int& i, const char* flag) -> double {
    if (i + 1 >= argc) throw std::invalid_argument(std::string(flag) + " needs a value");
    std::string text = argv[++i];
    size_t used = 0;
    double value = std::stod(text, &used);
    if (used != text.size() || !(value > 0))
      throw std::invalid_argument(std::string(flag) + ": bad value " + text);
    return value;
  };
  auto text = [&](int& i, const char* flag) -> std::string {
    if (i + 1 >= argc) throw std::invalid_argument(std::string(flag) + " needs a value");
    return argv[++i];
  };
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        usage();
        *exit_code = 0;
        return std::nullopt;
      } else if (arg == "--quick") {
        config.quick = true;
      } else if (arg == "--seconds") {
        seconds = number(i, "--seconds");
      } else if (arg == "--vkube") {
        config.vkube = text(i, "--vkube");
      } else if (arg == "--etcd") {
        config.etcd = text(i, "--etcd");
      } else if (arg == "--only") {
        config.only = "," + text(i, "--only") + ",";
        for (std::string_view known :
             {"startup", "get", "create", "list", "watch", "smp", "apply", "protobuf", "etcd"})
          if (config.only.find("," + std::string(known) + ",") != std::string::npos)
            config.only_known = true;
        if (!config.only_known)
          throw std::invalid_argument("--only: no known phase in " + config.only);
      } else if (arg == "--skip-etcd") {
        config.skip_etcd = true;
      } else if (arg == "--plain") {
        config.plain = true;
      } else if (arg == "--client-threads") {
        config.client_threads = static_cast<int>(number(i, "--client-threads"));
      } else if (arg == "--dir") {
        config.parent_dir = text(i, "--dir");
      } else if (arg == "--pods") {
        pods = static_cast<int>(number(i, "--pods"));
      } else if (arg == "--watchers") {
        watchers = static_cast<int>(number(i, "--watchers"));
      } else if (arg == "--watch-writes") {
        writes = static_cast<int>(number(i, "--watch-writes"));
      } else if (arg == "--watch-rate") {
        rate = number(i, "--watch-rate");
      } else {
        throw std::invalid_argument("unknown flag " + arg);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_api: %s\n", e.what());
    usage();
    *exit_code = 2;
    return std::nullopt;
  }
  if (config.quick) {
    config.seconds = 1;
    config.warmup = 0.25;
    config.startup_runs = 2;
    config.pods = 500;
    config.list_runs = 5;
    config.watchers = 200;
    config.watch_writes = 40;
    config.watch_rate = 20;
    config.settle_s = 0.3;
  }
  if (seconds) {
    config.seconds = *seconds;
    config.warmup = std::min(1.0, *seconds * 0.2);
  }
  if (pods) config.pods = *pods;
  if (watchers) config.watchers = *watchers;
  if (writes) config.watch_writes = *writes;
  if (rate) config.watch_rate = *rate;
  if (config.vkube.empty()) config.vkube = kDefaultVkube;
  if (config.vkube.empty()) {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    config.vkube = (self.parent_path() / "../../vkube").lexically_normal().string();
  }
  if (config.parent_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    config.parent_dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  return config;
}

void run_all(const Config& config, const std::string& scratch) {
  Report report(config.quick);
  Figures fig;
  rlim_t nofile = raise_nofile();
  if (nofile < static_cast<rlim_t>(config.watchers) + 256)
    fail("open-file limit " + std::to_string(nofile) + " is too low for " +
         std::to_string(config.watchers) + " watchers");
  if (access(config.vkube.c_str(), X_OK) != 0)
    fail("no vkube binary at " + config.vkube + " (use --vkube)");
  const bool etcd_runs = !config.skip_etcd && config.runs("etcd");
  if (etcd_runs && access(config.etcd.c_str(), X_OK) != 0)
    fail("no etcd binary at " + config.etcd + " (use --etcd or --skip-etcd)");

  std::printf("bench_api%s: vkube %s\n", config.quick ? " --quick" : "", config.vkube.c_str());
  std::printf("machine: %u CPUs, load %s; data in %s (%s); open-file limit %llu\n",
              std::max(1u, std::thread::hardware_concurrency()), load_average().c_str(),
              scratch.c_str(), filesystem_name(scratch).c_str(),
              static_cast<unsigned long long>(nofile));
  std::printf(
      "load: closed loop, %d client event-loop thread%s on the same CPUs as the server: the "
      "server's\n"
      "      figures are lower bounds; each phase prints the CPU both sides used.\n",
      config.client_threads, config.client_threads == 1 ? "" : "s");
  std::printf("phases: %.1f s measured after %.2f s warm-up\n", config.seconds, config.warmup);
  std::fflush(stdout);

  if (config.runs("startup")) {
    note("startup runs");
    phase_startup(config, scratch, report, fig);
  }

  note("starting the server for the load phases");
  Vkube v = start_vkube(config, scratch + "/vkube", scratch + "/vkube.log");
  std::this_thread::sleep_for(std::chrono::duration<double>(config.settle_s));
  fig.rss_start_kib = rss_kib(v.child.pid());
  report.heading("vkube under load (pid " + std::to_string(v.child.pid()) + ", ready in " +
                 fmt("%.1f", v.ready_ms) + " ms)");
  report.figure("  idle memory after start", memory_line(v.child.pid()));
  fig.configmap_json = create_get_target(v);

  if (config.runs("get")) {
    note("GET phase");
    phase_get(config, v, report, fig);
  }
  if (config.runs("create")) {
    note("create phase");
    phase_create(config, v, report, fig);
  }
  if (config.runs("list")) {
    note("LIST phase");
    phase_list(config, v, report, fig);
  }
  if (config.runs("watch")) {
    note("watch phase");
    phase_watch(config, v, report, fig);
  }
  if (config.runs("smp")) {
    note("strategic-merge patch phase");
    phase_patch(config, v, report, fig, false);
  }
  if (config.runs("apply")) {
    note("server-side apply phase");
    phase_patch(config, v, report, fig, true);
  }
  if (config.runs("protobuf")) {
    note("protobuf phase");
    phase_protobuf(config, v, report, fig);
  }

  std::this_thread::sleep_for(std::chrono::duration<double>(config.settle_s * 2));
  fig.rss_after_kib = rss_kib(v.child.pid());
  fig.rss_peak_kib = proc_field(v.child.pid(), "status", "VmHWM");
  report.heading("vkube after the run");
  report.figure("  idle memory", memory_line(v.child.pid()));
  report.figure("  idle heap", heap_line(v));
  std::string ended = v.child.stop(std::chrono::seconds(10));
  report.figure("  stopped", ended);

  if (etcd_runs) {
    note("etcd phases");
    // The ConfigMap as the GET returned it is the value etcd stores.
    phase_etcd(config, scratch, fig.configmap_json, scratch + "/vkube/pki", report, fig);
  }

  print_summary(config, fig, report);
}

std::string make_scratch_dir(const std::string& parent) {
  std::string pattern = parent + "/bench_api.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) fail("mkdtemp in " + parent + ": " + std::strerror(errno));
  return buf.data();
}

std::mutex g_scratch_mu;
std::string g_scratch;  // the temporary directory, once made

void kill_children() {
  for (auto& slot : g_children) {
    pid_t pid = slot.exchange(0);
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  std::optional<Config> config = parse_args(argc, argv, &exit_code);
  if (!config) return exit_code;
  // Ctrl-C: a thread of its own stops the children and removes the data
  // (blocked here before any other thread exists, so only it sees them).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, sig);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::thread([stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    kill_children();
    {
      std::lock_guard lock(g_scratch_mu);
      std::error_code ec;
      if (!g_scratch.empty()) fs::remove_all(g_scratch, ec);
    }
    std::fprintf(stderr, "bench_api: interrupted; servers stopped, data removed\n");
    _exit(128 + sig);
  }).detach();

  std::string scratch;
  try {
    scratch = make_scratch_dir(config->parent_dir);
    {
      std::lock_guard lock(g_scratch_mu);
      g_scratch = scratch;
    }
    run_all(*config, scratch);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "bench_api: error: %s\n", e.what());
    exit_code = 1;
  }
  kill_children();
  std::lock_guard lock(g_scratch_mu);
  if (!scratch.empty()) {
    std::error_code ec;
    fs::remove_all(scratch, ec);
    if (ec)
      std::fprintf(stderr, "bench_api: could not remove %s: %s\n", scratch.c_str(),
                   ec.message().c_str());
  }
  return exit_code;
}
