#include "sharing_procs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "children.h"

namespace vkube::bench::sharing {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  std::fflush(stdout);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  if (pid > 0) vkube::bench::track_child(pid);
  return pid;
}

int stop(pid_t pid, std::chrono::seconds grace) {
  if (pid <= 0) return -1;
  kill(pid, SIGTERM);
  int status = 0;
  for (auto t0 = Clock::now(); waitpid(pid, &status, WNOHANG) == 0;) {
    if (Clock::now() - t0 > grace) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  vkube::bench::untrack_child(pid);
  return status;
}

namespace {

void on_signal(int sig) {
  for (auto& slot : vkube::bench::g_children)
    if (pid_t p = slot.load(); p > 0) kill(p, SIGTERM);
  _exit(128 + sig);
}

}  // namespace

void stop_children_on_signal() {
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
}

namespace {

// Processes still running whose command line names `dir` (the tenants a
// host ran from its data directory): none should outlive their host.
std::vector<std::pair<pid_t, std::string>> processes_under(const std::string& dir) {
  std::vector<std::pair<pid_t, std::string>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = read_text(e.path().string() + "/cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    const std::string stat = read_text(e.path().string() + "/stat");
    const auto close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z') continue;
    if (cmd.find(dir) != std::string::npos) out.emplace_back(std::stoi(name), cmd);
  }
  return out;
}

}  // namespace

int wait_for(pid_t pid, std::chrono::seconds timeout) {
  int status = 0;
  for (auto t0 = Clock::now(); waitpid(pid, &status, WNOHANG) == 0;) {
    if (Clock::now() - t0 > timeout) return stop(pid), 124;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  vkube::bench::untrack_child(pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Stage::~Stage() {
  stop(dashboard);
  if (host > 0) {
    int status = stop(host);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      std::printf("  note: vkube host ended with status %d (log %s/host.log)\n", status,
                  dir.c_str());
  }
  // The host's tenants (`vkube serve` from DIR/host) must be gone with it.
  auto left = processes_under(dir);
  for (int i = 0; i < 50 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = processes_under(dir);
  }
  for (const auto& [pid, cmd] : left) {
    std::printf("  PROBLEM: still running after the host stopped: %d %s\n", pid,
                cmd.substr(0, 160).c_str());
    kill(pid, SIGKILL);
  }
  if (!keep && !dir.empty()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  } else if (!dir.empty()) {
    std::printf("  kept %s\n", dir.c_str());
  }
}

}  // namespace vkube::bench::sharing
