// bench_sharing's replay of a plan's arrivals into running tenants: per team
// a few creator threads that create the pods at their time, oldest first (a
// 403 holds the team's queue for 100 ms, then its head is tried again), and
// a watch that records when they run, finish or are preempted (preempted
// work is created again at once under a new name); a sampler reads the
// host's /metrics and the records every --sample-ms.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sharing_model.h"
#include "vkube/hostclient/client.h"

namespace vkube::bench::sharing {

struct ReplayOptions {
  std::string config;    // the configuration's name, for the result and progress lines
  double seconds = 300;  // the replay ends here (pods still running stay unfinished)
  double grace = 1.0;    // wall seconds a pod may wait before it counts as waiting
  int sample_ms = 250;   // host /metrics sampling period
  int progress_s = 10;   // a progress line this often (0: none)
};

// What the replay saw beyond the RunResult: its timeliness and its failures.
struct ReplayReport {
  double max_late_s = 0;    // the latest first create attempt after its due time
  int late_over_100ms = 0;  // arrivals whose first attempt came > 100 ms late
  std::vector<std::pair<double, double>> late_examples;  // (due at, late by): the first few
  int creates = 0;          // create requests sent (403 answers included)
  int refused_answers = 0;  // 403 answers (a pod may collect several)
  int vanished = 0;         // preempted pods seen only as gone (no DisruptionTarget seen)
  int running_missed = 0;   // pods that succeeded before a Running was seen
  int failed = 0;           // pods Failed without DisruptionTarget
  int samples_failed = 0;   // /metrics reads that failed
  std::vector<std::string> first_errors;  // the first few failures in full
};

class Replay {
 public:
  // `tenants[k]` is team k's client (plan.teams[k]); `host` reads /metrics.
  // The clients must outlive the replay; run() stops them at its end.
  Replay(const Plan& plan, std::vector<hostclient::Client*> tenants, hostclient::Client& host,
         ReplayOptions options);
  ~Replay();
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  // Starts the threads; the replay's clock starts now.
  void start();
  // Blocks until the replay's clock reads `t` seconds (or the end).
  void sleep_until(double t) const;
  // Blocks until `seconds` have passed, stops every thread and hands back
  // what was recorded. Call once, after start().
  RunResult finish(ReplayReport* report);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkube::bench::sharing
