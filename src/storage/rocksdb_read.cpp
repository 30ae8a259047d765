// The read path: get and list at the latest or a past revision, count, watch.
#include <charconv>

#include "key_codec.h"
#include "rocksdb_backend.h"

namespace vkube::storage {

namespace {

Status parse_record(std::string_view raw, std::string_view key, pb::Record* r) {
  if (!r->ParseFromArray(raw.data(), static_cast<int>(raw.size())))
    return Status::corruption("stored record of " + std::string(key) + " is damaged");
  return Status::ok();
}

KeyValue to_kv(std::string_view key, pb::Record&& r, bool keys_only) {
  KeyValue kv{std::string(key), {}, r.create_revision(), r.mod_revision(), r.version()};
  if (!keys_only) kv.value = std::move(*r.mutable_value());
  return kv;
}

std::string_view view(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

// Continue tokens are "<revision>:<next key>"; the API layer wraps them.
std::string make_token(Revision rev, std::string_view next_key) {
  return std::to_string(rev) + ":" + std::string(next_key);
}

Status parse_token(std::string_view token, std::string_view prefix, Revision* rev,
                   std::string* key) {
  auto colon = token.find(':');
  if (colon == std::string_view::npos)
    return Status::bad_request("continue token is malformed");
  auto [p, ec] = std::from_chars(token.data(), token.data() + colon, *rev);
  if (ec != std::errc() || p != token.data() + colon || *rev <= 0)
    return Status::bad_request("continue token is malformed");
  *key = std::string(token.substr(colon + 1));
  if (!std::string_view(*key).starts_with(prefix))
    return Status::bad_request("continue token does not belong to this list");
  return Status::ok();
}

}  // namespace

Status RocksDbBackend::check_revision(Revision revision) const {
  if (revision < compacted_.load())
    return Status::expired("revision " + std::to_string(revision) +
                           " has been compacted (oldest available is " +
                           std::to_string(compacted_.load()) + ")");
  if (revision > committed_.load())
    return {Code::kFutureRevision, "revision " + std::to_string(revision) +
                                       " is newer than the current revision " +
                                       std::to_string(committed_.load())};
  return Status::ok();
}

Result<KeyValue> RocksDbBackend::get(std::string_view key, Revision revision) {
  std::shared_lock lifetime(h_->mu);
  if (revision != 0) return get_at(key, revision);
  std::string raw;
  rocksdb::Status s = h_->db->Get(rocksdb::ReadOptions(), h_->latest, key, &raw);
  if (s.IsNotFound()) return Status::not_found("key " + std::string(key) + " not found");
  if (!s.ok()) return from_rocksdb(s, "reading " + std::string(key));
  pb::Record r;
  VKUBE_RETURN_IF_ERROR(parse_record(raw, key, &r));
  return to_kv(key, std::move(r), false);
}

Result<KeyValue> RocksDbBackend::get_at(std::string_view key, Revision revision) {
  VKUBE_RETURN_IF_ERROR(check_revision(revision));
  std::string upper = codec::history_after_key(key);
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(h_->db->NewIterator(ro, h_->history));
  it->Seek(codec::history_key(key, revision));
  if (!it->Valid() || codec::history_user_key(view(it->key())) != key) {
    VKUBE_RETURN_IF_ERROR(from_rocksdb(it->status(), "reading " + std::string(key)));
    return Status::not_found("key " + std::string(key) + " not found at revision " +
                             std::to_string(revision));
  }
  pb::Record r;
  VKUBE_RETURN_IF_ERROR(parse_record(view(it->value()), key, &r));
  if (r.deleted())
    return Status::not_found("key " + std::string(key) + " not found at revision " +
                             std::to_string(revision));
  return to_kv(key, std::move(r), false);
}

Result<ListResult> RocksDbBackend::list(const ListOptions& o) {
  std::shared_lock lifetime(h_->mu);
  ListResult out;
  std::string start = o.prefix;
  Revision rev = o.revision;
  if (!o.continue_token.empty()) VKUBE_RETURN_IF_ERROR(parse_token(o.continue_token, o.prefix, &rev, &start));

  // One snapshot for the whole page: the latest family and the revision
  // counter in it are mutually consistent.
  const rocksdb::Snapshot* snap = h_->db->GetSnapshot();
  struct Release {
    rocksdb::DB* db;
    const rocksdb::Snapshot* s;
    ~Release() { db->ReleaseSnapshot(s); }
  } release{h_->db, snap};
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  std::string head;
  rocksdb::Status s = h_->db->Get(ro, h_->meta, codec::kMetaRevision, &head);
  if (!s.ok() && !s.IsNotFound()) return from_rocksdb(s, "reading store metadata");
  const Revision snap_rev = s.ok() ? static_cast<Revision>(codec::get_be64(head)) : 0;
  if (rev == 0) rev = snap_rev;
  VKUBE_RETURN_IF_ERROR(check_revision(rev));
  out.revision = rev;

  const std::string end = codec::prefix_end(o.prefix);
  const size_t limit = o.limit > 0 ? static_cast<size_t>(o.limit) : SIZE_MAX;

  if (rev == snap_rev) {
    // Nothing changed since `rev`: read the latest family directly.
    rocksdb::Slice upper(end);
    if (!end.empty()) ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(h_->db->NewIterator(ro, h_->latest));
    pb::Record r;  // reused: a fresh message per item costs more than the parse
    for (it->Seek(start); it->Valid(); it->Next()) {
      std::string_view key = view(it->key());
      if (out.items.size() == limit) {
        out.continue_token = make_token(rev, key);
        break;
      }
      r.Clear();
      VKUBE_RETURN_IF_ERROR(parse_record(view(it->value()), key, &r));
      out.items.push_back(to_kv(key, std::move(r), o.keys_only));
    }
    VKUBE_RETURN_IF_ERROR(from_rocksdb(it->status(), "listing " + o.prefix));
    return out;
  }

  // A past revision: for each key, the newest version at or below `rev`.
  std::string hist_end = end.empty() ? std::string() : codec::history_key(end, INT64_MAX);
  rocksdb::Slice upper(hist_end);
  if (!hist_end.empty()) ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(h_->db->NewIterator(ro, h_->history));
  it->Seek(codec::history_key(start, rev));
  pb::Record r;
  while (it->Valid()) {
    std::string key(codec::history_user_key(view(it->key())));
    if (codec::history_revision(view(it->key())) > rev) {
      it->Seek(codec::history_key(key, rev));
      if (!it->Valid()) break;
      if (codec::history_user_key(view(it->key())) != key) continue;
    }
    r.Clear();
    VKUBE_RETURN_IF_ERROR(parse_record(view(it->value()), key, &r));
    if (!r.deleted()) {
      if (out.items.size() == limit) {
        out.continue_token = make_token(rev, key);
        break;
      }
      out.items.push_back(to_kv(key, std::move(r), o.keys_only));
    }
    it->Seek(codec::history_after_key(key));
  }
  VKUBE_RETURN_IF_ERROR(from_rocksdb(it->status(), "listing " + o.prefix));
  return out;
}

Result<int64_t> RocksDbBackend::count(std::string_view prefix) {
  std::shared_lock lifetime(h_->mu);
  const std::string end = codec::prefix_end(prefix);
  rocksdb::Slice upper(end);
  rocksdb::ReadOptions ro;
  if (!end.empty()) ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(h_->db->NewIterator(ro, h_->latest));
  int64_t n = 0;
  for (it->Seek(prefix); it->Valid(); it->Next()) ++n;
  VKUBE_RETURN_IF_ERROR(from_rocksdb(it->status(), "counting " + std::string(prefix)));
  return n;
}

Result<std::unique_ptr<Watch>> RocksDbBackend::watch(std::string_view prefix, Revision after) {
  if (after != 0 && after < compacted_.load())
    return Status::expired("revision " + std::to_string(after) +
                           " has been compacted (oldest available is " +
                           std::to_string(compacted_.load()) + ")");
  // Captures only the shared handle: the watcher may outlive this backend.
  std::weak_ptr<DbHandle> weak = h_;
  HistoryReader reader = [weak](const std::string& p, Revision from, Revision until, size_t max,
                                std::vector<EventPtr>* out, Revision* next) {
    auto h = weak.lock();
    if (!h) return Status::cancelled("store is closed");
    return read_log(*h, p, from, until, max, out, next);
  };
  return hub_.subscribe(std::string(prefix), after, std::move(reader));
}

}  // namespace vkube::storage
