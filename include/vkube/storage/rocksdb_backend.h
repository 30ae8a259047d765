// The durable Backend on embedded RocksDB, and the backup/restore commands.
// Only main() and tests name this header; everything else sees Backend.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "vkube/storage/backend.h"

namespace vkube::storage {

struct RocksDbOptions {
  std::string path;  // data directory; created when missing
  bool create_if_missing = true;
  // Durable by default: a write is acknowledged once its WAL record is synced.
  // Concurrent writers share one sync (group commit).
  bool sync = true;
  // Events a watcher may have undelivered before it is ended with kExpired.
  size_t watch_buffer_events = 10000;
  // Recent events kept in memory so that watches from a recent revision
  // start without reading the event log.
  // (A watch from further back replays the event log, so this bounds only
  // memory: about 1.5 times these bytes are resident.)
  size_t watch_history_events = 4096;
  // ... and at most this many bytes of them (older ones are read from the log).
  size_t watch_history_bytes = 4u << 20;
  // Shared by every store of the process, sized by the first one opened.
  size_t block_cache_bytes = 32u << 20;
  // Unflushed writes (memtables) of the store's column families together;
  // past it the largest memtable is flushed.
  size_t memtable_budget_bytes = 32u << 20;
};

// Opens (or creates) a store. Errors: kUnavailable when another process holds
// the store open, kCorruption when files are damaged, kInvalid when the
// directory holds something other than a vkube store.
Result<std::unique_ptr<Backend>> open_rocksdb(const RocksDbOptions& options);

// Writes a consistent copy of the store at `data_dir` into `out_dir` (which
// must not exist). Works while another process has the store open and is
// writing to it: the copy is as of one revision. Returns that revision.
Result<Revision> backup_store(const std::string& data_dir, const std::string& out_dir);

// Same, from a store open in this process (online: writers continue).
Result<Revision> backup_backend(Backend& backend, const std::string& out_dir);

// Restores a backup made by backup_store into `data_dir`, which must not
// exist or be empty. Verifies the backup opens before and after copying.
// Returns the restored store's revision.
Result<Revision> restore_store(const std::string& backup_dir, const std::string& data_dir);

}  // namespace vkube::storage
