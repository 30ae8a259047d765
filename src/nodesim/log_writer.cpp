#include "log_writer.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "vkube/common/log.h"

namespace vkube::nodesim {

namespace {

// A line longer than this is written in parts (tag P), as the CRI runtimes
// split theirs.
constexpr size_t kMaxLine = 16 << 10;

int64_t now_nanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void write_fully(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full disk loses log lines, never the pod
    off += static_cast<size_t>(n);
  }
}

}  // namespace

std::string cri_timestamp(int64_t unix_nanos) {
  time_t secs = static_cast<time_t>(unix_nanos / 1000000000);
  tm t{};
  gmtime_r(&secs, &t);
  char buf[48];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &t);
  std::snprintf(buf + n, sizeof buf - n, ".%09lldZ",
                static_cast<long long>(unix_nanos % 1000000000));
  return buf;
}

bool parse_cri_line(std::string_view line, CriLine& out) {
  size_t a = line.find(' ');
  if (a == std::string_view::npos) return false;
  size_t b = line.find(' ', a + 1);
  if (b == std::string_view::npos) return false;
  out.timestamp = line.substr(0, a);
  out.stream = line.substr(a + 1, b - a - 1);
  size_t c = line.find(' ', b + 1);
  std::string_view tag = line.substr(b + 1, c == std::string_view::npos ? c : c - b - 1);
  if (tag != "F" && tag != "P") return false;
  out.partial = tag == "P";
  out.text = c == std::string_view::npos ? std::string_view() : line.substr(c + 1);
  return true;
}

struct LogWriter::File {
  int fd = -1;
  ~File() {
    if (fd >= 0) ::close(fd);
  }
};

LogWriter::LogWriter() {
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_;
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
  thread_ = std::thread([this] { run(); });
}

LogWriter::~LogWriter() {
  uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof one);
  thread_.join();
  for (auto& [fd, s] : sources_) {
    drain(fd, s, true);
    ::close(fd);
  }
  ::close(wake_);
  ::close(epoll_);
}

Status LogWriter::add(int stdout_fd, int stderr_fd, const std::string& file) {
  auto f = std::make_shared<File>();
  f->fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (f->fd < 0) {
    Status s = Status::unavailable("cannot open " + file + ": " + std::strerror(errno));
    ::close(stdout_fd);
    ::close(stderr_fd);
    return s;
  }
  std::lock_guard lock(mu_);
  for (auto [fd, stream] : {std::pair{stdout_fd, "stdout"}, std::pair{stderr_fd, "stderr"}}) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    sources_[fd] = Source{f, stream, {}};
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  }
  return Status::ok();
}

bool LogWriter::drain(int fd, Source& s, bool ended) {
  char buf[64 << 10];
  std::string out;
  const std::string prefix_tail = std::string(" ") + s.stream + " ";
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) ended = true;
      break;
    }
    const std::string ts = cri_timestamp(now_nanos());
    std::string_view data(buf, static_cast<size_t>(n));
    while (!data.empty()) {
      size_t nl = data.find('\n');
      if (nl == std::string_view::npos) {
        s.partial.append(data);
        data = {};
      } else {
        s.partial.append(data.substr(0, nl));
        out += ts + prefix_tail + "F " + s.partial + "\n";
        s.partial.clear();
        data.remove_prefix(nl + 1);
      }
      while (s.partial.size() > kMaxLine) {
        out += ts + prefix_tail + "P " + s.partial.substr(0, kMaxLine) + "\n";
        s.partial.erase(0, kMaxLine);
      }
    }
    if (static_cast<size_t>(n) < sizeof buf) break;  // the pipe is empty
  }
  if (ended && !s.partial.empty()) {
    out += cri_timestamp(now_nanos()) + prefix_tail + "F " + s.partial + "\n";
    s.partial.clear();
  }
  if (!out.empty()) write_fully(s.file->fd, out);
  return ended;
}

void LogWriter::run() {
  epoll_event events[64];
  for (;;) {
    int n = ::epoll_wait(epoll_, events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      VKUBE_LOG(error, "local pods' log writer: epoll_wait failed", {"error", std::strerror(errno)});
      return;
    }
    std::lock_guard lock(mu_);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_) return;
      auto it = sources_.find(fd);
      if (it == sources_.end()) continue;
      const bool hup = (events[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)) != 0;
      if (drain(fd, it->second, false) || hup) {
        drain(fd, it->second, true);
        ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
        sources_.erase(it);
      }
    }
  }
}

}  // namespace vkube::nodesim
