// Events as kube-controller-manager records them (client-go's record
// package): core/v1 Events named <object>.<hex nanos>, source.component
// "<controller>", the same reason+message on one object counted on one Event
// (count, lastTimestamp) and a burst of 25 events per object, then one per
// five minutes. Writes happen on the recorder's own thread: recording never
// blocks a controller.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace vkube::controllers {

class LocalClient;

class EventRecorder {
 public:
  using json = nlohmann::json;
  EventRecorder(LocalClient& client,
                std::function<std::chrono::system_clock::time_point()> now);
  ~EventRecorder();

  // Records an event about `object` (any stored object: its apiVersion,
  // kind, metadata.{name,namespace,uid,resourceVersion} are referenced).
  // `type` is "Normal" or "Warning"; `component` names the controller
  // ("deployment-controller", "replicaset-controller", ...).
  void record(const json& object, const std::string& component, const std::string& type,
              const std::string& reason, const std::string& message);

  // Waits until every recorded event is written (tests).
  void flush();
  void stop();

 private:
  struct Pending {
    json involved;
    std::string ns, component, type, reason, message;
  };
  void run();
  void write(const Pending& p);

  LocalClient& client_;
  std::function<std::chrono::system_clock::time_point()> now_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_;
  bool stopping_ = false;
  int writing_ = 0;
  // Aggregation: (uid, reason, message) -> event name and count.
  struct Seen {
    std::string name;
    int count = 0;
  };
  std::unordered_map<std::string, Seen> seen_;
  // Spam filter: per-object token bucket (burst 25, refill 1 per 300 s).
  struct Bucket {
    double tokens = 25;
    std::chrono::steady_clock::time_point at;
  };
  std::unordered_map<std::string, Bucket> buckets_;
  std::thread thread_;
};

}  // namespace vkube::controllers
