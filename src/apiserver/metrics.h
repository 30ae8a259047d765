// Prometheus metrics of the API server: requests by verb, resource and code,
// a latency histogram, requests in flight and open watches.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace vkube::apiserver {

class Metrics {
 public:
  void observe(const std::string& verb, const std::string& resource, int code, double seconds);
  void inflight_add(int delta) { inflight_ += delta; }
  void watches_add(int delta) { watches_ += delta; }
  int64_t watches() const { return watches_.load(); }
  // The text exposition format (version 0.0.4).
  std::string render() const;

 private:
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1,    5};
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> counts{};
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> requests_;
  std::map<std::pair<std::string, std::string>, Histogram> latency_;
  std::atomic<int64_t> inflight_{0};
  std::atomic<int64_t> watches_{0};
};

}  // namespace vkube::apiserver
