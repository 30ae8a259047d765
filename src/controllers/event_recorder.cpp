#include "vkube/controllers/event_recorder.h"

#include <cstdio>

#include "util.h"
#include "vkube/controllers/local_client.h"

namespace vkube::controllers {

namespace {
constexpr double kBurst = 25;
constexpr double kRefillSeconds = 300;
constexpr size_t kMaxRemembered = 4096;
}  // namespace

EventRecorder::EventRecorder(LocalClient& client,
                             std::function<std::chrono::system_clock::time_point()> now)
    : client_(client), now_(std::move(now)) {
  if (!now_) now_ = [] { return std::chrono::system_clock::now(); };
}

EventRecorder::~EventRecorder() { stop(); }

void EventRecorder::record(const json& object, const std::string& component,
                           const std::string& type, const std::string& reason,
                           const std::string& message) {
  Pending p;
  p.involved = {{"kind", object.value("kind", "")},
                {"name", meta(object, "name")},
                {"uid", meta(object, "uid")},
                {"apiVersion", object.value("apiVersion", "")},
                {"resourceVersion", meta(object, "resourceVersion")}};
  p.ns = meta(object, "namespace");
  if (!p.ns.empty()) p.involved["namespace"] = p.ns;
  p.component = component;
  p.type = type;
  p.reason = reason;
  p.message = message;
  std::lock_guard lock(mu_);
  if (stopping_) return;
  // The spam filter: a burst per object (and source), then one per 5 min.
  auto now = std::chrono::steady_clock::now();
  auto [it, fresh] = buckets_.try_emplace(component + "/" + meta(object, "uid"));
  Bucket& b = it->second;
  if (fresh) b.at = now;
  b.tokens = std::min(kBurst, b.tokens + std::chrono::duration<double>(now - b.at).count() /
                                             kRefillSeconds);
  b.at = now;
  if (b.tokens < 1) return;
  b.tokens -= 1;
  if (buckets_.size() > kMaxRemembered) buckets_.clear();
  pending_.push_back(std::move(p));
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  cv_.notify_all();
}

void EventRecorder::flush() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return (pending_.empty() && writing_ == 0) || stopping_; });
}

void EventRecorder::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void EventRecorder::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (stopping_) return;
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    ++writing_;
    lock.unlock();
    write(p);
    lock.lock();
    --writing_;
    cv_.notify_all();
  }
}

void EventRecorder::write(const Pending& p) {
  const std::string ns = p.ns.empty() ? "default" : p.ns;
  const std::string now = rfc3339(now_());
  const std::string seen_key =
      p.component + "\x1f" + p.involved.value("uid", "") + "\x1f" + p.type + "\x1f" + p.reason +
      "\x1f" + p.message;
  Seen prior;
  {
    std::lock_guard lock(mu_);
    if (auto it = seen_.find(seen_key); it != seen_.end()) prior = it->second;
  }
  if (!prior.name.empty()) {
    // The same event again: counted on the one Event, as kube aggregates.
    json patch = {{"count", prior.count + 1}, {"lastTimestamp", now}};
    ApiResult r = client_.call("PATCH", "/api/v1/namespaces/" + ns + "/events/" + prior.name,
                               patch, "application/merge-patch+json");
    if (r.ok()) {
      std::lock_guard lock(mu_);
      seen_[seen_key].count = prior.count + 1;
      return;
    }
  }
  char suffix[32];
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(nanos));
  std::string name = p.involved.value("name", "") + suffix;
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"involvedObject", p.involved},
                {"reason", p.reason},
                {"message", p.message},
                {"source", {{"component", p.component}}},
                {"firstTimestamp", now},
                {"lastTimestamp", now},
                {"count", 1},
                {"type", p.type},
                {"reportingComponent", p.component},
                {"reportingInstance", ""}};
  ApiResult r = client_.call("POST", "/api/v1/namespaces/" + ns + "/events", event);
  if (!r.ok()) return;  // events are best effort, as in kube
  std::lock_guard lock(mu_);
  if (seen_.size() > kMaxRemembered) seen_.clear();
  seen_[seen_key] = Seen{name, 1};
}

}  // namespace vkube::controllers
