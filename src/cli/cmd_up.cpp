// vkube up: the embedded default on one machine. Starts `vkube host` (the
// host cluster with simulated GPU nodes) as a child process and makes sure
// one tenant exists on it, as `vkube create` makes tenants: a StatefulSet pod
// that the host's node agent runs as a local `vkube serve`. Prints both
// kubeconfigs and what to try next; Ctrl-C stops the host, which stops its
// tenants. Run again with the same --data-dir, it resumes the same clusters.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "command.h"
#include "vkube/common/log.h"

namespace vkube::cli {

namespace {

using Clock = std::chrono::steady_clock;

// One child process with stdout and stderr in files.
struct Child {
  std::string out_path;
  pid_t pid = -1;

  Status start(const std::vector<std::string>& argv, const std::string& log_path) {
    out_path = log_path + ".out";
    // Emptied here, not in the child: the last run's "serving" line must not
    // be read before the child gets to it.
    ::unlink(out_path.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t parent = ::getpid();
    pid = fork();
    if (pid < 0) return Status::internal("fork: " + std::string(std::strerror(errno)));
    if (pid == 0) {
      // The host dies with `vkube up`, however that ends (a SIGKILL, a test
      // that timed out): SIGTERM lets it stop its tenants' processes first.
      // Forked from the main thread, which lives as long as the process.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) _exit(127);
      int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (out >= 0) dup2(out, STDOUT_FILENO);
      if (err >= 0) dup2(err, STDERR_FILENO);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv("/proc/self/exe", args.data());
      _exit(127);
    }
    return Status::ok();
  }

  // The URL from the child's "vkube is serving URL" line, once it is there.
  std::string serving_url() const {
    std::ifstream in(out_path);
    std::string line;
    const std::string mark = "vkube is serving ";
    while (std::getline(in, line))
      if (line.starts_with(mark)) return line.substr(mark.size());
    return "";
  }

  // True while the child runs; reaps it once it has ended.
  bool running() {
    if (pid <= 0) return false;
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      return false;
    }
    return true;
  }

  void stop() {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 300 && running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (running()) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }
};

// Waits until `c` says it serves; "" when it ended or `timeout` passed.
std::string wait_serving(Child& c, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline && c.running()) {
    if (std::string url = c.serving_url(); !url.empty()) return url;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

// SIGINT or SIGTERM within `wait`; the signals are blocked (block_signals).
bool signalled(std::chrono::milliseconds wait) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  timespec ts{static_cast<time_t>(wait.count() / 1000),
              static_cast<long>(wait.count() % 1000) * 1000000};
  return sigtimedwait(&set, nullptr, &ts) > 0;
}

}  // namespace

int run_up(const Args& args) {
  FlagSet flags("up",
                "Start the embedded default: a host cluster with simulated GPU nodes and one "
                "tenant on it");
  auto& dir =
      flags.add_string("data-dir", "vkube-data", "directory holding all state (host/, tenants/)");
  auto& host_listen = flags.add_string("host-listen", "127.0.0.1:6443", "the host's API address");
  auto& tenant = flags.add_string("tenant", "dev", "the tenant's name");
  auto& nodes = flags.add_int("nodes", 4, "simulated GPU nodes of the host (8 GPUs each)");
  LogFlags log_flags = add_log_flags(flags);
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  block_signals();

  const std::string host_dir = dir + "/host";
  const std::string logs = dir + "/logs";
  for (const std::string& d : {dir, dir + "/tenants", logs})
    if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST)
      return fail("cannot create " + d + ": " + std::strerror(errno));

  Child host;
  std::vector<std::string> host_argv = {
      "vkube",     "host",        "--data-dir",     host_dir,       "--listen",
      host_listen, "--log-level", *log_flags.level, "--log-format", *log_flags.format};
  if (flags.was_set("nodes")) {
    host_argv.push_back("--nodes");
    host_argv.push_back(std::to_string(nodes));
  }
  if (Status s = host.start(host_argv, logs + "/host.log"); !s.is_ok()) return fail(s.message());
  const std::string host_url = wait_serving(host, std::chrono::seconds(60));
  if (host_url.empty()) {
    host.stop();
    return fail("the host did not start; see " + logs + "/host.log");
  }
  const std::string tenant_kc = dir + "/tenants/" + tenant + "/admin.kubeconfig";
  // The wait for the tenant, with Ctrl-C still heard (it stops the host,
  // which ends the wait).
  Result<std::string> tenant_url = Status::unavailable("not started");
  std::atomic<bool> waited{false};
  std::thread waiter([&] {
    tenant_url =
        ensure_tenant(host_dir + "/admin.kubeconfig", tenant, tenant_kc, std::chrono::seconds(60));
    waited = true;
  });
  bool interrupted = false;
  while (!waited) {
    if (!interrupted && (signalled(std::chrono::milliseconds(50)) || !host.running())) {
      interrupted = true;
      host.stop();
    }
  }
  waiter.join();
  if (interrupted) {
    std::printf("vkube stopped\n");
    return 1;
  }
  if (!tenant_url.is_ok()) {
    host.stop();
    return fail("the tenant did not start: " + tenant_url.status().message() + "; see " + host_dir +
                "/pods/vkube-" + tenant + "_vkube-0_*/vkube.log");
  }

  std::printf(
      "vkube is up (state in %s, logs in %s and %s/pods/)\n"
      "  host    %s  export KUBECONFIG=%s/admin.kubeconfig\n"
      "  tenant  %s  %s  export KUBECONFIG=%s\n"
      "Try, as the tenant:\n"
      "  export KUBECONFIG=%s\n"
      "  kubectl run hello --image=nginx --restart=Never && kubectl get pods -o wide\n"
      "More tenants: vkube create NAME (vkube list, vkube delete NAME).\n"
      "Ctrl-C stops everything; `vkube up --data-dir %s` again resumes it.\n",
      dir.c_str(), logs.c_str(), host_dir.c_str(), host_url.c_str(), host_dir.c_str(),
      tenant.c_str(), tenant_url->c_str(), tenant_kc.c_str(), tenant_kc.c_str(), dir.c_str());
  std::fflush(stdout);

  int rc = 0;
  while (!signalled(std::chrono::milliseconds(200))) {
    if (!host.running()) {
      VKUBE_LOG(error, "vkube host ended; see its log", {"log", logs + "/host.log"});
      rc = 1;
      break;
    }
  }
  // The host stops its tenants' processes (their pods) before it exits.
  host.stop();
  std::printf("vkube stopped\n");
  return rc;
}

}  // namespace vkube::cli
