// A store that stops being written gives its memtables back: it flushes them
// to table files once idle, instead of holding the last burst of writes in
// memory until more writes fill them.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "support/temp_dir.h"
#include "vkube/storage/rocksdb_backend.h"

namespace vkube::storage {
namespace {

using namespace std::chrono_literals;
using vkube::testing::TempDir;

int table_files(const std::string& dir) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".sst") ++n;
  return n;
}

TEST_CASE("an idle store flushes what a burst of writes left in memory", "[storage][rocksdb]") {
  TempDir dir;
  RocksDbOptions o;
  o.path = dir.sub("db");
  o.sync = false;
  auto opened = open_rocksdb(o);
  REQUIRE(opened.is_ok());
  std::unique_ptr<Backend> store = std::move(opened).value();
  REQUIRE(table_files(o.path) == 0);

  // About 6 MB of objects: more than an idle flush waits for, less than any
  // memtable or the memory budget holds, so only idleness can flush them.
  const std::string value(1000, 'x');
  for (int i = 0; i < 6000; ++i)
    REQUIRE(
        store->create("/registry/core/configmaps/default/cm-" + std::to_string(i), value).is_ok());
  std::this_thread::sleep_for(200ms);
  CHECK(table_files(o.path) == 0);  // not while writes may go on

  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (table_files(o.path) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  CHECK(table_files(o.path) > 0);

  // Nothing acknowledged is lost on the way, and the store goes on.
  auto got = store->get("/registry/core/configmaps/default/cm-5999", 0);
  REQUIRE(got.is_ok());
  CHECK(got->value == value);
  REQUIRE(store->create("/registry/core/configmaps/default/after", "v").is_ok());
  store.reset();
  auto again = open_rocksdb(o);
  REQUIRE(again.is_ok());
  auto count = (*again)->count("/registry/core/configmaps/");
  REQUIRE(count.is_ok());
  CHECK(*count == 6001);
}

}  // namespace
}  // namespace vkube::storage
