// RocksDbBackend: the durable MVCC Backend (see key_codec.h for the layout).
//
// Writes: each mutation checks its precondition and takes the next revision
// under write_mu_, then joins the current commit group. One thread at a time
// leads: it commits a group as one synced WriteBatch (group commit), publishes
// its events to the watch hub in revision order, then acknowledges every
// member. Only one group is in flight at a time, so the WAL, the "latest"
// column family and the event stream all follow revision order. pending_ lets
// a writer see the not-yet-committed state of a key that an earlier member of
// the group changed.
//
// Who leads: a waiting writer that finds no leader commits its own group,
// with no hand-off when the store is quiet. Writers that queued meanwhile,
// and every create_async (whose caller may be an I/O thread that must not
// sit through a sync), are committed by the committer thread, which leads
// until none is left, so that no writer's caller waits on others' commits.
// The committer thread starts the first time it is needed.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "record.pb.h"
#include "vkube/storage/rocksdb_backend.h"
#include "watch_hub.h"

namespace vkube::storage {

// The open RocksDB instance. Shared with watchers that replay history, which
// may outlive the backend: they take `mu` shared and find `db` null once closed.
struct DbHandle {
  std::shared_mutex mu;
  rocksdb::DB* db = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  rocksdb::ColumnFamilyHandle* latest = nullptr;
  rocksdb::ColumnFamilyHandle* history = nullptr;
  rocksdb::ColumnFamilyHandle* log = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> all;

  // Flushes memtables (so the next open replays no WAL) and closes.
  void close();
};

// The column-family names, in the order DbHandle::all holds them.
const std::vector<std::string>& column_family_names();
rocksdb::Options base_options(const RocksDbOptions& o);
rocksdb::ColumnFamilyOptions family_options(const std::string& name, const RocksDbOptions& o);
// Maps a RocksDB status to ours, naming the store path in the message.
Status from_rocksdb(const rocksdb::Status& s, const std::string& what);

// Rebuilds the events in (after, until] under `prefix` from the event log, at
// most `max`; *next is the revision after the last examined. kExpired when
// compaction removed part of the range, kCancelled once the store closed.
Status read_log(DbHandle& h, const std::string& prefix, Revision after, Revision until, size_t max,
                std::vector<EventPtr>* out, Revision* next);

class RocksDbBackend final : public Backend {
 public:
  RocksDbBackend(RocksDbOptions options, std::shared_ptr<DbHandle> handle, Revision current,
                 Revision compacted);
  ~RocksDbBackend() override;

  Result<KeyValue> create(std::string_view key, std::string_view value) override;
  void create_async(std::string_view key, std::string_view value, Done done) override;
  Result<KeyValue> update(std::string_view key, std::string_view value,
                          Revision expected_mod_revision) override;
  Result<KeyValue> remove(std::string_view key, Revision expected_mod_revision) override;
  Result<KeyValue> get(std::string_view key, Revision revision) override;
  Result<ListResult> list(const ListOptions& options) override;
  Result<int64_t> count(std::string_view prefix) override;
  Result<std::unique_ptr<Watch>> watch(std::string_view prefix, Revision after) override;
  Status compact(Revision revision) override;
  Revision current_revision() const override { return committed_.load(); }
  Revision compacted_revision() const override { return compacted_.load(); }

  // Consistent copy into a new store at out_dir (backup.cpp).
  Result<Revision> backup_to(const std::string& out_dir);

 private:
  enum class Op { kCreate, kUpdate, kDelete };
  struct Waiter;
  struct Pending {
    Revision rev;
    std::optional<pb::Record> record;  // nullopt: deleted
  };

  // A write of the open group: a waiting writer's (waiter set) or an async one's.
  struct Member {
    Waiter* waiter = nullptr;
    Done done;
    KeyValue result;
  };
  // An async member's acknowledgement, run by the leader outside the lock.
  struct Completion {
    Done done;
    Result<KeyValue> result;
  };

  Result<KeyValue> mutate(Op op, std::string_view key, std::string_view value, Revision expected);
  // Checks the precondition, takes the next revision and adds the write to
  // the open group. Caller holds write_mu_. Returns what the writer gets once
  // the group commits.
  Result<KeyValue> stage(Op op, std::string_view key, std::string_view value, Revision expected);
  // Reads the current (possibly pending) state of key. Caller holds write_mu_.
  Result<std::optional<pb::Record>> current_state(const std::string& key);
  // Leads, starting with the open group (see the top of this file): a
  // writer commits one group, the committer until none is left. Called with
  // write_mu_ held via `lock`; returns with it released.
  void lead(std::unique_lock<std::mutex>& lock, bool committer);
  // Commits the open group and wakes its waiting writers; returns its async
  // writers' acknowledgements. Caller holds write_mu_ and leads.
  std::vector<Completion> commit_group(std::unique_lock<std::mutex>& lock);
  void committer_main();
  // Flushes the memtables of an idle store when they hold enough to be worth
  // it; true when a flush was started. Called without write_mu_.
  bool flush_idle_memtables();
  bool flush_running() const;
  // Hands the lead to the committer thread (starting it). Caller holds write_mu_.
  void wake_committer();

  Result<KeyValue> get_at(std::string_view key, Revision revision);
  Status check_revision(Revision revision) const;
  Status compact_history(Revision revision);

  const RocksDbOptions options_;
  std::shared_ptr<DbHandle> h_;
  rocksdb::WriteOptions write_options_;
  WatchHub hub_;

  std::atomic<Revision> committed_;
  std::atomic<Revision> compacted_;
  std::mutex compact_mu_;

  // Commit-group state, all guarded by write_mu_.
  std::mutex write_mu_;
  Revision assigned_ = 0;
  bool leading_ = false;
  std::condition_variable idle_cv_;  // signalled when a group finishes
  Status write_error_;               // set after a failed commit: the store refuses writes
  std::unique_ptr<rocksdb::WriteBatch> batch_;
  std::vector<EventPtr> group_events_;
  std::vector<Member> group_;
  std::thread committer_;
  std::condition_variable committer_cv_;
  bool committer_turn_ = false;  // the committer is handed the lead
  bool committer_stop_ = false;
  uint64_t commits_ = 0;           // groups committed, for the committer's idle check
  bool committer_asleep_ = false;  // waiting for work with nothing to flush
  static constexpr std::chrono::milliseconds kIdleFlushAfter{1000};
  static constexpr std::chrono::milliseconds kIdleTrimPoll{250};
  static constexpr uint64_t kIdleFlushMinBytes = 4u << 20;
  std::unordered_map<std::string, Pending> pending_;
};

}  // namespace vkube::storage
