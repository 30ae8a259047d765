// bench_sharing's processes: `vkube host`, `vkube create`, `vkube dashboard`
// and chromium started so that none outlives the benchmark (killed, failed
// or interrupted), and one configuration's host stopped with its tenants.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace vkube::bench::sharing {

// The file's text; empty when it cannot be read.
std::string read_text(const std::string& path);

// Starts argv (argv[0] a path) with stdout and stderr appended to `log`. The
// child gets SIGTERM when this process dies (the host's tenants die with the
// host the same way) and is stopped by the handlers stop_children_on_signal
// installs. The pid, or -1 when fork fails.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log);

// SIGTERM, then SIGKILL after `grace`; the raw wait status (-1: no pid).
int stop(pid_t pid, std::chrono::seconds grace = std::chrono::seconds(20));

// Waits up to `timeout` for pid to end, else stops it and returns 124; the
// exit code (128 + signal when killed).
int wait_for(pid_t pid, std::chrono::seconds timeout);

// SIGINT and SIGTERM stop every spawned child still running, then exit.
void stop_children_on_signal();

// One configuration's host and dashboard and its directory: stopped and
// removed (unless kept) however the run ends, and any process still naming
// the directory once the host is gone (a tenant it ran) reported and killed.
struct Stage {
  std::string dir;
  bool keep = false;
  pid_t host = -1, dashboard = -1;

  Stage() = default;
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;
  ~Stage();
};

}  // namespace vkube::bench::sharing
