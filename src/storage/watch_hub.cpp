#include "watch_hub.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace vkube::storage {

namespace {
class HubWatcher;
}  // namespace

struct WatchHub::Core {
  size_t history_limit;
  size_t history_bytes_limit;
  size_t history_bytes = 0;  // key and value bytes held by `recent`
  size_t buffer_limit;
  mutable std::mutex mu;
  Revision last = 0;
  bool closed = false;
  std::deque<EventPtr> recent;               // contiguous revisions, oldest first
  std::unordered_set<HubWatcher*> watchers;  // registered, live or catching up
  // The same watchers by prefix length, then prefix: publish() looks up each
  // event's key cut to each length instead of testing every watcher (a host
  // with a hundred tenants holds many hundreds, each on its own namespace).
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  using Table = std::unordered_map<std::string, std::vector<HubWatcher*>, Hash, std::equal_to<>>;
  std::map<size_t, Table> by_prefix;

  void add(HubWatcher* w, std::string_view prefix) {
    watchers.insert(w);
    by_prefix[prefix.size()][std::string(prefix)].push_back(w);
  }
  void remove(HubWatcher* w, std::string_view prefix) {
    if (watchers.erase(w) == 0) return;
    auto table = by_prefix.find(prefix.size());
    if (table == by_prefix.end()) return;
    auto list = table->second.find(prefix);
    if (list == table->second.end()) return;
    std::erase(list->second, w);
    if (list->second.empty()) table->second.erase(list);
    if (table->second.empty()) by_prefix.erase(table);
  }
};

namespace {

class HubWatcher final : public Watch {
 public:
  HubWatcher(std::shared_ptr<WatchHub::Core> core, std::string prefix, Revision after)
      : core_(std::move(core)), prefix_(std::move(prefix)), after_(after) {}

  ~HubWatcher() override {
    std::lock_guard hub_lock(core_->mu);
    core_->remove(this, prefix_);
  }

  const std::string& prefix() const { return prefix_; }

  bool matches(const Event& e) const {
    return e.kv.mod_revision > after_ && std::string_view(e.kv.key).starts_with(prefix_);
  }

  // Events in (from, until] must be read from durable history first.
  void set_replay(HistoryReader reader, Revision from, Revision until) {
    reader_ = std::move(reader);
    replay_next_ = from;
    replay_until_ = until;
  }

  using Notifier = std::shared_ptr<const std::function<void()>>;

  // Called with the hub lock held. Returns true when the notifier should run,
  // with the notifier in `*notify` if given (null when none is set).
  bool push(const EventPtr& e, size_t limit, Notifier* notify = nullptr) {
    std::lock_guard lock(mu_);
    if (!end_.is_ok()) return false;
    if (notify != nullptr) *notify = notify_;
    if (queue_.size() >= limit) {
      queue_.clear();
      end_ = Status::expired("watcher fell more than " + std::to_string(limit) +
                             " events behind and was ended; re-list and watch again");
    } else {
      queue_.push_back(e);
    }
    cv_.notify_one();
    return true;
  }

  void end(Status why) {
    Notifier notify;
    {
      std::lock_guard lock(mu_);
      if (!end_.is_ok()) return;
      end_ = std::move(why);
      notify = notify_;
      cv_.notify_all();
    }
    if (notify) (*notify)();
  }

  Status poll(std::vector<EventPtr>* out, std::chrono::milliseconds wait) override {
    if (reader_) {
      // Catching up from durable history; live events wait in the queue.
      std::unique_lock lock(mu_);
      if (!end_.is_ok() && queue_.empty()) return end_;
      lock.unlock();
      Revision next = replay_next_;
      Status s = reader_(prefix_, replay_next_, replay_until_, 1000, out, &next);
      if (!s.is_ok()) {
        end(s);
        return s;
      }
      replay_next_ = next;
      if (replay_next_ >= replay_until_) reader_ = nullptr;
      if (!out->empty() || reader_) return Status::ok();
    }
    std::unique_lock lock(mu_);
    if (queue_.empty() && end_.is_ok() && wait.count() > 0) {
      cv_.wait_for(lock, wait, [&] { return !queue_.empty() || !end_.is_ok(); });
    }
    if (!queue_.empty()) {
      out->insert(out->end(), std::make_move_iterator(queue_.begin()),
                  std::make_move_iterator(queue_.end()));
      queue_.clear();
      return Status::ok();
    }
    return end_;
  }

  void set_notifier(std::function<void()> notify) override {
    Notifier fn;
    {
      std::lock_guard lock(mu_);
      notify_ = notify ? std::make_shared<const std::function<void()>>(std::move(notify)) : nullptr;
      if (!queue_.empty() || !end_.is_ok() || reader_ != nullptr) fn = notify_;
    }
    // Events may have arrived before the notifier was set: tell at once.
    if (fn) (*fn)();
  }

  void cancel() override {
    {
      std::lock_guard hub_lock(core_->mu);
      core_->remove(this, prefix_);
    }
    end(Status::cancelled("watch cancelled"));
  }

 private:
  std::shared_ptr<WatchHub::Core> core_;
  const std::string prefix_;
  const Revision after_;

  // Durable-history replay state; touched only by the polling thread.
  HistoryReader reader_;
  Revision replay_next_ = 0;
  Revision replay_until_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EventPtr> queue_;
  Status end_;  // OK while live
  // Shared, so that taking it out of the lock to call it copies a pointer,
  // not the function (publish() calls a thousand of them per event).
  Notifier notify_;
};

}  // namespace

namespace {
size_t event_bytes(const Event& e) {
  size_t n = e.kv.key.size() + e.kv.value.size() + sizeof(Event);
  if (e.prev_kv) n += e.prev_kv->key.size() + e.prev_kv->value.size();
  return n;
}
}  // namespace

WatchHub::WatchHub(size_t history_events, size_t buffer_events, size_t history_bytes)
    : core_(std::make_shared<Core>()) {
  core_->history_limit = history_events;
  core_->history_bytes_limit = history_bytes;
  core_->buffer_limit = std::max<size_t>(buffer_events, 1);
}

WatchHub::~WatchHub() { close(); }

void WatchHub::reset(Revision last_revision) {
  std::lock_guard lock(core_->mu);
  core_->last = last_revision;
  core_->recent.clear();
  core_->history_bytes = 0;
}

void WatchHub::publish(const std::vector<EventPtr>& events) {
  if (events.empty()) return;
  std::lock_guard lock(core_->mu);
  for (const EventPtr& e : events) {
    core_->recent.push_back(e);
    core_->history_bytes += event_bytes(*e);
    // Bounded by count and by bytes: big objects (40-container Deployments
    // with managedFields) must not keep hundreds of MiB resident.
    while (core_->recent.size() > 1 && (core_->recent.size() > core_->history_limit ||
                                        core_->history_bytes > core_->history_bytes_limit)) {
      core_->history_bytes -= event_bytes(*core_->recent.front());
      core_->recent.pop_front();
    }
  }
  core_->last = events.back()->kv.mod_revision;
  // Every watcher holds the events before any notifier runs: a notifier
  // that reads another watch (the watch cache catching up) finds them there.
  // Events in order, so each watcher's queue stays in revision order.
  // A watcher is listed under its one prefix, so one event reaches it at
  // most once; it is told once per publish, however many events it got.
  std::vector<std::pair<HubWatcher*, HubWatcher::Notifier>> touched;
  for (const EventPtr& e : events) {
    std::string_view key = e->kv.key;
    for (const auto& [length, table] : core_->by_prefix) {
      if (length > key.size()) break;
      auto found = table.find(key.substr(0, length));
      if (found == table.end()) continue;
      HubWatcher::Notifier notify;
      for (HubWatcher* w : found->second) {
        if (w->matches(*e) && w->push(e, core_->buffer_limit, &notify) && notify)
          touched.emplace_back(w, std::move(notify));
      }
    }
  }
  if (events.size() > 1) {
    std::sort(touched.begin(), touched.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    touched.erase(std::unique(touched.begin(), touched.end(),
                              [](const auto& a, const auto& b) { return a.first == b.first; }),
                  touched.end());
  }
  for (const auto& [w, notify] : touched) (*notify)();
}

std::unique_ptr<Watch> WatchHub::subscribe(std::string prefix, Revision after,
                                           HistoryReader reader) {
  std::lock_guard lock(core_->mu);
  if (after == 0) after = core_->last;
  auto w = std::make_unique<HubWatcher>(core_, std::move(prefix), after);
  if (core_->closed) {
    w->end(Status::cancelled("store is closed"));
    return w;
  }
  if (after < core_->last) {
    Revision oldest = core_->recent.empty() ? core_->last + 1 : core_->recent.front()->kv.mod_revision;
    if (after + 1 >= oldest) {
      for (const EventPtr& e : core_->recent)
        if (w->matches(*e)) w->push(e, core_->buffer_limit);
    } else {
      w->set_replay(std::move(reader), after, core_->last);
    }
  }
  core_->add(w.get(), w->prefix());
  return w;
}

void WatchHub::close() {
  std::unordered_set<HubWatcher*> watchers;
  {
    std::lock_guard lock(core_->mu);
    core_->closed = true;
    watchers.swap(core_->watchers);
    core_->by_prefix.clear();
    // Held while ending them: a watcher's destructor takes this lock, so
    // none is freed under us. Notifiers are quick by contract (as in publish).
    for (HubWatcher* w : watchers) w->end(Status::cancelled("store is closed"));
  }
}

size_t WatchHub::watcher_count() const {
  std::lock_guard lock(core_->mu);
  return core_->watchers.size();
}

}  // namespace vkube::storage
