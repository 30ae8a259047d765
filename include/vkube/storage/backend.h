// The byte-level MVCC storage interface that everything in vkube stands on.
//
// Semantics follow etcd v3: one global revision counter increases by one with
// every mutation; each key carries the revision that created it, the revision
// that last modified it and a per-key version. Reads can be made at the
// latest revision or at any revision not yet compacted, and a watch delivers
// every later event in revision order. The API server exposes the revision as
// `resourceVersion`.
//
// Implementations: RocksDbBackend (src/storage, durable) and, later, the API
// server's watch cache wrapping it. Both pass tests/unit/storage/conformance.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"

namespace vkube::storage {

using Revision = int64_t;

// Values above this size are refused with Code::kTooLarge (etcd's default
// request limit; Kubernetes objects are far smaller).
inline constexpr size_t kMaxValueBytes = 1536 * 1024;

struct KeyValue {
  std::string key;
  std::string value;
  Revision create_revision = 0;  // revision of the create that began this key's life
  Revision mod_revision = 0;     // revision of the last write (of the delete, in delete results)
  int64_t version = 0;           // number of writes since create, starting at 1
};

// An item as a backend that keeps items in memory (the watch cache) shares
// it: immutable, so readers may hold it while the backend moves on.
using KeyValuePtr = std::shared_ptr<const KeyValue>;

struct ListOptions {
  std::string prefix;           // every key starting with these bytes ("" = all)
  Revision revision = 0;        // 0 = latest; otherwise read as of this revision
  int64_t limit = 0;            // 0 = no limit
  std::string continue_token;   // from a previous page; overrides `revision`
  bool keys_only = false;       // leave KeyValue::value empty
};

struct ListResult {
  std::vector<KeyValue> items;  // in key order
  Revision revision = 0;        // the revision the list was read at
  std::string continue_token;   // non-empty when more items remain
};

// list()'s answer with the items shared rather than copied.
struct SharedListResult {
  std::vector<KeyValuePtr> items;  // in key order
  Revision revision = 0;
  std::string continue_token;
};

enum class EventType { kPut, kDelete };

struct Event {
  EventType type = EventType::kPut;
  // For puts, the new state. For deletes, the key with value empty and
  // mod_revision set to the revision of the delete.
  KeyValue kv;
  // The state just before this event; absent for the create of a key.
  std::optional<KeyValue> prev_kv;
};
using EventPtr = std::shared_ptr<const Event>;

// One watch subscription. Events arrive in revision order, each exactly once.
// Thread-safe: the notifier may fire on a writer's thread while the owner polls.
class Watch {
 public:
  virtual ~Watch() = default;

  // Appends the available events to *out, waiting up to `wait` for the first.
  // Returns OK (possibly with nothing appended on timeout) while the watch is
  // live. Once ended it returns the reason, after all events before it:
  // kExpired (fell behind its bounded buffer, or history was compacted: the
  // caller must re-list) or kCancelled (cancelled, or the store closed).
  virtual Status poll(std::vector<EventPtr>* out, std::chrono::milliseconds wait) = 0;

  // Registers a function called whenever new events (or the end) become
  // available, for callers that multiplex many watches over few threads. It
  // runs on the thread that published the events: it must be quick and must
  // not call back into the store. Replaces any earlier notifier. After a
  // notification, poll with a zero wait until it appends nothing: a watch
  // replaying history hands it out in batches.
  virtual void set_notifier(std::function<void()> notify) = 0;

  // Ends the watch; a later poll returns kCancelled. Idempotent.
  virtual void cancel() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Creates `key` with `value`. kAlreadyExists if the key exists, kTooLarge
  // over kMaxValueBytes, kInvalid for an empty key or one holding a NUL byte.
  // On OK the write is durable (unless the store was opened with sync off)
  // and watchers will see it. Returns the stored KeyValue.
  virtual Result<KeyValue> create(std::string_view key, std::string_view value) = 0;

  // create() without waiting: `done` gets what create() would return, once
  // the write is durable or failed, on whichever thread finished it (often
  // another writer's), possibly before create_async returns. The thread that
  // calls it is free meanwhile, instead of sleeping through the commit (the
  // RocksDB store never syncs on the caller's thread, so an I/O thread may
  // call it; the default below does). done
  // must be quick and must not write to this store. By default it is create()
  // followed by done.
  using Done = std::function<void(Result<KeyValue>)>;
  virtual void create_async(std::string_view key, std::string_view value, Done done) {
    done(create(key, value));
  }

  // Replaces the value of an existing key. expected_mod_revision != 0 must
  // equal the key's mod_revision (kConflict otherwise); 0 means "any".
  // kNotFound when the key does not exist. Returns the stored KeyValue.
  virtual Result<KeyValue> update(std::string_view key, std::string_view value,
                                  Revision expected_mod_revision) = 0;

  // Deletes a key with the same precondition rules as update. Returns the
  // deleted value, with mod_revision set to the revision of the delete.
  virtual Result<KeyValue> remove(std::string_view key, Revision expected_mod_revision) = 0;

  // The key's state at `revision` (0 = latest). kNotFound if absent then,
  // kExpired below the compacted revision, kFutureRevision above the current.
  virtual Result<KeyValue> get(std::string_view key, Revision revision = 0) = 0;

  // Keys with the prefix, in key order, as of one revision. A continued list
  // reads at the first page's revision; kExpired once that was compacted.
  virtual Result<ListResult> list(const ListOptions& options) = 0;

  // list(), the items shared where the backend keeps them in memory: a LIST
  // of thousands of objects then copies no value while the store is locked
  // (the watch cache). By default list()'s items, each moved into its own.
  virtual Result<SharedListResult> list_shared(const ListOptions& options) {
    auto listed = list(options);
    if (!listed.is_ok()) return listed.status();
    SharedListResult out;
    out.items.reserve(listed->items.size());
    for (KeyValue& kv : listed->items)
      out.items.push_back(std::make_shared<KeyValue>(std::move(kv)));
    out.revision = listed->revision;
    out.continue_token = std::move(listed->continue_token);
    return out;
  }

  // Number of keys with the prefix at the latest revision.
  virtual Result<int64_t> count(std::string_view prefix) = 0;

  // Watches keys with the prefix for every event with revision > `after`
  // (0 = from now). Past events come from history; kExpired if `after` is
  // below the compacted revision.
  virtual Result<std::unique_ptr<Watch>> watch(std::string_view prefix, Revision after) = 0;

  // Forgets history up to `revision`: reads and watches below it get
  // kExpired. A revision at or below the current compaction is a no-op;
  // kFutureRevision above the current revision.
  virtual Status compact(Revision revision) = 0;

  // The revision of the newest committed write (0 for an empty store).
  virtual Revision current_revision() const = 0;
  // The newest compacted revision (0 when never compacted).
  virtual Revision compacted_revision() const = 0;
};

}  // namespace vkube::storage
