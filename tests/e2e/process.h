// Child processes for the end-to-end tests: the vkube server and the real
// clients, started with posix_spawn, their stdout and stderr written to files.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace vkube::e2e {

using std::chrono::milliseconds;
using std::chrono::seconds;

// What a finished (or timed-out) command did.
struct Result {
  std::string command;  // the argv joined by spaces, for failure messages
  int exit_code = -1;   // 128 + signal when it was killed by a signal
  bool timed_out = false;
  std::string out;  // stdout
  std::string err;  // stderr

  std::string output() const { return out + err; }
};

std::ostream& operator<<(std::ostream& os, const Result& r);

// The file the connection guard (connect_guard/connect_guard.cpp, preloaded
// into every process started here) records connections outside 127.0.0.0/8
// in; and its lines so far, emptying it.
std::string connect_guard_log();
std::vector<std::string> take_connect_guard_findings();

// How a child is started: the program with its arguments, and variables that
// replace or join this process's environment.
struct Spawn {
  std::vector<std::string> argv;  // argv[0] is the program's absolute path
  std::map<std::string, std::string> env;
  std::string out_path;  // stdout goes here (truncated)
  std::string err_path;  // stderr goes here (truncated)
};

// One running child. Destroying a Process that still runs kills it (SIGKILL)
// and reaps it, so a failing test leaves nothing behind. Not thread-safe.
class Process {
 public:
  // Starts the child; running() is false if posix_spawn failed.
  explicit Process(const Spawn& spawn);
  ~Process();
  Process(Process&& other) noexcept;
  Process& operator=(Process&&) = delete;
  Process(const Process&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& command() const { return command_; }
  bool running();
  // The exit code once the child has ended within `timeout`, else nullopt.
  std::optional<int> wait_for(milliseconds timeout);
  // Sends `sig`, then waits up to `grace` and kills it if it still runs.
  int stop(int sig, milliseconds grace);

  std::string out() const;
  std::string err() const;
  // Polls stdout until it contains `needle`; false when `timeout` passes first.
  bool wait_for_out(const std::string& needle, milliseconds timeout);

  // The exit code, stdout and stderr after the child ended (or was stopped).
  Result result(bool timed_out = false);

 private:
  std::string command_;
  std::string out_path_;
  std::string err_path_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

// Runs a command to its end; kills it after `timeout` (then timed_out is set).
Result run(const Spawn& spawn, milliseconds timeout);

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& content);

}  // namespace vkube::e2e
