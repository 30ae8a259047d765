// Opening and closing the RocksDB store, and its tuning.
#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "key_codec.h"
#include "rocksdb_backend.h"
#include "vkube/common/log.h"

namespace vkube::storage {

namespace fs = std::filesystem;

const std::vector<std::string>& column_family_names() {
  static const std::vector<std::string> kNames = {rocksdb::kDefaultColumnFamilyName, "latest",
                                                  "history", "log"};
  return kNames;
}

namespace {

// RocksDB's log goes to vkube's (debug level), warnings and errors only. Its own LOG file
// writes a header and every column family's options dump at each open
// whatever the level: a sixth of a new store's creation, in formatting.
class WarningLogger final : public rocksdb::Logger {
 public:
  WarningLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* /*format*/, va_list /*ap*/) override {}
  void LogHeader(const char* /*format*/, va_list /*ap*/) override {}
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < rocksdb::InfoLogLevel::WARN_LEVEL || level == rocksdb::InfoLogLevel::HEADER_LEVEL)
      return;
    char buf[1024];
    int n = vsnprintf(buf, sizeof buf, format, ap);
    if (n < 0) return;
    // What RocksDB reports as a warning or error also reaches its caller
    // as a Status (a lock held, a backup directory not there yet), which
    // says it in context; its own line is for debugging.
    if (level >= rocksdb::InfoLogLevel::FATAL_LEVEL)
      VKUBE_LOG(error, "rocksdb", {"message", buf});
    else
      VKUBE_LOG(debug, "rocksdb", {"message", buf});
  }
};

}  // namespace

rocksdb::Options base_options(const RocksDbOptions& o) {
  rocksdb::Options opts;
  opts.create_if_missing = o.create_if_missing;
  opts.create_missing_column_families = o.create_if_missing;
  opts.max_background_jobs = 2;
  opts.bytes_per_sync = 1 << 20;
  // Bound the WAL a crash leaves to replay, so a restart stays fast.
  opts.max_total_wal_size = 64u << 20;
  opts.keep_log_file_num = 3;
  opts.max_log_file_size = 4u << 20;
  opts.skip_stats_update_on_db_open = true;
  opts.skip_checking_sst_file_sizes_on_db_open = true;
  opts.avoid_unnecessary_blocking_io = true;
  // A tenant's store is small, and hundreds open on one machine: one thread
  // opens its few files, and no timer thread dumps or persists statistics.
  opts.max_file_opening_threads = 1;
  opts.stats_dump_period_sec = 0;
  opts.stats_persist_period_sec = 0;
  // A restart replays the WAL into the memtable and goes on; flushing it
  // first would add file writes and syncs to every start.
  opts.avoid_flush_during_recovery = true;
  // RocksDB's own LOG: warnings only, into vkube's log (the options dump at
  // every open is hundreds of lines formatted on the start path).
  opts.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  static const auto logger = std::make_shared<WarningLogger>();
  opts.info_log = logger;
  // One memtable budget for the store's families together: past it, the
  // largest memtable is flushed. Without it a store could hold
  // 2 x (8 + 8 + 2 + 2) MiB unflushed. Per store, not per process: a host
  // holds hundreds of stores, each with at least one arena block per
  // memtable, and a shared budget would have them flush tiny memtables on
  // every write.
  opts.write_buffer_manager =
      std::make_shared<rocksdb::WriteBufferManager>(o.memtable_budget_bytes);
  return opts;
}

rocksdb::ColumnFamilyOptions family_options(const std::string& name, const RocksDbOptions& o) {
  // One block cache per process (all tenants of a process share it), sized
  // by the first store opened; 16 shards keep each shard large enough.
  static std::shared_ptr<rocksdb::Cache> cache;
  static std::once_flag once;
  std::call_once(once, [&] { cache = rocksdb::NewLRUCache(o.block_cache_bytes, 4); });

  rocksdb::ColumnFamilyOptions cf;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  // Index and filter blocks stay in the table readers rather than competing
  // with data blocks for the cache: with them in the cache, a large SST's
  // index did not fit a cache shard and every get re-read it.
  table.cache_index_and_filter_blocks = false;
  table.format_version = 5;
  // Each write lands twice, in "latest" and "history" (about 1 KB of
  // memtable per ConfigMap created): their buffers are 8 MiB, not 16, so
  // that a burst of creates leaves less unflushed (the process-wide budget
  // in base_options() bounds the sum, and an idle store flushes: committer_main).
  if (name == "latest" || name == "history") {
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    cf.write_buffer_size = 8u << 20;
    cf.target_file_size_base = 16u << 20;
  } else {
    cf.write_buffer_size = 2u << 20;
  }
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  cf.compression = rocksdb::kNoCompression;
  cf.level_compaction_dynamic_level_bytes = true;
  return cf;
}

Status from_rocksdb(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::ok();
  std::string msg = what + ": " + s.ToString();
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos)
    return Status::unavailable(what + ": the store is in use by another process (" + s.ToString() +
                               ")");
  if (s.IsCorruption()) return Status::corruption(msg);
  if (s.IsInvalidArgument() || s.IsNotSupported()) return Status::invalid(msg);
  if (s.IsNoSpace()) return Status::unavailable(msg);
  return Status::internal(msg);
}

void DbHandle::close() {
  std::unique_lock lock(mu);
  if (db == nullptr) return;
  rocksdb::FlushOptions fo;
  fo.wait = true;
  rocksdb::Status s = db->Flush(fo, all);
  if (!s.ok()) VKUBE_LOG(warn, "flush on close failed", {"error", s.ToString()});
  for (auto* cf : all) db->DestroyColumnFamilyHandle(cf);
  all.clear();
  s = db->Close();
  if (!s.ok()) VKUBE_LOG(warn, "close failed", {"error", s.ToString()});
  delete db;
  db = nullptr;
}

namespace {

Result<Revision> read_meta_revision(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta,
                                    std::string_view key) {
  std::string v;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, key, &v);
  if (s.IsNotFound()) return Revision{0};
  if (!s.ok()) return from_rocksdb(s, "reading store metadata");
  if (v.size() != 8)
    return Status::corruption("store metadata '" + std::string(key) + "' is damaged");
  return static_cast<Revision>(codec::get_be64(v));
}

// A store with no object and no log entry: one whose creation was cut
// short before its format marker was written.
bool store_is_empty(const DbHandle& h) {
  for (auto* cf : {h.meta, h.latest, h.history, h.log}) {
    std::unique_ptr<rocksdb::Iterator> it(h.db->NewIterator(rocksdb::ReadOptions(), cf));
    it->SeekToFirst();
    if (it->Valid() || !it->status().ok()) return false;
  }
  return true;
}

// Refuses directories that hold something other than a vkube store before
// RocksDB would happily create a database among foreign files.
Status check_directory(const RocksDbOptions& o, bool* fresh) {
  std::error_code ec;
  *fresh = !fs::exists(o.path / fs::path("CURRENT"), ec);
  if (!*fresh) return Status::ok();
  if (!o.create_if_missing) return Status::not_found("no store at " + o.path);
  if (fs::exists(o.path, ec)) {
    if (!fs::is_directory(o.path, ec)) return Status::invalid(o.path + " is not a directory");
    for (const auto& entry : fs::directory_iterator(o.path, ec)) {
      (void)entry;
      return Status::invalid(
          o.path + " is not empty and holds no vkube store; refusing to create one there");
    }
  }
  fs::create_directories(o.path, ec);
  if (ec) return Status::unavailable("cannot create " + o.path + ": " + ec.message());
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<Backend>> open_rocksdb(const RocksDbOptions& options) {
  bool fresh = false;
  VKUBE_RETURN_IF_ERROR(check_directory(options, &fresh));

  rocksdb::Options opts = base_options(options);
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const auto& name : column_family_names())
    cfs.emplace_back(name, family_options(name, options));

  auto h = std::make_shared<DbHandle>();
  rocksdb::Status s;
  if (fresh) {
    // A new store: open it with the default family alone, then create the
    // others in one call. (Open's create_missing_column_families creates
    // them one at a time, each with its own OPTIONS file written, synced and
    // read back: two thirds of a new tenant's store creation.)
    opts.create_missing_column_families = false;
    std::vector<rocksdb::ColumnFamilyDescriptor> first(cfs.begin(), cfs.begin() + 1);
    std::vector<rocksdb::ColumnFamilyDescriptor> rest(cfs.begin() + 1, cfs.end());
    s = rocksdb::DB::Open(opts, options.path, first, &h->all, &h->db);
    if (s.ok()) {
      std::vector<rocksdb::ColumnFamilyHandle*> created;
      s = h->db->CreateColumnFamilies(rest, &created);
      h->all.insert(h->all.end(), created.begin(), created.end());
      if (!s.ok()) {
        h->close();
        return from_rocksdb(s, "creating store " + options.path);
      }
    }
  } else {
    s = rocksdb::DB::Open(opts, options.path, cfs, &h->all, &h->db);
  }
  if (s.IsInvalidArgument() && s.ToString().find("Column families not opened") != std::string::npos)
    return Status::invalid("store " + options.path +
                           " has column families vkube does not know: not a vkube store, or a "
                           "newer format (" +
                           s.ToString() + ")");
  if (!s.ok()) return from_rocksdb(s, "opening store " + options.path);
  h->meta = h->all[0];
  h->latest = h->all[1];
  h->history = h->all[2];
  h->log = h->all[3];

  std::string format;
  s = h->db->Get(rocksdb::ReadOptions(), h->meta, codec::kMetaFormat, &format);
  if (s.IsNotFound()) {
    if (!fresh && !store_is_empty(*h)) {
      h->close();
      return Status::invalid("store " + options.path + " has no format marker: not a vkube store");
    }
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = h->db->Put(wo, h->meta, codec::kMetaFormat, codec::kFormatVersion);
  } else if (s.ok() && format != codec::kFormatVersion) {
    h->close();
    return Status::invalid("store " + options.path + " has format '" + format + "', expected '" +
                           std::string(codec::kFormatVersion) + "'");
  }
  if (!s.ok()) {
    h->close();
    return from_rocksdb(s, "opening store " + options.path);
  }

  auto current = read_meta_revision(h->db, h->meta, codec::kMetaRevision);
  auto compacted = read_meta_revision(h->db, h->meta, codec::kMetaCompacted);
  if (!current.is_ok() || !compacted.is_ok()) {
    h->close();
    return !current.is_ok() ? current.status() : compacted.status();
  }
  VKUBE_LOG(debug, "store opened", {"path", options.path}, {"revision", *current},
            {"compacted", *compacted});
  return std::unique_ptr<Backend>(
      std::make_unique<RocksDbBackend>(options, std::move(h), *current, *compacted));
}

RocksDbBackend::RocksDbBackend(RocksDbOptions options, std::shared_ptr<DbHandle> handle,
                               Revision current, Revision compacted)
    : options_(std::move(options)),
      h_(std::move(handle)),
      hub_(options_.watch_history_events, options_.watch_buffer_events,
           options_.watch_history_bytes),
      committed_(current),
      compacted_(compacted),
      assigned_(current),
      batch_(std::make_unique<rocksdb::WriteBatch>()) {
  write_options_.sync = options_.sync;
  hub_.reset(current);
}

RocksDbBackend::~RocksDbBackend() {
  {
    // Wait for an in-flight commit group; later writers fail fast.
    std::unique_lock lock(write_mu_);
    write_error_ = Status::unavailable("store is closed");
    idle_cv_.wait(lock, [&] { return !leading_; });
    committer_stop_ = true;
    committer_cv_.notify_one();
  }
  if (committer_.joinable()) committer_.join();
  hub_.close();
  h_->close();
}

}  // namespace vkube::storage
