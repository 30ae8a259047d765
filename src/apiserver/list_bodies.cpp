#include "list_bodies.h"

#include <optional>

namespace vkube::apiserver {

// One answer being built; its waiters sleep on `done`.
struct ListBodies::Build::Slot {
  std::mutex mu;
  std::condition_variable done;
  std::optional<ListBody> answer;  // guarded by mu
};

ListBodies::Claim ListBodies::claim(const std::string& key, storage::Revision arrived) {
  std::shared_ptr<Build::Slot> slot;
  {
    std::lock_guard lock(mu_);
    if (entries_.size() > 256) {
      // Forget requests whose answers nobody holds any more.
      std::erase_if(entries_,
                    [](const auto& e) { return !e.second.building && e.second.body.expired(); });
    }
    Entry& e = entries_[key];
    if (auto body = e.body.lock(); body && e.revision >= arrived)
      return Claim{ListBody{std::move(body), e.headers, e.revision}, nullptr};
    if (!e.building) {
      e.building = std::make_shared<Build::Slot>();
      return Claim{{}, std::unique_ptr<Build>(new Build(*this, key, e.building))};
    }
    slot = e.building;
  }
  std::unique_lock lock(slot->mu);
  slot->done.wait(lock, [&] { return slot->answer.has_value(); });
  if (slot->answer->body && slot->answer->revision >= arrived) return Claim{*slot->answer, nullptr};
  return Claim{};
}

size_t ListBodies::size() {
  std::lock_guard lock(mu_);
  return entries_.size();
}

ListBodies::Build::Build(ListBodies& owner, std::string key, std::shared_ptr<Slot> slot)
    : owner_(owner), key_(std::move(key)), slot_(std::move(slot)) {}

ListBodies::Build::~Build() {
  if (!finished_) finish({});
}

void ListBodies::Build::publish(ListBody answer) {
  finish(std::move(answer));
}

void ListBodies::Build::finish(ListBody answer) {
  finished_ = true;
  {
    std::lock_guard lock(owner_.mu_);
    auto it = owner_.entries_.find(key_);
    if (it != owner_.entries_.end() && it->second.building == slot_) {
      it->second.building.reset();
      if (answer.body) {
        it->second.body = answer.body;
        it->second.headers = answer.headers;
        it->second.revision = answer.revision;
      }
    }
  }
  {
    std::lock_guard lock(slot_->mu);
    slot_->answer = std::move(answer);
  }
  slot_->done.notify_all();
}

}  // namespace vkube::apiserver
