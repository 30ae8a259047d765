#include "prefix_revision.h"

#include <vector>

#include "vkube/common/log.h"

namespace vkube::apiserver {

namespace {

void raise_to(std::atomic<storage::Revision>& target, storage::Revision value) {
  storage::Revision cur = target.load();
  while (value > cur && !target.compare_exchange_weak(cur, value)) {
  }
}

}  // namespace

PrefixRevision::PrefixRevision(storage::Backend* backend, std::string prefix, std::string what,
                               std::function<void()> on_write)
    : backend_(backend),
      prefix_(std::move(prefix)),
      what_(std::move(what)),
      on_write_(std::move(on_write)) {
  std::lock_guard lock(mu_);
  subscribe();
}

PrefixRevision::~PrefixRevision() { shutdown(); }

void PrefixRevision::shutdown() {
  std::lock_guard lock(mu_);
  shut_down_ = true;
  watching_ = false;
  if (watch_) {
    watch_->cancel();
    watch_.reset();
  }
}

void PrefixRevision::ensure() {
  if (watching_) return;
  std::lock_guard lock(mu_);
  if (!watching_ && !shut_down_) subscribe();
}

void PrefixRevision::subscribe() {
  if (watch_) {
    watch_->cancel();
    watch_.reset();
  }
  auto w = backend_->watch(prefix_, 0);
  // Whatever changed while no watch was open is at most this old.
  raise_to(newest_, backend_->current_revision());
  if (!w.is_ok()) {
    VKUBE_LOG(warn, "watch failed; the cache is re-read on every request", {"cache", what_},
              {"error", w.status().message()});
    watching_ = false;
    return;
  }
  watching_ = true;
  storage::Watch* raw = w->get();
  raw->set_notifier([this, raw] {
    std::vector<storage::EventPtr> events;
    Status s = raw->poll(&events, std::chrono::milliseconds(0));
    for (const storage::EventPtr& e : events) raise_to(newest_, e->kv.mod_revision);
    if (!events.empty() && on_write_) on_write_();
    if (!s.is_ok()) watching_ = false;
  });
  watch_ = std::move(w).value();
}

}  // namespace vkube::apiserver
