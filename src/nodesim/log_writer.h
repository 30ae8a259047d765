// Local pods' container logs in the CRI format the kubelet reads
// (`<RFC3339Nano timestamp> <stdout|stderr> <F|P> <text>` per line), so
// that pods/log can offer timestamps, sinceSeconds and sinceTime as on a
// real node. One thread for every local pod: it waits on the read ends of
// the containers' stdout and stderr pipes (epoll) and appends each line,
// timestamped when it arrives, to the container's log file.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "vkube/common/status.h"

namespace vkube::nodesim {

// "2026-12-05T13:30:00.123456789Z": nine digits always, so that timestamps
// compare as strings.
std::string cri_timestamp(int64_t unix_nanos);

// One CRI log line split up; false when `line` (without its '\n') is not one.
struct CriLine {
  std::string_view timestamp;
  std::string_view stream;  // "stdout" or "stderr"
  bool partial = false;     // P: the text goes on in the next line
  std::string_view text;
};
bool parse_cri_line(std::string_view line, CriLine& out);

class LogWriter {
 public:
  LogWriter();
  ~LogWriter();  // writes out what the pipes still hold, then joins
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Takes the read ends of a container's stdout and stderr pipes (owned
  // from now on) and appends their lines to `file` until both end.
  Status add(int stdout_fd, int stderr_fd, const std::string& file);

 private:
  struct File;
  struct Source {
    std::shared_ptr<File> file;
    const char* stream;
    std::string partial;  // bytes of a line not ended yet
  };
  void run();
  // Appends what `fd` holds now; true once it has ended.
  bool drain(int fd, Source& s, bool ended);

  int epoll_ = -1;
  int wake_ = -1;  // eventfd: stop
  std::mutex mu_;
  std::map<int, Source> sources_;  // guarded by mu_ (the thread's, otherwise)
  std::thread thread_;
};

}  // namespace vkube::nodesim
