#include "file_io.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace vkube::pki::detail {
namespace {

Status io_error(std::string_view what, const std::string& path, int err) {
  return Status::internal(std::string(what) + " " + path + ": " + std::strerror(err));
}

// Closes on scope exit; keeps errno intact for the error path.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) {
      int saved = errno;
      ::close(fd);
      errno = saved;
    }
  }
};

}  // namespace

Result<std::string> read_file(const std::string& path, mode_t mode) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::not_found(path + " does not exist");
    return io_error("open", path, errno);
  }
  FdCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return io_error("stat", path, errno);
  if (mode != 0 && (st.st_mode & 07777) != mode && ::fchmod(fd, mode) != 0) {
    return io_error("chmod", path, errno);
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (true) {
    if (done == data.size()) data.resize(done + 4096);  // the file may have grown
    ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("read", path, errno);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  return data;
}

Status write_file_atomic(const std::string& path, std::string_view data, mode_t mode,
                         bool durable) {
  std::string tmp = path + ".tmp-XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return io_error("create", tmp, errno);
  Status status;
  {
    FdCloser closer{fd};
    if (::fchmod(fd, mode) != 0) status = io_error("chmod", tmp, errno);
    size_t done = 0;
    while (status.is_ok() && done < data.size()) {
      ssize_t n = ::write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) status = io_error("write", tmp, errno);
      if (n > 0) done += static_cast<size_t>(n);
    }
    if (status.is_ok() && durable && ::fsync(fd) != 0) status = io_error("fsync", tmp, errno);
  }
  if (status.is_ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = io_error("rename to " + path, tmp, errno);
  }
  if (!status.is_ok()) ::unlink(tmp.c_str());
  return status;
}

Status sync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("open", dir, errno);
  FdCloser closer{fd};
  if (::fsync(fd) != 0) return io_error("fsync", dir, errno);
  return Status::ok();
}

Result<bool> make_dir(const std::string& dir, mode_t mode) {
  std::error_code ec;
  bool created = std::filesystem::create_directories(dir, ec);
  if (ec) return Status::internal("create directory " + dir + ": " + ec.message());
  if (::chmod(dir.c_str(), mode) != 0) return io_error("chmod", dir, errno);
  return created;
}

Result<FileLock> FileLock::acquire(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("open", path, errno);
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    ::close(fd);
    return io_error("lock", path, err);
  }
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace vkube::pki::detail
