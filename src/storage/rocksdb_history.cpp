// History: event-log replay for watches, and compaction.
#include "key_codec.h"
#include "rocksdb_backend.h"
#include "vkube/common/log.h"

namespace vkube::storage {

namespace {

std::string_view view(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

Result<KeyValue> version_at(DbHandle& h, const rocksdb::ReadOptions& ro, const std::string& key,
                            Revision rev) {
  std::string raw;
  rocksdb::Status s = h.db->Get(ro, h.history, codec::history_key(key, rev), &raw);
  if (s.IsNotFound())
    return Status::expired("history of " + key + " at revision " + std::to_string(rev) +
                           " has been compacted");
  if (!s.ok()) return from_rocksdb(s, "reading history of " + key);
  pb::Record r;
  if (!r.ParseFromString(raw)) return Status::corruption("history record of " + key + " is damaged");
  return KeyValue{key, std::move(*r.mutable_value()), r.create_revision(), r.mod_revision(),
                  r.version()};
}

Result<Revision> read_compacted(DbHandle& h, const rocksdb::ReadOptions& ro) {
  std::string raw;
  rocksdb::Status s = h.db->Get(ro, h.meta, codec::kMetaCompacted, &raw);
  if (s.IsNotFound()) return Revision{0};
  if (!s.ok()) return from_rocksdb(s, "reading store metadata");
  return static_cast<Revision>(codec::get_be64(raw));
}

}  // namespace

Status read_log(DbHandle& h, const std::string& prefix, Revision after, Revision until,
                size_t max, std::vector<EventPtr>* out, Revision* next) {
  std::shared_lock lifetime(h.mu);
  if (h.db == nullptr) return Status::cancelled("store is closed");
  const rocksdb::Snapshot* snap = h.db->GetSnapshot();
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  struct Release {
    rocksdb::DB* db;
    const rocksdb::Snapshot* s;
    ~Release() { db->ReleaseSnapshot(s); }
  } release{h.db, snap};

  auto compacted = read_compacted(h, ro);
  if (!compacted.is_ok()) return compacted.status();
  if (after < *compacted)
    return Status::expired("revision " + std::to_string(after) +
                           " has been compacted (oldest available is " +
                           std::to_string(*compacted) + ")");

  std::string upper = codec::be64(until + 1);
  rocksdb::Slice upper_slice(upper);
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(h.db->NewIterator(ro, h.log));
  Revision expect = after + 1;
  size_t added = 0;
  for (it->Seek(codec::be64(after + 1)); it->Valid() && added < max; it->Next()) {
    Revision rev = static_cast<Revision>(codec::get_be64(view(it->key())));
    if (rev != expect)
      return Status::expired("event log is missing revision " + std::to_string(expect) +
                             " (compacted while watching); re-list and watch again");
    ++expect;
    pb::LogEntry entry;
    if (!entry.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())))
      return Status::corruption("event log entry " + std::to_string(rev) + " is damaged");
    if (!std::string_view(entry.key()).starts_with(prefix)) continue;
    auto e = std::make_shared<Event>();
    if (entry.deleted()) {
      e->type = EventType::kDelete;
      e->kv = KeyValue{entry.key(), {}, 0, rev, 0};
    } else {
      auto kv = version_at(h, ro, entry.key(), rev);
      if (!kv.is_ok()) return kv.status();
      e->kv = std::move(kv).value();
    }
    if (entry.prev_mod_revision() != 0) {
      auto prev = version_at(h, ro, entry.key(), entry.prev_mod_revision());
      if (!prev.is_ok()) return prev.status();
      e->prev_kv = std::move(prev).value();
    }
    out->push_back(std::move(e));
    ++added;
  }
  VKUBE_RETURN_IF_ERROR(from_rocksdb(it->status(), "reading the event log"));
  *next = it->Valid() ? expect - 1 : until;
  if (!it->Valid() && expect <= until)
    return Status::expired("event log ends at revision " + std::to_string(expect - 1) +
                           ", before " + std::to_string(until));
  return Status::ok();
}

Status RocksDbBackend::compact(Revision revision) {
  std::lock_guard lock(compact_mu_);
  if (revision <= compacted_.load()) return Status::ok();
  if (revision > committed_.load())
    return {Code::kFutureRevision, "cannot compact to revision " + std::to_string(revision) +
                                       ": the current revision is " +
                                       std::to_string(committed_.load())};
  {
    std::shared_lock lifetime(h_->mu);
    if (h_->db == nullptr) return Status::unavailable("store is closed");
    rocksdb::WriteOptions wo;
    wo.sync = options_.sync;
    VKUBE_RETURN_IF_ERROR(from_rocksdb(
        h_->db->Put(wo, h_->meta, codec::kMetaCompacted, codec::be64(revision)),
        "recording compaction"));
  }
  compacted_.store(revision);
  // The marker is durable: reads below it are refused from now on. Removing
  // the old versions may be cut short by a crash; that only wastes space.
  return compact_history(revision);
}

Status RocksDbBackend::compact_history(Revision revision) {
  std::shared_lock lifetime(h_->mu);
  if (h_->db == nullptr) return Status::unavailable("store is closed");
  rocksdb::WriteOptions wo;  // not synced: losing these deletes is harmless
  VKUBE_RETURN_IF_ERROR(from_rocksdb(
      h_->db->DeleteRange(wo, h_->log, codec::be64(0), codec::be64(revision + 1)),
      "compacting the event log"));

  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(h_->db->NewIterator(ro, h_->history));
  rocksdb::WriteBatch batch;
  int64_t removed = 0;
  std::string key;
  bool kept = false;  // kept the newest version <= revision of `key`
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view hk = view(it->key());
    std::string_view user = codec::history_user_key(hk);
    if (user != key) {
      key.assign(user);
      kept = false;
    }
    if (codec::history_revision(hk) > revision) continue;
    if (!kept) {
      kept = true;
      pb::Record r;
      if (r.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) &&
          !r.deleted())
        continue;  // the state as of `revision`: still readable there
    }
    batch.Delete(h_->history, it->key());
    if (++removed % 1024 == 0) {
      VKUBE_RETURN_IF_ERROR(from_rocksdb(h_->db->Write(wo, &batch), "compacting history"));
      batch.Clear();
    }
  }
  VKUBE_RETURN_IF_ERROR(from_rocksdb(it->status(), "compacting history"));
  VKUBE_RETURN_IF_ERROR(from_rocksdb(h_->db->Write(wo, &batch), "compacting history"));
  VKUBE_LOG(debug, "compacted", {"revision", revision}, {"versions_removed", removed});
  return Status::ok();
}

}  // namespace vkube::storage
