// The write path: preconditions, revision assignment and group commit.
#include "key_codec.h"
#include "rocksdb_backend.h"
#include "vkube/common/log.h"
#include "vkube/common/memory.h"

namespace vkube::storage {

struct RocksDbBackend::Waiter {
  std::condition_variable cv;
  bool done = false;
  Status status;
};

namespace {

Status validate(std::string_view key, std::string_view value) {
  if (key.empty()) return Status::invalid("key must not be empty");
  if (key.find('\0') != std::string_view::npos)
    return Status::invalid("key must not contain NUL bytes");
  if (value.size() > kMaxValueBytes)
    return Status::too_large("value of " + std::to_string(value.size()) +
                             " bytes exceeds the limit of " + std::to_string(kMaxValueBytes) +
                             " bytes");
  return Status::ok();
}

KeyValue to_kv(std::string_view key, const pb::Record& r) {
  return KeyValue{std::string(key), r.value(), r.create_revision(), r.mod_revision(), r.version()};
}

}  // namespace

Result<KeyValue> RocksDbBackend::create(std::string_view key, std::string_view value) {
  return mutate(Op::kCreate, key, value, 0);
}

Result<KeyValue> RocksDbBackend::update(std::string_view key, std::string_view value,
                                        Revision expected) {
  return mutate(Op::kUpdate, key, value, expected);
}

Result<KeyValue> RocksDbBackend::remove(std::string_view key, Revision expected) {
  return mutate(Op::kDelete, key, {}, expected);
}

Result<std::optional<pb::Record>> RocksDbBackend::current_state(const std::string& key) {
  if (auto it = pending_.find(key); it != pending_.end()) return it->second.record;
  std::string raw;
  rocksdb::Status s = h_->db->Get(rocksdb::ReadOptions(), h_->latest, key, &raw);
  if (s.IsNotFound()) return std::optional<pb::Record>();
  if (!s.ok()) return from_rocksdb(s, "reading " + key);
  pb::Record r;
  if (!r.ParseFromString(raw)) return Status::corruption("stored record of " + key + " is damaged");
  return std::optional<pb::Record>(std::move(r));
}

Result<KeyValue> RocksDbBackend::stage(Op op, std::string_view key_view, std::string_view value,
                                       Revision expected) {
  if (!write_error_.is_ok()) return write_error_;
  std::string key(key_view);
  auto cur = current_state(key);
  if (!cur.is_ok()) return cur.status();
  const std::optional<pb::Record>& prev = *cur;

  if (op == Op::kCreate && prev) return Status::already_exists("key " + key + " already exists");
  if (op != Op::kCreate) {
    if (!prev) return Status::not_found("key " + key + " not found");
    if (expected != 0 && prev->mod_revision() != expected)
      return Status::conflict("key " + key + " was modified at revision " +
                              std::to_string(prev->mod_revision()) + ", expected revision " +
                              std::to_string(expected));
  }

  const Revision rev = ++assigned_;
  auto event = std::make_shared<Event>();
  pb::LogEntry entry;
  entry.set_key(key);
  entry.set_prev_mod_revision(prev ? prev->mod_revision() : 0);
  if (prev) event->prev_kv = to_kv(key, *prev);

  KeyValue result;
  std::optional<pb::Record> next;
  if (op == Op::kDelete) {
    pb::Record tombstone;
    tombstone.set_mod_revision(rev);
    tombstone.set_deleted(true);
    entry.set_deleted(true);
    batch_->Delete(h_->latest, key);
    batch_->Put(h_->history, codec::history_key(key, rev), tombstone.SerializeAsString());
    event->type = EventType::kDelete;
    event->kv = KeyValue{key, {}, 0, rev, 0};
    result = to_kv(key, *prev);
    result.mod_revision = rev;
  } else {
    pb::Record r;
    r.set_value(value.data(), value.size());
    r.set_create_revision(prev ? prev->create_revision() : rev);
    r.set_mod_revision(rev);
    r.set_version(prev ? prev->version() + 1 : 1);
    std::string encoded = r.SerializeAsString();
    batch_->Put(h_->latest, key, encoded);
    batch_->Put(h_->history, codec::history_key(key, rev), encoded);
    event->type = EventType::kPut;
    event->kv = to_kv(key, r);
    result = event->kv;
    next = std::move(r);
  }
  batch_->Put(h_->log, codec::be64(rev), entry.SerializeAsString());
  pending_[key] = Pending{rev, std::move(next)};
  group_events_.push_back(std::move(event));
  return result;
}

Result<KeyValue> RocksDbBackend::mutate(Op op, std::string_view key, std::string_view value,
                                        Revision expected) {
  VKUBE_RETURN_IF_ERROR(validate(key, value));
  std::unique_lock lock(write_mu_);
  auto staged = stage(op, key, value, expected);
  if (!staged.is_ok()) return staged.status();
  Waiter self;
  group_.push_back(Member{&self, nullptr, {}});
  if (leading_) {
    self.cv.wait(lock, [&] { return self.done; });
  } else {
    leading_ = true;
    lead(lock, false);
  }
  if (!self.status.is_ok()) return self.status;
  return staged;
}

void RocksDbBackend::create_async(std::string_view key, std::string_view value, Done done) {
  if (Status s = validate(key, value); !s.is_ok()) return done(s);
  std::unique_lock lock(write_mu_);
  auto staged = stage(Op::kCreate, key, value, 0);
  if (!staged.is_ok()) {
    lock.unlock();
    return done(staged.status());
  }
  group_.push_back(Member{nullptr, std::move(done), std::move(staged).value()});
  if (leading_) return;  // the leader commits it
  // The committer thread leads: the caller may be an I/O thread, which must
  // not sit through a sync.
  leading_ = true;
  wake_committer();
}

void RocksDbBackend::wake_committer() {
  if (!committer_.joinable()) committer_ = std::thread([this] { committer_main(); });
  committer_turn_ = true;
  committer_cv_.notify_one();
}

void RocksDbBackend::lead(std::unique_lock<std::mutex>& lock, bool committer) {
  for (;;) {
    std::vector<Completion> completions = commit_group(lock);
    const bool more = !group_.empty();
    if (!more) {
      leading_ = false;
      idle_cv_.notify_all();
    } else if (!committer) {
      // Writers queued while we were committing: the committer thread
      // commits them, so that this writer's caller is not held up.
      wake_committer();
    }
    lock.unlock();
    for (Completion& c : completions) c.done(std::move(c.result));
    if (!more || !committer) return;
    lock.lock();
  }
}

std::vector<RocksDbBackend::Completion> RocksDbBackend::commit_group(
    std::unique_lock<std::mutex>& lock) {
  auto batch = std::exchange(batch_, std::make_unique<rocksdb::WriteBatch>());
  auto events = std::exchange(group_events_, {});
  auto members = std::exchange(group_, {});
  const Revision last = events.back()->kv.mod_revision;

  Status status = write_error_;
  if (status.is_ok()) {
    batch->Put(h_->meta, codec::kMetaRevision, codec::be64(last));
    lock.unlock();
    rocksdb::Status s = h_->db->Write(write_options_, batch.get());
    status = from_rocksdb(s, "committing revision " + std::to_string(last));
    // Watchers hear of the group only now that it is durable, and in order:
    // no other group commits until this leader is done.
    if (status.is_ok()) {
      committed_.store(last);
      hub_.publish(events);
    }
    lock.lock();
    ++commits_;
    // The committer's idle flush (committer_main) needs it awake after
    // commits that writers led themselves (and started, the first time).
    if (!committer_.joinable())
      committer_ = std::thread([this] { committer_main(); });
    else if (committer_asleep_)
      committer_cv_.notify_one();
  }

  for (const EventPtr& e : events) {
    auto it = pending_.find(e->kv.key);
    if (it != pending_.end() && it->second.rev <= last) pending_.erase(it);
  }
  if (!status.is_ok() && write_error_.is_ok()) {
    // A failed synced write leaves the store's durable state unknown beyond
    // `committed_`; refuse further writes rather than guess.
    VKUBE_LOG(error, "commit failed; the store refuses writes until reopened",
              {"error", status.message()});
    write_error_ = status;
  }
  std::vector<Completion> completions;
  for (Member& m : members) {
    if (m.waiter != nullptr) {
      m.waiter->status = status;
      m.waiter->done = true;
      m.waiter->cv.notify_one();
    } else if (status.is_ok()) {
      completions.push_back(Completion{std::move(m.done), std::move(m.result)});
    } else {
      completions.push_back(Completion{std::move(m.done), status});
    }
  }
  return completions;
}

// The committer also gives memory back once writes stop: memtables hold
// every recent write (twice: latest state and history) until flushed, so
// after kIdleFlushAfter without a commit it flushes them, and once the
// flush is done trims the heap, where the memtables' blocks were.
void RocksDbBackend::committer_main() {
  std::unique_lock lock(write_mu_);
  uint64_t flushed = 0;  // commits_ when memtables were last flushed (or found small)
  bool trim_due = false;
  for (;;) {
    const uint64_t seen = commits_;
    auto ready = [&] { return committer_turn_ || committer_stop_; };
    if (seen != flushed) {
      committer_cv_.wait_for(lock, kIdleFlushAfter, ready);
    } else if (trim_due) {
      committer_cv_.wait_for(lock, kIdleTrimPoll, ready);
    } else {
      // Clean: asleep until handed the lead or a writer's own commit.
      committer_asleep_ = true;
      committer_cv_.wait(lock, [&] { return ready() || commits_ != flushed; });
      committer_asleep_ = false;
    }
    if (committer_turn_) {
      committer_turn_ = false;
      lead(lock, true);
      lock.lock();
      continue;
    }
    if (committer_stop_) return;
    if (commits_ != seen) continue;  // writers led commits meanwhile: not idle
    lock.unlock();
    if (seen != flushed) {
      trim_due = flush_idle_memtables();
    } else if (trim_due && !flush_running()) {
      trim_due = false;
      trim_heap();
    }
    lock.lock();
    flushed = seen;
  }
}

bool RocksDbBackend::flush_idle_memtables() {
  uint64_t bytes = 0;
  // A few writes are not worth a file of their own: they wait for the next.
  if (!h_->db->GetAggregatedIntProperty(rocksdb::DB::Properties::kCurSizeAllMemTables, &bytes) ||
      bytes < kIdleFlushMinBytes)
    return false;
  rocksdb::FlushOptions fo;
  fo.wait = false;  // the committer stays free to lead the next group
  fo.allow_write_stall = true;
  rocksdb::Status s = h_->db->Flush(fo, h_->all);
  if (!s.ok()) {
    VKUBE_LOG(debug, "idle memtable flush failed", {"error", s.ToString()});
    return false;
  }
  return true;
}

bool RocksDbBackend::flush_running() const {
  uint64_t running = 0, pending = 0;
  h_->db->GetAggregatedIntProperty(rocksdb::DB::Properties::kNumRunningFlushes, &running);
  h_->db->GetAggregatedIntProperty(rocksdb::DB::Properties::kMemTableFlushPending, &pending);
  return running + pending > 0;
}

}  // namespace vkube::storage
