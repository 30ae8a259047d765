#include "process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace vkube::e2e {

namespace {

std::string join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}

// This process's environment with `overrides` replacing or joining it, and
// the connection guard preloaded (unless VKUBE_E2E_NO_CONNECT_GUARD is set,
// e.g. for a sanitizer build whose runtime must be loaded first).
std::vector<std::string> environment(std::map<std::string, std::string> overrides) {
#ifdef VKUBE_CONNECT_GUARD
  if (std::getenv("VKUBE_E2E_NO_CONNECT_GUARD") == nullptr) {
    overrides.emplace("LD_PRELOAD", VKUBE_CONNECT_GUARD);
    overrides.emplace("VKUBE_CONNECT_GUARD_LOG", connect_guard_log());
  }
#endif
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (!overrides.contains(kv.substr(0, kv.find('=')))) env.push_back(kv);
  }
  for (const auto& [k, v] : overrides) env.push_back(k + "=" + v);
  return env;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Keeps failure messages readable when a client prints a whole object.
std::string clip(const std::string& s) {
  constexpr size_t kMax = 6000;
  if (s.size() <= kMax) return s;
  return s.substr(0, kMax) + "\n... (" + std::to_string(s.size() - kMax) + " more bytes)";
}

}  // namespace

std::string connect_guard_log() {
  static const std::string path =
      "/tmp/vkube-e2e-connect-guard-" + std::to_string(::getpid()) + ".log";
  return path;
}

std::vector<std::string> take_connect_guard_findings() {
  std::vector<std::string> out;
  std::ifstream in(connect_guard_log());
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  in.close();
  if (!out.empty()) ::truncate(connect_guard_log().c_str(), 0);
  return out;
}

std::ostream& operator<<(std::ostream& os, const Result& r) {
  os << "$ " << r.command << "\n[exit " << r.exit_code << (r.timed_out ? ", timed out" : "")
     << "]\n--- stdout:\n"
     << clip(r.out) << "\n--- stderr:\n"
     << clip(r.err);
  return os;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

Process::Process(const Spawn& spawn)
    : command_(join(spawn.argv)), out_path_(spawn.out_path), err_path_(spawn.err_path) {
  std::vector<char*> argv;
  for (const auto& a : spawn.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env = environment(spawn.env);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // Same process group as the tests, so Ctrl-C ends the servers too; no signal
  // blocked (a blocked SIGTERM would be inherited and stop() would not work).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data()) == 0) pid_ = pid;
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (pid_ < 0) exit_code_ = 127;
}

Process::Process(Process&& other) noexcept
    : command_(std::move(other.command_)),
      out_path_(std::move(other.out_path_)),
      err_path_(std::move(other.err_path_)),
      pid_(other.pid_),
      exit_code_(other.exit_code_) {
  other.pid_ = -1;
}

Process::~Process() {
  if (pid_ > 0 && !exit_code_) stop(SIGKILL, seconds(5));
}

bool Process::running() {
  if (pid_ <= 0 || exit_code_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    exit_code_ = decode_status(status);
    return false;
  }
  return true;
}

std::optional<int> Process::wait_for(milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return exit_code_;
}

int Process::stop(int sig, milliseconds grace) {
  if (running()) {
    ::kill(pid_, sig);
    if (!wait_for(grace)) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      exit_code_ = decode_status(status);
    }
  }
  return exit_code_.value_or(-1);
}

std::string Process::out() const {
  return read_file(out_path_);
}
std::string Process::err() const {
  return read_file(err_path_);
}

bool Process::wait_for_out(const std::string& needle, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out().find(needle) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

Result Process::result(bool timed_out) {
  Result r;
  r.command = command_;
  r.exit_code = exit_code_.value_or(-1);
  r.timed_out = timed_out;
  r.out = out();
  r.err = err();
  return r;
}

Result run(const Spawn& spawn, milliseconds timeout) {
  Process p(spawn);
  bool timed_out = !p.wait_for(timeout).has_value();
  if (timed_out) p.stop(SIGKILL, seconds(5));
  return p.result(timed_out);
}

}  // namespace vkube::e2e
