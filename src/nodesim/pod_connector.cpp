#include "pod_connector.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include "local_pods.h"
#include "log_writer.h"
#include "pod_exec.h"
#include "vkube/streaming/streaming.h"
#include "vkube/common/log.h"
#include "vkube/http/server.h"

namespace vkube::nodesim {

namespace {

using json = nlohmann::json;

std::string meta(const json& pod, const char* part, const char* key) {
  auto it = pod.find(part);
  if (it == pod.end() || !it->is_object()) return {};
  auto v = it->find(key);
  return v != it->end() && v->is_string() ? v->get<std::string>() : std::string();
}

int64_t now_nanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool truthy(const std::string& v) { return v == "true" || v == "1" || v == "True"; }

// RFC 3339 ("2026-12-05T13:00:00Z", fractions and offsets too) as Unix nanoseconds.
std::optional<int64_t> parse_rfc3339(const std::string& s) {
  tm t{};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &t);
  if (rest == nullptr) return std::nullopt;
  int64_t nanos = 0;
  if (*rest == '.') {
    int64_t scale = 100000000;
    for (++rest; *rest >= '0' && *rest <= '9'; ++rest, scale /= 10) nanos += (*rest - '0') * scale;
  }
  int64_t offset = 0;
  if (*rest == 'Z' || *rest == 'z') {
    ++rest;
  } else if (*rest == '+' || *rest == '-') {
    int sign = *rest == '-' ? -1 : 1;
    int hh = 0, mm = 0;
    if (std::sscanf(rest + 1, "%2d:%2d", &hh, &mm) != 2) return std::nullopt;
    offset = sign * (hh * 3600 + mm * 60);
    rest += 6;
  } else {
    return std::nullopt;
  }
  if (*rest != '\0') return std::nullopt;
  return (static_cast<int64_t>(timegm(&t)) - offset) * 1000000000 + nanos;
}

// Reads what `fd` holds from `offset` on, up to the last complete line;
// advances `offset` past it.
std::string read_lines(int fd, off_t& offset) {
  std::string data;
  char buf[256 << 10];
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset + static_cast<off_t>(data.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (data.size() >= (8u << 20)) break;  // the rest in the next round
  }
  size_t end = data.rfind('\n');
  if (end == std::string::npos) return {};
  data.resize(end + 1);
  offset += static_cast<off_t>(data.size());
  return data;
}

// A follow: the lines the file has, then those written later, until the
// container ends, limitBytes is reached or the client goes.
class LogFollow final : public http::ResponseStream,
                        public std::enable_shared_from_this<LogFollow> {
 public:
  LogFollow(int fd, std::string path, off_t offset, LogOptions options,
            std::function<bool()> running)
      : fd_(fd), path_(std::move(path)), offset_(offset), o_(std::move(options)),
        running_(std::move(running)) {}
  ~LogFollow() override { ::close(fd_); }

  void start(std::shared_ptr<http::StreamSink> sink) override {
    std::thread([self = shared_from_this(), sink] { self->run(*sink); }).detach();
  }
  void stop() override { stopped_ = true; }

 private:
  void run(http::StreamSink& sink) {
    int watch_fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (watch_fd >= 0) ::inotify_add_watch(watch_fd, path_.c_str(), IN_MODIFY | IN_CLOSE_WRITE);
    int64_t budget = o_.limit_bytes;
    bool last_round = false;
    while (!stopped_) {
      std::string data = read_lines(fd_, offset_);
      if (!data.empty()) {
        std::string out = render_log_lines(data, o_, budget);
        if (!out.empty() && !sink.write(std::move(out))) break;
        if (budget == 0) break;
        continue;
      }
      if (last_round) break;
      if (!running_()) {
        last_round = true;  // what the writer still had, then the end
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      pollfd p{watch_fd, POLLIN, 0};
      if (watch_fd < 0 || ::poll(&p, 1, 100) > 0) {
        char ev[4096];
        while (watch_fd >= 0 && ::read(watch_fd, ev, sizeof ev) > 0) {
        }
        if (watch_fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    if (watch_fd >= 0) ::close(watch_fd);
    sink.close();
  }

  const int fd_;
  const std::string path_;
  off_t offset_;
  const LogOptions o_;
  const std::function<bool()> running_;
  std::atomic<bool> stopped_{false};
};

class NodePodConnector final : public apiserver::PodConnector {
 public:
  explicit NodePodConnector(NodePods pods) : pods_(std::move(pods)) {}

  http::Response connect(const apiserver::PodRequest& p, http::Request& req) override {
    const std::string name = meta(p.pod, "metadata", "name");
    const std::string ns = meta(p.pod, "metadata", "namespace");
    const std::string node = meta(p.pod, "spec", "nodeName");
    if (!pods_.runs_locally(p.pod)) {
      const char* what = p.subresource == "log"    ? "there are no logs to read"
                         : p.subresource == "exec" ? "there is nothing to exec in"
                         : p.subresource == "attach" ? "there is nothing to attach to"
                                                     : "there are no ports to forward to";
      return apiserver::status_response(Status::bad_request(
          "pod " + name + " runs on the simulated node " + node +
              " (vkube.io/simulated=true), which runs no containers: " + what +
              " (only tenants' control planes run as local processes, and the pods of the "
              "`vkube host --local-images` images in namespaces whose operator opted in with "
              "`vkube create --unsandboxed-local-pods`)"));
    }
    if (p.subresource == "log") return logs(p, req, name, ns);
    const std::string key = ns + "/" + name;
    auto box = pods_.sandbox(key);
    if (!box) {
      if (p.subresource == "portforward")
        return apiserver::status_response(Status::bad_request(
            "pod " + name + " on node " + node + " does not run: there are no ports to forward to"));
      return apiserver::status_response(Status::bad_request(
          "container " + p.container + " is not running in pod " + name + " on node " + node));
    }
    if (p.subresource == "portforward") {
      const std::string ip = box->ip;
      return streaming::serve_port_forward(req, [ip, name](uint16_t port)
                                                    -> Result<std::unique_ptr<http::Duplex>> {
        auto c = http::dial_tcp(ip, port, std::chrono::seconds(5));
        if (!c.is_ok())
          return Status::unavailable("error forwarding port " + std::to_string(port) +
                                     " to pod " + name + ": failed to connect to " + ip + ":" +
                                     std::to_string(port) + " (the pod's address): " +
                                     c.status().message());
        return c;
      });
    }
    auto options = streaming::parse_exec_options(req, p.subresource == "attach");
    if (!options.is_ok()) return apiserver::status_response(options.status());
    if (p.subresource == "exec") {
      std::vector<std::string> env = std::move(box->env);
      std::string cwd = std::move(box->cwd);
      return streaming::serve_exec(
          req, std::move(options).value(),
          [env, cwd](const streaming::ExecOptions& o, streaming::Session& s) {
            return run_exec(o, s, env, cwd);
          });
    }
    const std::string log = LocalPods::log_file(pods_.pod_dir(p.pod), p.container);
    return streaming::serve_exec(
        req, std::move(options).value(),
        [log, running = pods_.running, key](const streaming::ExecOptions& o,
                                            streaming::Session& s) {
          return run_attach(o, s, log, [&] { return running(key); });
        });
  }

 private:
  http::Response logs(const apiserver::PodRequest& p, const http::Request& req,
                      const std::string& name, const std::string& ns) {
    auto options = parse_log_options(req.query, now_nanos());
    if (!options.is_ok()) {
      const Status& s = options.status();
      return apiserver::status_response(
          s.code() == Code::kInvalid
              ? Status::invalid("PodLogOptions \"" + name + "\" is invalid: " + s.message())
              : s);
    }
    LogOptions o = std::move(options).value();
    std::string path = LocalPods::log_file(pods_.pod_dir(p.pod), p.container);
    if (o.previous) path += ".previous";
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (o.previous)
        return apiserver::status_response(Status::bad_request(
            "previous terminated container \"" + p.container + "\" in pod \"" + name +
            "\" not found"));
      return apiserver::status_response(
          Status::bad_request("container \"" + p.container + "\" in pod \"" + name +
                              "\" is waiting to start: ContainerCreating"));
    }
    off_t offset = static_cast<off_t>(tail_offset(fd, o.tail_lines));
    http::Response r;
    r.set_header("Content-Type", "text/plain");
    if (o.follow && !o.previous) {
      const std::string key = ns + "/" + name;
      r.stream = std::make_shared<LogFollow>(fd, path, offset, o,
                                             [running = pods_.running, key] { return running(key); });
      return r;
    }
    int64_t budget = o.limit_bytes;
    for (;;) {
      std::string data = read_lines(fd, offset);
      if (data.empty() || budget == 0) break;
      r.body += render_log_lines(data, o, budget);
    }
    ::close(fd);
    return r;
  }

  NodePods pods_;
};

Result<int64_t> int_param(const std::string& query, const char* name, bool* present) {
  auto v = http::query_param(query, name);
  *present = v.has_value();
  if (!v) return int64_t{0};
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || end != v->data() + v->size() || v->empty())
    return Status::bad_request(std::string(name) + ": invalid integer \"" + *v + "\"");
  return out;
}

}  // namespace

Result<LogOptions> parse_log_options(const std::string& query, int64_t now) {
  LogOptions o;
  o.follow = truthy(http::query_param(query, "follow").value_or(""));
  o.previous = truthy(http::query_param(query, "previous").value_or(""));
  o.timestamps = truthy(http::query_param(query, "timestamps").value_or(""));
  bool has_tail = false, has_limit = false, has_since = false;
  auto tail = int_param(query, "tailLines", &has_tail);
  if (!tail.is_ok()) return tail.status();
  auto limit = int_param(query, "limitBytes", &has_limit);
  if (!limit.is_ok()) return limit.status();
  auto since = int_param(query, "sinceSeconds", &has_since);
  if (!since.is_ok()) return since.status();
  auto since_time = http::query_param(query, "sinceTime");
  if (has_tail) {
    if (*tail < 0)
      return Status::invalid("tailLines: Invalid value: " + std::to_string(*tail) +
                             ": must be greater than or equal to 0");
    o.tail_lines = *tail;
  }
  if (has_limit) {
    if (*limit < 1)
      return Status::invalid("limitBytes: Invalid value: " + std::to_string(*limit) +
                             ": must be greater than 0");
    o.limit_bytes = *limit;
  }
  if (has_since && since_time)
    return Status::invalid("[]: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be "
                           "specified");
  if (has_since) {
    if (*since < 1)
      return Status::invalid("sinceSeconds: Invalid value: " + std::to_string(*since) +
                             ": must be greater than 0");
    o.since = cri_timestamp(now - *since * 1000000000);
  }
  if (since_time) {
    auto t = parse_rfc3339(*since_time);
    if (!t)
      return Status::bad_request("sinceTime: invalid time \"" + *since_time +
                                 "\": not in RFC 3339 form (2006-01-02T15:04:05Z)");
    o.since = cri_timestamp(*t);
  }
  return o;
}

std::string render_log_lines(std::string_view data, const LogOptions& o, int64_t& budget) {
  std::string out;
  bool line_start = true;  // the next text begins a line (not a P line's continuation)
  while (!data.empty() && budget != 0) {
    size_t nl = data.find('\n');
    std::string_view line = data.substr(0, nl);
    data.remove_prefix(nl == std::string_view::npos ? data.size() : nl + 1);
    CriLine l;
    if (!parse_cri_line(line, l)) continue;
    if (!o.since.empty() && l.timestamp < o.since) {
      line_start = !l.partial;
      continue;
    }
    std::string piece;
    if (o.timestamps && line_start) {
      piece.append(l.timestamp);
      piece += ' ';
    }
    piece.append(l.text);
    if (!l.partial) piece += '\n';
    line_start = !l.partial;
    if (budget > 0 && static_cast<int64_t>(piece.size()) > budget) piece.resize(budget);
    if (budget > 0) budget -= static_cast<int64_t>(piece.size());
    out += piece;
  }
  return out;
}

size_t tail_offset(int fd, int64_t lines) {
  if (lines < 0) return 0;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return 0;
  off_t end = st.st_size;
  if (lines == 0) return static_cast<size_t>(end);
  // Lines are counted from the end, the file's last '\n' ending the last one.
  int64_t seen = -1;
  char buf[64 << 10];
  off_t pos = end;
  while (pos > 0) {
    off_t start = pos > static_cast<off_t>(sizeof buf) ? pos - static_cast<off_t>(sizeof buf) : 0;
    ssize_t n = ::pread(fd, buf, static_cast<size_t>(pos - start), start);
    if (n <= 0) return 0;
    for (ssize_t i = n - 1; i >= 0; --i) {
      if (buf[i] != '\n') continue;
      if (++seen == lines) return static_cast<size_t>(start + i + 1);
    }
    pos = start;
  }
  return 0;
}

std::shared_ptr<apiserver::PodConnector> make_pod_connector(NodePods pods) {
  return std::make_shared<NodePodConnector>(std::move(pods));
}

}  // namespace vkube::nodesim
