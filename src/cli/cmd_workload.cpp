// `vkube workload`: a small container program for pods of the vkube image on
// `vkube host` (which runs them as local processes), so that logs and exit
// codes can be tried and tested without a container runtime:
//
//   args: [workload, --log-lines, "100", --log-interval-ms, "100", --exit-code, "3"]
//
// prints numbered lines on stdout (every --stderr-every'th on stderr), then
// stays running (--log-lines 0: prints nothing) until --exit-after-ms passes
// or it is stopped, and exits with --exit-code.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "command.h"

namespace vkube::cli {

int run_workload(const Args& args) {
  FlagSet flags("workload",
                "A test container for local pods on `vkube host`: prints numbered log lines, "
                "then runs until stopped or --exit-after-ms, and exits with --exit-code.");
  auto log_flags = add_log_flags(flags);
  int64_t& lines = flags.add_int("log-lines", 10, "lines to print (line 1, line 2, ...)");
  int64_t& interval = flags.add_int("log-interval-ms", 0, "milliseconds between lines");
  int64_t& stderr_every = flags.add_int("stderr-every", 0, "every Nth line goes to stderr (0: none)");
  std::string& prefix = flags.add_string("log-prefix", "line", "the text before each number");
  int64_t& exit_after = flags.add_int("exit-after-ms", -1,
                                  "exit this long after the last line (-1: run until stopped)");
  int64_t& exit_code = flags.add_int("exit-code", 0, "the exit code");
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  block_signals();
  for (int64_t i = 1; i <= lines; ++i) {
    FILE* out = stderr_every > 0 && i % stderr_every == 0 ? stderr : stdout;
    std::fprintf(out, "%s %lld\n", prefix.c_str(), static_cast<long long>(i));
    std::fflush(out);
    if (interval > 0 && i < lines) std::this_thread::sleep_for(std::chrono::milliseconds(interval));
  }
  if (exit_after >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(exit_after));
  } else {
    wait_for_signal();
  }
  return static_cast<int>(exit_code);
}

}  // namespace vkube::cli
