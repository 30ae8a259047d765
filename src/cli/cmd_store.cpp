// Store maintenance: backup and restore.
#include <cstdio>

#include "command.h"
#include "vkube/storage/rocksdb_backend.h"

namespace vkube::cli {

int run_backup(const Args& args) {
  FlagSet flags("backup",
                "Copy the store in --data-dir to --out as of one revision. Works while a vkube\n"
                "process is serving from the store: writes go on during the copy.");
  auto log_flags = add_log_flags(flags);
  std::string& data_dir = flags.add_string("data-dir", "", "directory of the store to back up");
  std::string& out = flags.add_string("out", "", "backup directory to create (must not exist)");
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  if (data_dir.empty() || out.empty()) return fail("--data-dir and --out are required");
  auto rev = storage::backup_store(data_dir, out);
  if (!rev.is_ok()) return fail(rev.status().message());
  std::printf("backed up %s to %s at revision %lld\n", data_dir.c_str(), out.c_str(),
              static_cast<long long>(*rev));
  return 0;
}

int run_restore(const Args& args) {
  FlagSet flags("restore",
                "Restore a backup made by 'vkube backup' into a new store directory.");
  auto log_flags = add_log_flags(flags);
  std::string& from = flags.add_string("from", "", "backup directory");
  std::string& data_dir = flags.add_string("data-dir", "", "store directory to create (empty or missing)");
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  if (from.empty() || data_dir.empty()) return fail("--from and --data-dir are required");
  auto rev = storage::restore_store(from, data_dir);
  if (!rev.is_ok()) return fail(rev.status().message());
  std::printf("restored %s into %s at revision %lld\n", from.c_str(), data_dir.c_str(),
              static_cast<long long>(*rev));
  return 0;
}

}  // namespace vkube::cli
