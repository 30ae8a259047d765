#include <catch2/catch.hpp>

#include "storage/conformance.h"
#include "vkube/storage/rocksdb_backend.h"
#include "vkube/storage/watch_cache.h"

namespace vkube::storage {
namespace {

// The cache owns its RocksDB backend here, so the conformance suite can
// restart the pair.
class CachedStore final : public Backend {
 public:
  explicit CachedStore(const std::string& dir) {
    RocksDbOptions o;
    o.path = dir;
    inner_ = std::move(open_rocksdb(o)).value();
    cache_ = std::move(make_watch_cache(*inner_)).value();
  }
  ~CachedStore() override { cache_.reset(); }
  Result<KeyValue> create(std::string_view k, std::string_view v) override { return cache_->create(k, v); }
  Result<KeyValue> update(std::string_view k, std::string_view v, Revision e) override { return cache_->update(k, v, e); }
  Result<KeyValue> remove(std::string_view k, Revision e) override { return cache_->remove(k, e); }
  Result<KeyValue> get(std::string_view k, Revision r) override { return cache_->get(k, r); }
  Result<ListResult> list(const ListOptions& o) override { return cache_->list(o); }
  Result<int64_t> count(std::string_view p) override { return cache_->count(p); }
  Result<std::unique_ptr<Watch>> watch(std::string_view p, Revision a) override { return cache_->watch(p, a); }
  Status compact(Revision r) override { return cache_->compact(r); }
  Revision current_revision() const override { return cache_->current_revision(); }
  Revision compacted_revision() const override { return cache_->compacted_revision(); }

 private:
  std::unique_ptr<Backend> inner_;
  std::unique_ptr<Backend> cache_;
};

TEST_CASE("the watch cache passes the storage conformance suite", "[storage][cache]") {
  testing::run_conformance([](const std::string& dir) { return std::make_unique<CachedStore>(dir); });
}

}  // namespace
}  // namespace vkube::storage
