// Online backup and restore.
//
// A backup is a logical copy of one consistent snapshot into a new store:
// every column family, including history and the revision counters, so a
// restored store continues at the same revision with the same history. From
// a store another process has open, the copy is read through a RocksDB
// secondary instance, which follows the primary's files without its lock.
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "key_codec.h"
#include "rocksdb_backend.h"
#include "vkube/common/log.h"

namespace vkube::storage {

namespace fs = std::filesystem;

namespace {

Status check_new_dir(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec) || !fs::is_empty(dir, ec))
      return Status::already_exists(dir + " already exists and is not an empty directory");
  }
  return Status::ok();
}

// Copies every family of `src` as of `snap` into a new store at out_dir.
Result<Revision> copy_store(rocksdb::DB* src, const std::vector<rocksdb::ColumnFamilyHandle*>& cfs,
                            const rocksdb::Snapshot* snap, const std::string& out_dir) {
  VKUBE_RETURN_IF_ERROR(check_new_dir(out_dir));
  RocksDbOptions o;
  o.path = out_dir;
  rocksdb::Options opts = base_options(o);
  opts.create_if_missing = true;
  opts.create_missing_column_families = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const auto& name : column_family_names()) descs.emplace_back(name, family_options(name, o));
  DbHandle dst;
  VKUBE_RETURN_IF_ERROR(from_rocksdb(rocksdb::DB::Open(opts, out_dir, descs, &dst.all, &dst.db),
                                     "creating backup " + out_dir));

  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  ro.fill_cache = false;
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // flushed and synced at close
  Revision revision = 0;
  for (size_t i = 0; i < cfs.size(); ++i) {
    std::unique_ptr<rocksdb::Iterator> it(src->NewIterator(ro, cfs[i]));
    rocksdb::WriteBatch batch;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      batch.Put(dst.all[i], it->key(), it->value());
      if (i == 0 && it->key() == codec::kMetaRevision)
        revision = static_cast<Revision>(codec::get_be64(it->value().ToStringView()));
      if (batch.GetDataSize() > (4u << 20)) {
        VKUBE_RETURN_IF_ERROR(from_rocksdb(dst.db->Write(wo, &batch), "writing backup"));
        batch.Clear();
      }
    }
    VKUBE_RETURN_IF_ERROR(from_rocksdb(it->status(), "reading the store"));
    VKUBE_RETURN_IF_ERROR(from_rocksdb(dst.db->Write(wo, &batch), "writing backup"));
  }
  dst.close();  // flushes every family to synced table files
  return revision;
}

}  // namespace

Result<Revision> RocksDbBackend::backup_to(const std::string& out_dir) {
  std::shared_lock lifetime(h_->mu);
  if (h_->db == nullptr) return Status::unavailable("store is closed");
  const rocksdb::Snapshot* snap = h_->db->GetSnapshot();
  auto result = copy_store(h_->db, h_->all, snap, out_dir);
  h_->db->ReleaseSnapshot(snap);
  return result;
}

Result<Revision> backup_backend(Backend& backend, const std::string& out_dir) {
  auto* rocks = dynamic_cast<RocksDbBackend*>(&backend);
  if (rocks == nullptr) return Status::invalid("backup needs a RocksDB-backed store");
  return rocks->backup_to(out_dir);
}

Result<Revision> backup_store(const std::string& data_dir, const std::string& out_dir) {
  RocksDbOptions o;
  o.path = data_dir;
  o.create_if_missing = false;
  auto opened = open_rocksdb(o);
  if (opened.is_ok()) return backup_backend(**opened, out_dir);
  if (opened.status().code() != Code::kUnavailable) return opened.status();

  // Held open by a running vkube: follow it as a secondary instance.
  std::error_code ec;
  fs::path secondary = fs::temp_directory_path(ec) / ("vkube-backup-" + std::to_string(::getpid()));
  fs::remove_all(secondary, ec);
  rocksdb::Options opts = base_options(o);
  opts.max_open_files = -1;  // required by secondary instances
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const auto& name : column_family_names()) descs.emplace_back(name, family_options(name, o));
  DbHandle h;
  Status s = from_rocksdb(
      rocksdb::DB::OpenAsSecondary(opts, data_dir, secondary.string(), descs, &h.all, &h.db),
      "following store " + data_dir);
  Result<Revision> result = s;
  if (s.is_ok()) {
    s = from_rocksdb(h.db->TryCatchUpWithPrimary(), "catching up with " + data_dir);
    // The secondary changes only in TryCatchUpWithPrimary, so iterating it now
    // reads one consistent state.
    result = s.is_ok() ? copy_store(h.db, h.all, nullptr, out_dir) : Result<Revision>(s);
    for (auto* cf : h.all) h.db->DestroyColumnFamilyHandle(cf);
    h.all.clear();
    delete h.db;
    h.db = nullptr;
  }
  fs::remove_all(secondary, ec);
  return result;
}

Result<Revision> restore_store(const std::string& backup_dir, const std::string& data_dir) {
  VKUBE_RETURN_IF_ERROR(check_new_dir(data_dir));
  std::error_code ec;
  if (!fs::exists(fs::path(backup_dir) / "CURRENT", ec))
    return Status::not_found(backup_dir + " holds no vkube backup");
  {
    // Verify the backup is a readable vkube store before touching data_dir.
    RocksDbOptions o;
    o.path = backup_dir;
    o.create_if_missing = false;
    auto probe = open_rocksdb(o);
    if (!probe.is_ok()) return probe.status();
  }
  fs::create_directories(data_dir, ec);
  fs::copy(backup_dir, data_dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing,
           ec);
  if (ec) return Status::internal("copying " + backup_dir + " to " + data_dir + ": " + ec.message());
  // The copied LOCK and info logs belong to no process; RocksDB recreates them.
  RocksDbOptions o;
  o.path = data_dir;
  o.create_if_missing = false;
  auto restored = open_rocksdb(o);
  if (!restored.is_ok()) return restored.status();
  return (*restored)->current_revision();
}

}  // namespace vkube::storage
