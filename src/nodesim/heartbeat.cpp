#include "heartbeat.h"

#include <algorithm>

#include "vkube/common/log.h"

namespace vkube::nodesim {

namespace {

using Clock = std::chrono::steady_clock;

// Renewals due within this much of each other go out in one batch: fewer
// wake-ups when there are many nodes.
constexpr auto kMinTick = std::chrono::milliseconds(50);

}  // namespace

Heartbeat::Heartbeat(Registrar& registrar, std::vector<std::string> nodes,
                     std::chrono::milliseconds period, int max_renewals_per_second)
    : registrar_(registrar), nodes_(std::move(nodes)), round_(period) {
  if (max_renewals_per_second > 0) {
    auto needed = std::chrono::milliseconds(static_cast<int64_t>(nodes_.size()) * 1000 /
                                            max_renewals_per_second);
    round_ = std::max(round_, needed);
  }
  round_ = std::max(round_, std::chrono::milliseconds(1));
}

Heartbeat::~Heartbeat() {
  stop();
}

void Heartbeat::start() {
  if (nodes_.empty() || thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void Heartbeat::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::run() {
  const auto interval =
      std::max(Clock::duration(1), std::chrono::duration_cast<Clock::duration>(round_) /
                                       static_cast<int64_t>(nodes_.size()));
  size_t cursor = 0;
  auto next = Clock::now() + interval;  // the leases were just written
  auto last_wake = Clock::now();
  std::vector<std::string> batch;
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_until(lock, std::max(next, last_wake + kMinTick), [&] { return stopping_; }))
        return;
    }
    const auto now = Clock::now();
    last_wake = now;
    // After a stall (a slow disk) the backlog is dropped, not burst out:
    // the rate limit holds and each lease is renewed a little late.
    if (now - next > round_) next = now;
    batch.clear();
    while (next <= now && batch.size() < nodes_.size()) {
      batch.push_back(nodes_[cursor]);
      cursor = (cursor + 1) % nodes_.size();
      next += interval;
    }
    registrar_.pool.parallel(batch.size(), [&](size_t i) { renew(batch[i]); });
  }
}

void Heartbeat::renew(const std::string& node) {
  json patch = {
      {"spec", {{"holderIdentity", node}, {"renewTime", rfc3339_micro(registrar_.wall())}}}};
  ApiResult r =
      registrar_.client.call("PATCH", lease_path(node), patch, "application/merge-patch+json");
  if (r.ok()) return;
  if (r.code == 404) {
    // Deleted by someone: a kubelet recreates it, for as long as its Node exists.
    controllers::ObjectPtr n = registrar_.nodes.get(node);
    if (!n) return;
    Status s = registrar_.ensure_lease(node, n->at("metadata").value("uid", ""));
    if (s.is_ok()) return;
    VKUBE_LOG(warn, "simulated node: recreating its lease failed", {"node", node},
              {"error", s.to_string()});
    return;
  }
  VKUBE_LOG(warn, "simulated node: lease renewal failed", {"node", node}, {"code", r.code});
}

}  // namespace vkube::nodesim
