// Private to vkube_pki: small POSIX file helpers with Status errors.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "vkube/common/status.h"

namespace vkube::pki::detail {

// The whole file. kNotFound when it does not exist. When `mode` is not 0
// and the file's permission bits differ, they are set to `mode` (so a key
// copied in with a loose mode is tightened).
Result<std::string> read_file(const std::string& path, mode_t mode = 0);

// Replaces `path` with `data` atomically: a temporary file in the same
// directory, given `mode`, then renamed over `path`. With `durable` the data
// reaches the disk before the rename, so a crash leaves the old or the new
// content, never an empty file; the caller syncs the directory.
Status write_file_atomic(const std::string& path, std::string_view data, mode_t mode, bool durable);

// fsync of a directory, making renames and creations in it durable.
Status sync_dir(const std::string& dir);

// Creates `dir` and its parents as needed, and gives `dir` mode `mode`.
// True when `dir` did not exist before.
Result<bool> make_dir(const std::string& dir, mode_t mode);

// An exclusive flock(2) on a file, held until destruction.
class FileLock {
 public:
  static Result<FileLock> acquire(const std::string& path);
  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace vkube::pki::detail
