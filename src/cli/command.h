// vkube's subcommands. Each is a function from its arguments to an exit code;
// main.cpp dispatches on the first argument.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "flags.h"
#include "vkube/common/status.h"

namespace vkube::cli {

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Args& args);
};

// The table of every subcommand, in the order `vkube --help` lists them.
const std::vector<Command>& commands();

// Adds --log-level and --log-format to a command's flags.
struct LogFlags {
  std::string* level;
  std::string* format;
};
LogFlags add_log_flags(FlagSet& flags);

// Parses flags and applies the log flags. Returns -1 to continue, or the
// exit code to return at once (0 after printing --help, 2 on a usage error).
int parse_or_exit(FlagSet& flags, const LogFlags& log_flags, const Args& args);

// Prints "error: <message>" to stderr and returns exit code 1.
int fail(const std::string& message);

int run_version(const Args& args);
int run_backup(const Args& args);
int run_restore(const Args& args);
int run_serve(const Args& args);
int run_host(const Args& args);
int run_up(const Args& args);
int run_create(const Args& args);
int run_list(const Args& args);
int run_delete(const Args& args);
int run_share(const Args& args);
int run_connect(const Args& args);
int run_dashboard(const Args& args);
int run_workload(const Args& args);

// Blocks SIGINT/SIGTERM in every thread started after it (call first), and
// ignores SIGPIPE; wait_for_signal() then blocks until one arrives.
void block_signals();
void wait_for_signal();
// Makes sure tenant `name` exists on the host cluster of `host_kubeconfig`
// (made as `vkube create` makes it when missing) and answers, and writes its
// kubeconfig to `out`; returns the tenant's URL.
Result<std::string> ensure_tenant(const std::string& host_kubeconfig, const std::string& name,
                                  const std::string& out, std::chrono::seconds timeout);

// "a,b,,c" -> {"a", "b", "c"}
std::vector<std::string> split_list(const std::string& text);
// --service-cluster-ip-range (vkube serve and vkube host; cmd_serve.cpp).
std::string& add_service_cidr_flag(FlagSet& flags);

}  // namespace vkube::cli
