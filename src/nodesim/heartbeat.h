// Node heartbeats: one thread renews every node's Lease in turn, spread
// evenly over the heartbeat period (stretched so that at most
// max_renewals_per_second happen), each batch of due renewals written in
// parallel.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nodes.h"

namespace vkube::nodesim {

class Heartbeat {
 public:
  // `registrar` outlives the heartbeat.
  Heartbeat(Registrar& registrar, std::vector<std::string> nodes, std::chrono::milliseconds period,
            int max_renewals_per_second);
  ~Heartbeat();

  void start();
  void stop();  // idempotent

  // How long a full round over every node takes.
  std::chrono::milliseconds round() const { return round_; }

 private:
  void run();
  void renew(const std::string& node);

  Registrar& registrar_;
  std::vector<std::string> nodes_;
  std::chrono::milliseconds round_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vkube::nodesim
