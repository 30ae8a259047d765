// vkube: one binary, many subcommands.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "command.h"
#include "vkube/common/log.h"

namespace vkube::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"serve", "Serve one tenant's Kubernetes API", run_serve},
      {"host", "Run an embedded host cluster: API, GPU scheduler, simulated GPU nodes", run_host},
      {"up", "Start the embedded default: a host with simulated GPU nodes and one tenant", run_up},
      {"create", "Create a tenant on a host cluster and write its kubeconfig", run_create},
      {"list", "List the tenants on a host cluster, with their GPU use", run_list},
      {"connect", "Print or write a tenant's kubeconfig", run_connect},
      {"delete", "Delete a tenant from its host cluster", run_delete},
      {"share", "Set a tenant's share of the host's GPU pool (deserved, limit, weight)", run_share},
      {"dashboard", "Serve the GPU-pool dashboard of a host cluster on this machine", run_dashboard},
      {"version", "Print the vkube version", run_version},
      {"backup", "Copy a store to a backup directory, online", run_backup},
      {"restore", "Restore a store from a backup directory", run_restore},
      {"workload", "A test container for local pods: log lines, exit codes", run_workload},
  };
  return kCommands;
}

LogFlags add_log_flags(FlagSet& flags) {
  return {&flags.add_string("log-level", "info", "log level: debug, info, warn, error or off"),
          &flags.add_string("log-format", "logfmt", "log format: logfmt or json")};
}

int parse_or_exit(FlagSet& flags, const LogFlags& log_flags, const Args& args) {
  if (Status s = flags.parse(args); !s.is_ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 2;
  }
  if (flags.help()) {
    std::fputs(flags.usage().c_str(), stdout);
    return 0;
  }
  log::Level level;
  if (!log::parse_level(*log_flags.level, &level)) {
    std::fprintf(stderr, "error: --log-level: unknown level '%s'\n", log_flags.level->c_str());
    return 2;
  }
  log::set_level(level);
  if (*log_flags.format == "json") {
    log::set_format(log::Format::kJson);
  } else if (*log_flags.format != "logfmt") {
    std::fprintf(stderr, "error: --log-format: unknown format '%s'\n", log_flags.format->c_str());
    return 2;
  }
  return -1;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

namespace {

void print_help() {
  std::printf(
      "vkube: a virtual-cluster control plane. Every tenant gets its own Kubernetes API;\n"
      "their pods share one host cluster of GPU nodes.\n\nUsage:\n  vkube <command> [flags]\n\n"
      "Commands:\n");
  for (const Command& c : commands()) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf("\nRun 'vkube <command> --help' for a command's flags.\n");
}

// `vkube host` runs itself again with jemalloc preloaded, when the build
// found it (cmake/Allocator.cmake says why the host only). The second run
// restores LD_PRELOAD at once, so nothing it starts inherits the preload.
// VKUBE_HOST_ALLOCATOR=glibc keeps glibc's malloc.
void preload_jemalloc_into_host([[maybe_unused]] char** argv) {
#ifdef VKUBE_JEMALLOC_SO
  constexpr const char* kMark = "VKUBE_HOST_ALLOCATOR";
  constexpr const char* kSaved = "VKUBE_HOST_LD_PRELOAD";
  // LD_PRELOAD as it was before the first run, and no marks.
  auto restore = [&](const char* before) {
    if (before != nullptr)
      setenv("LD_PRELOAD", before, 1);
    else
      unsetenv("LD_PRELOAD");
    unsetenv(kSaved);
    unsetenv(kMark);
  };
  const char* mark = std::getenv(kMark);
  if (mark != nullptr) {
    if (std::strcmp(mark, "jemalloc") == 0) restore(std::getenv(kSaved));  // the second run
    return;
  }
  if (access(VKUBE_JEMALLOC_SO, R_OK) != 0) return;
  const char* before = std::getenv("LD_PRELOAD");
  std::string preload = VKUBE_JEMALLOC_SO;
  if (before != nullptr) {
    setenv(kSaved, before, 1);
    before = std::getenv(kSaved);  // setenv below may free the old LD_PRELOAD string
    if (*before != '\0') preload += std::string(":") + before;
  }
  setenv(kMark, "jemalloc", 1);
  setenv("LD_PRELOAD", preload.c_str(), 1);
  execv("/proc/self/exe", argv);
  restore(before);  // could not run again: go on with glibc's malloc
#endif
}

}  // namespace
}  // namespace vkube::cli

int main(int argc, char** argv) {
  using namespace vkube::cli;
  if (argc >= 2 && std::strcmp(argv[1], "host") == 0) preload_jemalloc_into_host(argv);
  // glibc's malloc gives each allocating thread an arena of its own, up to 8 per CPU,
  // and keeps what was freed in it. With 64 handler threads every large
  // request (a LIST of 5,000 pods allocates ~100 MB of transient JSON) then
  // leaves its peak resident in another arena: RSS reached 700 MB after 40
  // such LISTs, against 150 MB with one arena per CPU (and LISTs got faster,
  // as they reuse warm memory). MALLOC_ARENA_MAX in the environment still wins.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) {
    mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
  }
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  Args args(argv + 2, argv + argc);
  for (const Command& c : commands()) {
    if (c.name == std::string_view(argv[1])) return c.run(args);
  }
  std::fprintf(stderr, "error: unknown command '%s' (see vkube --help)\n", argv[1]);
  return 2;
}
