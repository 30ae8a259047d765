// The rows of Tables kept per stored item (table.cpp's TableWriter): a
// repeated `kubectl get` of unchanged objects neither decodes them nor runs
// their printer again.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "vkube/storage/backend.h"

namespace vkube::apiserver {

// One object's row, as printed for one resource. Only AGE depends on the
// time of the request: it is printed each time from `created`; the other
// cells are kept as text. A printer whose other cells depend on the time too
// (RESTARTS "(5m ago)", a Job's DURATION, an Event's LAST SEEN) gets no
// kept cells (`cells_kept` false) and runs on every request.
struct TableRow {
  std::string resource;  // group/version/plural the row was printed for
  bool cells_kept = false;
  bool has_age = false;            // false: `cells_head` is the whole cells array
  std::string cells_head;          // the cells' JSON up to the AGE cell: `["pod-0","1/1",`
  std::string cells_tail;          // and after it: `,"10.0.0.1","node-1"]`
  std::optional<int64_t> created;  // metadata.creationTimestamp, in Unix seconds
  std::string metadata;            // ObjectMeta's JSON in kube's field order, with resourceVersion
};

// Rows by stored item. An item is immutable and a changed object is a new
// item, so a row never goes stale; rows of items the store has let go are
// dropped as the map grows. Only a store that shares its items between
// reads (the watch cache's list_shared) finds its rows again. Thread-safe.
class TableRowCache {
 public:
  // The row kept for `item` as printed for `resource`, or nullptr.
  std::shared_ptr<const TableRow> find(const storage::KeyValuePtr& item, std::string_view resource);
  // Keeps `row` for `item` (replacing any other).
  void put(const storage::KeyValuePtr& item, std::shared_ptr<const TableRow> row);
  // Rows kept, those of dropped items included until the next sweep.
  size_t size();

  // The process's cache: items are told apart by identity, so every server
  // and store can share it.
  static TableRowCache& shared();

 private:
  struct Entry {
    std::weak_ptr<const storage::KeyValue> item;  // tells a reused address apart
    std::shared_ptr<const TableRow> row;
  };
  std::mutex mu_;
  std::unordered_map<const storage::KeyValue*, Entry> rows_;  // guarded by mu_
  size_t sweep_at_ = 1024;                                    // guarded by mu_
};

}  // namespace vkube::apiserver
