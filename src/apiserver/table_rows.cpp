#include "table_rows.h"

#include <algorithm>

namespace vkube::apiserver {

std::shared_ptr<const TableRow> TableRowCache::find(const storage::KeyValuePtr& item,
                                                    std::string_view resource) {
  std::lock_guard lock(mu_);
  auto it = rows_.find(item.get());
  if (it == rows_.end()) return nullptr;
  // Same address, but the item it held may be gone and the memory reused.
  if (it->second.item.lock() != item || it->second.row->resource != resource) return nullptr;
  return it->second.row;
}

void TableRowCache::put(const storage::KeyValuePtr& item, std::shared_ptr<const TableRow> row) {
  std::lock_guard lock(mu_);
  if (rows_.size() >= sweep_at_) {
    // Drop the rows of items no store holds any more (updated or deleted
    // objects); what is left is what the stores still serve.
    std::erase_if(rows_, [](const auto& e) { return e.second.item.expired(); });
    sweep_at_ = std::max<size_t>(1024, 2 * rows_.size());
  }
  rows_[item.get()] = Entry{item, std::move(row)};
}

size_t TableRowCache::size() {
  std::lock_guard lock(mu_);
  return rows_.size();
}

TableRowCache& TableRowCache::shared() {
  static TableRowCache* cache = new TableRowCache();  // never destroyed: used until exit
  return *cache;
}

}  // namespace vkube::apiserver
