#include "vkube/storage/watch_cache.h"

#include <charconv>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "key_codec.h"

namespace vkube::storage {

namespace {

class WatchCache;

// A watch on the inner store whose events are never ahead of the cache's
// reads: a client told about a write can read it back.
class CaughtUpWatch final : public Watch {
 public:
  CaughtUpWatch(std::unique_ptr<Watch> inner, WatchCache& cache)
      : inner_(std::move(inner)), cache_(cache) {}
  Status poll(std::vector<EventPtr>* out, std::chrono::milliseconds wait) override;
  void set_notifier(std::function<void()> notify) override {
    inner_->set_notifier(std::move(notify));
  }
  void cancel() override { inner_->cancel(); }

 private:
  std::unique_ptr<Watch> inner_;
  WatchCache& cache_;
};

class WatchCache final : public Backend {
 public:
  explicit WatchCache(Backend& inner) : inner_(inner) {}

  ~WatchCache() override {
    if (watch_) watch_->cancel();
  }

  Status init() {
    ListOptions all;
    auto listed = inner_.list(all);
    if (!listed.is_ok()) return listed.status();
    {
      std::unique_lock lock(mu_);
      for (auto& kv : listed->items) put(std::make_shared<const KeyValue>(std::move(kv)));
      rev_ = listed->revision;
    }
    auto w = inner_.watch("", listed->revision);
    if (!w.is_ok()) return w.status();
    watch_ = std::move(w).value();
    // Runs on the committing writer's thread before it is acknowledged.
    watch_->set_notifier([this] { apply_pending(); });
    apply_pending();
    return Status::ok();
  }

  Result<KeyValue> create(std::string_view key, std::string_view value) override {
    return inner_.create(key, value);
  }
  void create_async(std::string_view key, std::string_view value, Done done) override {
    inner_.create_async(key, value, std::move(done));
  }
  Result<KeyValue> update(std::string_view key, std::string_view value,
                          Revision expected) override {
    return inner_.update(key, value, expected);
  }
  Result<KeyValue> remove(std::string_view key, Revision expected) override {
    return inner_.remove(key, expected);
  }

  Result<KeyValue> get(std::string_view key, Revision revision) override {
    if (revision != 0) return inner_.get(key, revision);
    std::shared_lock lock(mu_);
    VKUBE_RETURN_IF_ERROR(failed_);
    auto it = items_.find(key);
    if (it == items_.end()) return Status::not_found("key " + std::string(key) + " not found");
    return *it->second;
  }

  Result<ListResult> list(const ListOptions& o) override {
    ListResult out;
    bool from_cache = false;
    Status s = scan(o, &out.revision, &out.continue_token, &from_cache, [&](const KeyValuePtr& kv) {
      out.items.push_back(*kv);
      if (o.keys_only) out.items.back().value.clear();
    });
    if (!s.is_ok()) return s;
    if (!from_cache) return inner_.list(o);
    return out;
  }

  // The items are the cache's own, shared: under the lock only pointers are
  // copied, so concurrent LISTs of thousands of objects neither hold the
  // lock long nor copy every value (a copy each was most of their memory
  // traffic).
  Result<SharedListResult> list_shared(const ListOptions& o) override {
    if (o.keys_only) return Backend::list_shared(o);
    SharedListResult out;
    bool from_cache = false;
    Status s = scan(o, &out.revision, &out.continue_token, &from_cache,
                    [&](const KeyValuePtr& kv) { out.items.push_back(kv); });
    if (!s.is_ok()) return s;
    if (!from_cache) return inner_.list_shared(o);
    return out;
  }

  Result<int64_t> count(std::string_view prefix) override {
    std::shared_lock lock(mu_);
    VKUBE_RETURN_IF_ERROR(failed_);
    int64_t n = 0;
    for (auto it = items_.lower_bound(prefix); it != items_.end() && it->first.starts_with(prefix);
         ++it)
      ++n;
    return n;
  }

  Result<std::unique_ptr<Watch>> watch(std::string_view prefix, Revision after) override {
    auto w = inner_.watch(prefix, after);
    if (!w.is_ok()) return w.status();
    return std::unique_ptr<Watch>(std::make_unique<CaughtUpWatch>(std::move(w).value(), *this));
  }

  // Makes the cache hold at least `revision`: another watcher may be told
  // about a commit before the hub has handed it to the cache's own watch, so
  // wait for it (briefly: the commit is done, only its delivery is pending).
  void catch_up(Revision revision) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (int attempt = 0;; ++attempt) {
      {
        std::shared_lock lock(mu_);
        if (rev_ >= revision || !failed_.is_ok()) return;
      }
      if (std::chrono::steady_clock::now() > deadline) return;
      apply_pending(attempt == 0 ? std::chrono::milliseconds(0) : std::chrono::milliseconds(1));
    }
  }
  Status compact(Revision revision) override { return inner_.compact(revision); }
  Revision current_revision() const override { return inner_.current_revision(); }
  Revision compacted_revision() const override { return inner_.compacted_revision(); }

 private:
  // Hands `take` the items list(o) answers, with the revision and continue
  // token; *from_cache false when the cache cannot answer (a past revision):
  // the caller asks the inner store.
  template <typename Take>
  Status scan(const ListOptions& o, Revision* revision, std::string* continue_token,
              bool* from_cache, Take take) {
    std::string start = o.prefix;
    Revision rev = o.revision;
    if (!o.continue_token.empty()) {
      // "<revision>:<next key>", the format every backend shares.
      auto colon = o.continue_token.find(':');
      if (colon == std::string::npos) return Status::ok();
      std::from_chars(o.continue_token.data(), o.continue_token.data() + colon, rev);
      start = o.continue_token.substr(colon + 1);
    }
    std::shared_lock lock(mu_);
    VKUBE_RETURN_IF_ERROR(failed_);
    // Only the latest state is in memory; older pages come from storage.
    if (rev != 0 && rev != rev_) return Status::ok();
    if (!o.continue_token.empty() && !start.starts_with(o.prefix))
      return Status::bad_request("continue token does not belong to this list");
    *from_cache = true;
    *revision = rev_;
    const size_t limit = o.limit > 0 ? static_cast<size_t>(o.limit) : SIZE_MAX;
    size_t taken = 0;
    for (auto it = items_.lower_bound(start); it != items_.end(); ++it) {
      if (!it->first.starts_with(o.prefix)) break;
      if (taken == limit) {
        *continue_token = std::to_string(rev_) + ":" + std::string(it->first);
        break;
      }
      take(it->second);
      ++taken;
    }
    return Status::ok();
  }

  // Inserts or replaces an item; the node's key is re-pointed at the new
  // item's key before the old item can go.
  void put(KeyValuePtr kv) {
    auto it = items_.find(std::string_view(kv->key));
    if (it == items_.end()) {
      std::string_view key = kv->key;
      items_.emplace(key, std::move(kv));
      return;
    }
    auto node = items_.extract(it);
    node.key() = kv->key;
    node.mapped() = std::move(kv);
    items_.insert(std::move(node));
  }

  void apply_pending(std::chrono::milliseconds wait = std::chrono::milliseconds(0)) {
    // One applier at a time, so events are applied in revision order.
    std::lock_guard apply(apply_mu_);
    std::vector<EventPtr> events;
    Status s = watch_->poll(&events, wait);
    // The cache's copies are made before readers are locked out.
    std::vector<KeyValuePtr> puts;
    for (const EventPtr& e : events)
      puts.push_back(e->type == EventType::kPut ? std::make_shared<const KeyValue>(e->kv)
                                                : nullptr);
    std::unique_lock lock(mu_);
    for (size_t i = 0; i < events.size(); ++i) {
      if (puts[i])
        put(std::move(puts[i]));
      else
        items_.erase(std::string_view(events[i]->kv.key));
      rev_ = events[i]->kv.mod_revision;
    }
    // Cancelled means the store is closing; anything else (a bug, since the
    // notifier never lets the buffer fill) makes reads fail loudly.
    if (!s.is_ok() && s.code() != Code::kCancelled)
      failed_ = Status::unavailable("watch cache lost its watch: " + s.message());
  }

  Backend& inner_;
  std::unique_ptr<Watch> watch_;
  std::mutex apply_mu_;
  mutable std::shared_mutex mu_;
  // Keyed by a view of each item's own key: a key is held once, not twice
  // (a tenth of the cache, for ConfigMaps of a few hundred bytes).
  std::map<std::string_view, KeyValuePtr, std::less<>> items_;
  Revision rev_ = 0;
  Status failed_;
};

Status CaughtUpWatch::poll(std::vector<EventPtr>* out, std::chrono::milliseconds wait) {
  size_t before = out->size();
  Status s = inner_->poll(out, wait);
  if (out->size() > before) cache_.catch_up(out->back()->kv.mod_revision);
  return s;
}

}  // namespace

Result<std::unique_ptr<Backend>> make_watch_cache(Backend& inner) {
  auto cache = std::make_unique<WatchCache>(inner);
  VKUBE_RETURN_IF_ERROR(cache->init());
  return std::unique_ptr<Backend>(std::move(cache));
}

}  // namespace vkube::storage
