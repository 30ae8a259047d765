// The vkube binary as a user runs it.
#include <catch2/catch.hpp>

#include "support/run.h"
#include "support/temp_dir.h"
#include "vkube/storage/rocksdb_backend.h"

namespace vkube {
namespace {

using testing::run;
using testing::TempDir;

const std::string kVkube = VKUBE_BINARY;

TEST_CASE("vkube version and help", "[cli]") {
  auto v = run(kVkube + " version");
  CHECK(v.exit_code == 0);
  CHECK_THAT(v.output, Catch::StartsWith("vkube 0."));
  CHECK(run(kVkube + " version --short").output.find("git") == std::string::npos);

  auto help = run(kVkube + " --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.output, Catch::Contains("backup") && Catch::Contains("restore"));
  auto cmd_help = run(kVkube + " backup --help");
  CHECK(cmd_help.exit_code == 0);
  CHECK_THAT(cmd_help.output, Catch::Contains("--data-dir") && Catch::Contains("--log-level"));

  auto unknown = run(kVkube + " frobnicate");
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.output, Catch::Contains("unknown command 'frobnicate'"));
  auto bad_flag = run(kVkube + " version --nope");
  CHECK(bad_flag.exit_code == 2);
  CHECK_THAT(bad_flag.output, Catch::Contains("unknown flag --nope"));
}

TEST_CASE("vkube backup and restore, while the store is in use", "[cli][storage]") {
  TempDir dir;
  storage::RocksDbOptions o;
  o.path = dir.sub("data");
  auto store = storage::open_rocksdb(o);
  REQUIRE(store.is_ok());
  for (int i = 0; i < 50; ++i) REQUIRE((*store)->create("/k/" + std::to_string(i), "v").is_ok());

  auto backup = run(kVkube + " backup --data-dir " + dir.sub("data") + " --out " + dir.sub("bk"));
  INFO(backup.output);
  REQUIRE(backup.exit_code == 0);
  CHECK_THAT(backup.output, Catch::Contains("at revision 50"));

  auto again = run(kVkube + " backup --data-dir " + dir.sub("data") + " --out " + dir.sub("bk"));
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.output, Catch::Contains("already exists"));

  auto restore = run(kVkube + " restore --from " + dir.sub("bk") + " --data-dir " + dir.sub("new"));
  INFO(restore.output);
  REQUIRE(restore.exit_code == 0);
  o.path = dir.sub("new");
  auto restored = storage::open_rocksdb(o);
  REQUIRE(restored.is_ok());
  CHECK((*restored)->current_revision() == 50);
  CHECK(*(*restored)->count("/k/") == 50);

  auto missing = run(kVkube + " backup --data-dir " + dir.sub("none") + " --out " + dir.sub("x"));
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.output, Catch::Contains("no store at"));
  CHECK(run(kVkube + " restore").exit_code == 1);
}

}  // namespace
}  // namespace vkube
