// The StreamSink handed to a ResponseStream: a mutex-guarded queue that
// producers fill from any thread, drained by the connection on its strand.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "vkube/http/server.h"

namespace vkube::http::detail {

class Connection;

class SinkImpl final : public StreamSink {
 public:
  SinkImpl(boost::asio::any_io_executor strand, std::weak_ptr<Connection> connection,
           std::shared_ptr<StreamHome> home, size_t limit)
      : strand_(std::move(strand)),
        connection_(std::move(connection)),
        home_(std::move(home)),
        limit_(limit) {}

  // StreamSink. write and close post at most one notification to the strand
  // at a time; write_here sends at once when it can.
  bool write(std::string chunk) override;
  void close() override;
  std::shared_ptr<StreamHome> home() override { return home_; }
  bool write_here(std::string_view chunk) override;

  // Strand side. Moves the queued chunks into `out` (empty on entry); returns
  // true when the response must end after them (producer closed, or shutdown).
  bool take(std::vector<std::string>& out);
  // `bytes` of chunk payload reached the socket.
  void sent(size_t bytes);
  // Shutdown: refuse further writes; what is queued is still sent.
  void end_for_shutdown();
  // The connection is gone: refuse writes and never touch the strand again
  // (it may not outlive the io_context).
  void detach();
  bool producer_closed();

 private:
  void notify_locked();

  std::mutex mu_;
  std::optional<boost::asio::any_io_executor> strand_;  // reset by detach()
  std::weak_ptr<Connection> connection_;
  const std::shared_ptr<StreamHome> home_;
  const size_t limit_;
  std::vector<std::string> queue_;
  size_t unsent_ = 0;  // queued plus in-flight payload bytes
  bool accepting_ = true;
  bool flush_posted_ = false;
  bool producer_closed_ = false;
  bool ending_ = false;
};

}  // namespace vkube::http::detail
