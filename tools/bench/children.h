// The benchmarks' child processes (vkube servers, etcd, helm): every running
// child's pid sits in one lock-free table, so that a signal handler stopping
// the benchmark (Ctrl-C) can stop them too.
#pragma once

#include <sys/types.h>

#include <atomic>

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

}  // namespace vkube::bench
