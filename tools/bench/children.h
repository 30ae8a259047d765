// The benchmarks' child processes (vkube servers, etcd, helm): every running
// child's pid sits in one lock-free table, so that a signal handler stopping
// the benchmark (Ctrl-C) can stop them too.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

namespace vkube::bench {

inline constexpr int kMaxChildren = 8;
inline std::atomic<pid_t> g_children[kMaxChildren];

inline void track_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
}

inline void untrack_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = pid;
    slot.compare_exchange_strong(expected, 0);
  }
}

// Starts argv[0] (a path) with argv, its stdout in the file `out` and its
// stderr in `err` (after stdout's lines when it is the same file); the
// child's pid, or -1 when fork fails.
inline pid_t spawn_to_files(const std::vector<std::string>& argv, const std::string& out,
                            const std::string& err) {
  std::fflush(stdout);  // or the child would print what is buffered again
  pid_t pid = fork();
  if (pid == 0) {
    FILE* o = std::freopen(out.c_str(), "w", stdout);
    FILE* e = std::freopen(err.c_str(), err == out ? "a" : "w", stderr);
    (void)o;
    (void)e;
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

}  // namespace vkube::bench
