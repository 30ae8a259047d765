#include "pod_exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "log_writer.h"

namespace vkube::nodesim {

namespace {

// The PATH a container image gives when the pod sets none.
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Copies what `fd` gives to `write` until end of file or a failed write.
void pump_out(int fd, const std::function<bool(std::string_view)>& write) {
  char buf[64 << 10];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // EOF (EIO from a pty once its process ended)
    if (!write(std::string_view(buf, static_cast<size_t>(n)))) return;
  }
}

bool write_fd(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

streaming::ExitStatus run_exec(const streaming::ExecOptions& o, streaming::Session& s,
                               const std::vector<std::string>& env, const std::string& cwd) {
  // argv and envp, prepared before vfork: the child only makes system calls.
  std::vector<std::string> envs = env;
  bool has_path = false;
  for (const auto& e : envs) has_path = has_path || e.rfind("PATH=", 0) == 0;
  if (!has_path) envs.push_back(std::string("PATH=") + kDefaultPath);
  std::string path_value;
  for (const auto& e : envs)
    if (e.rfind("PATH=", 0) == 0) path_value = e.substr(5);
  std::vector<std::string> args = o.command;
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  // The program, found on the pod's PATH as execvpe would (resolved here,
  // since the child's environment is not ours).
  std::string program = args[0];
  if (program.find('/') == std::string::npos) {
    std::string found;
    size_t start = 0;
    while (start <= path_value.size()) {
      size_t end = path_value.find(':', start);
      if (end == std::string::npos) end = path_value.size();
      std::string dir = path_value.substr(start, end - start);
      std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
      if (::access(candidate.c_str(), X_OK) == 0) {
        found = candidate;
        break;
      }
      start = end + 1;
    }
    if (found.empty()) {
      s.write_stderr("exec: \"" + program + "\": executable file not found in $PATH\n");
      return {127, ""};
    }
    program = found;
  }

  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  int master = -1;
  std::string slave_name;
  auto fail = [&](const char* what) {
    for (int* p : {in_pipe, out_pipe, err_pipe}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
    close_fd(master);
    return streaming::ExitStatus{0, std::string("exec: ") + what + ": " + std::strerror(errno)};
  };
  if (o.tty) {
    master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) return fail("openpt");
    const char* name = ::ptsname(master);
    if (name == nullptr) return fail("ptsname");
    slave_name = name;
  } else {
    if (o.stdin && ::pipe2(in_pipe, O_CLOEXEC) != 0) return fail("pipe");
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) return fail("pipe");
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) return fail("pipe");
  }
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const char* slave = slave_name.c_str();
  const char* dir = cwd.c_str();
  const char* prog = program.c_str();
  const bool tty = o.tty;
  volatile int child_errno = 0;

  pid_t pid = ::vfork();
  if (pid == 0) {
    ::setsid();
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (tty) {
      int fd = ::open(slave, O_RDWR);  // the session's controlling terminal
      if (fd < 0) {
        child_errno = errno;
        ::_exit(126);
      }
      ::ioctl(fd, TIOCSCTTY, 0);
      ::dup2(fd, 0);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      if (fd > 2) ::close(fd);
    } else {
      ::dup2(in_pipe[0] >= 0 ? in_pipe[0] : null_fd, 0);
      ::dup2(out_pipe[1], 1);
      ::dup2(err_pipe[1], 2);
    }
    if (::chdir(dir) != 0) {
      child_errno = errno;
      ::_exit(126);
    }
    ::execve(prog, argv.data(), envp.data());
    child_errno = errno;
    ::_exit(errno == ENOENT ? 127 : 126);
  }
  close_fd(in_pipe[0]);
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  if (null_fd >= 0) ::close(null_fd);
  if (pid < 0) return fail("fork");
  if (child_errno != 0) {
    // It never ran: vfork returns once the child failed its exec.
    int status = 0;
    ::waitpid(pid, &status, 0);
    for (int* p : {in_pipe, out_pipe, err_pipe}) close_fd(p[0]), close_fd(p[1]);
    close_fd(master);
    s.write_stderr("exec: \"" + program + "\": " + std::strerror(child_errno) + "\n");
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 126, ""};
  }

  // The process runs: stdin in, output out, resizes, and the client's
  // departure, each on its own thread, until its output ends.
  std::atomic<bool> done{false};
  const int in_fd = o.tty ? master : in_pipe[1];
  std::thread in_thread, resize_thread, err_thread, watch;
  if (o.stdin && in_fd >= 0) {
    in_thread = std::thread([&] {
      char buf[32 << 10];
      for (;;) {
        auto n = s.read_stdin(buf, sizeof buf);
        if (!n.is_ok() || *n == 0 || done) break;
        if (!write_fd(in_fd, std::string_view(buf, *n))) break;
      }
      // The client's end of stdin: EOF for the command (^D under a tty).
      if (!done) {
        if (o.tty) write_fd(in_fd, "\x04");
        else close_fd(in_pipe[1]);
      }
    });
  }
  if (o.tty) {
    resize_thread = std::thread([&] {
      while (auto size = s.next_resize()) {
        if (done) break;
        winsize ws{};
        ws.ws_col = size->width;
        ws.ws_row = size->height;
        ::ioctl(master, TIOCSWINSZ, &ws);
      }
    });
  } else {
    err_thread = std::thread([&] {
      pump_out(err_pipe[0], [&](std::string_view d) { return !o.stderr || s.write_stderr(d); });
    });
  }
  // A client that goes away ends the command, as a closed exec stream does.
  watch = std::thread([&] {
    while (!done) {
      if (s.client_gone()) {
        ::kill(-pid, SIGKILL);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  pump_out(o.tty ? master : out_pipe[0],
           [&](std::string_view d) { return !o.stdout || s.write_stdout(d); });
  if (err_thread.joinable()) err_thread.join();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  done = true;
  ::kill(-pid, SIGKILL);  // what it left running in its session
  s.stop_input();
  if (in_thread.joinable()) in_thread.join();
  if (resize_thread.joinable()) resize_thread.join();
  watch.join();
  close_fd(master);
  for (int* p : {in_pipe, out_pipe, err_pipe}) close_fd(p[0]), close_fd(p[1]);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), ""};
}

streaming::ExitStatus run_attach(const streaming::ExecOptions& o, streaming::Session& s,
                                 const std::string& log_path,
                                 const std::function<bool()>& running) {
  int fd = ::open(log_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return {0, "cannot attach: the container's output (" + log_path + ") cannot be read: " +
                   std::strerror(errno)};
  struct stat st {};
  off_t offset = ::fstat(fd, &st) == 0 ? st.st_size : 0;
  std::string pending;
  char buf[64 << 10];
  bool last_round = false;
  while (!s.client_gone()) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n > 0) {
      offset += n;
      pending.append(buf, static_cast<size_t>(n));
      size_t end;
      while ((end = pending.find('\n')) != std::string::npos) {
        CriLine l;
        std::string line = pending.substr(0, end);
        pending.erase(0, end + 1);
        if (!parse_cri_line(line, l)) continue;
        std::string text(l.text);
        if (!l.partial) text += '\n';
        bool ok = l.stream == "stderr" ? (!o.stderr || s.write_stderr(text))
                                       : (!o.stdout || s.write_stdout(text));
        if (!ok) {
          ::close(fd);
          return {0, ""};
        }
      }
      continue;
    }
    if (last_round) break;
    if (!running()) {
      last_round = true;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::close(fd);
  return {0, ""};
}

}  // namespace vkube::nodesim
