// The Duplex of an upgraded connection (Response::upgrade), shared by the
// handler's threads and the connection's strand (upgrade.cpp). Private to
// the transport.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/post.hpp>

#include "connection.h"

namespace vkube::http::detail {

namespace upgrade_limits {

constexpr size_t kInboundLimit = 1u << 20;   // read ahead of the handler
constexpr size_t kOutboundLimit = 1u << 20;  // queued for the socket

}  // namespace upgrade_limits

// The state of an upgraded connection: its Duplex methods run on the
// handler's threads and wait on cv_; the connection's strand fills and
// drains it. The handler holds it through an UpgradeHandle.
class UpgradeChannel final : public Duplex {
 public:
  UpgradeChannel(std::shared_ptr<Connection> connection, std::string already_read)
      : connection_(std::move(connection)), executor_(connection_->executor()) {
    inbound_ = std::move(already_read);
  }

  Result<size_t> read(char* out, size_t size) override {
    std::unique_lock lock(mu_);
    for (;;) {
      if (closed_) return Status::cancelled("the connection was closed");
      if (inbound_.size() > inbound_off_) break;
      if (failed_) return Status::unavailable(failure_);
      if (eof_) return size_t{0};
      if (!wait(lock)) return Status(Code::kTimeout, "timed out");
    }
    size_t n = std::min(size, inbound_.size() - inbound_off_);
    std::memcpy(out, inbound_.data() + inbound_off_, n);
    inbound_off_ += n;
    if (inbound_off_ == inbound_.size()) {
      inbound_.clear();
      inbound_off_ = 0;
    }
    if (read_paused_ && inbound_.size() - inbound_off_ < upgrade_limits::kInboundLimit / 2) {
      read_paused_ = false;
      post([](Connection& c) { c.upgrade_resume_read(); });
    }
    return n;
  }

  Status write(std::string_view data) override {
    std::unique_lock lock(mu_);
    while (!data.empty()) {
      for (;;) {
        if (closed_) return Status::cancelled("the connection was closed");
        if (failed_) return Status::unavailable(failure_);
        if (write_shut_) return Status::invalid("write after close_write");
        if (queued_ < upgrade_limits::kOutboundLimit) break;
        room_wanted_ = true;
        if (!wait(lock)) return Status(Code::kTimeout, "timed out");
      }
      // Take what fits, so one huge write does not queue without bound.
      size_t n = std::min(data.size(),
                          std::max<size_t>(upgrade_limits::kOutboundLimit - queued_, 64 * 1024));
      outbound_.append(data.data(), n);
      queued_ += n;
      data.remove_prefix(n);
      kick_writer();
    }
    return Status::ok();
  }

  void close_write() override {
    std::lock_guard lock(mu_);
    if (closed_ || write_shut_) return;
    write_shut_ = true;
    kick_writer();
  }

  void close() override {
    std::shared_ptr<Connection> c;
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      closed_ = true;
      cv_.notify_all();
      c = std::move(connection_);
    }
    if (c) net::post(executor_, [c] { c->close_now(); });
  }

  void set_deadline(Clock::time_point deadline) override {
    std::lock_guard lock(mu_);
    deadline_ = deadline;
    cv_.notify_all();
  }

  // The handler let go without close(): what it wrote is still sent, then
  // the connection closes as a finished response does.
  void release() {
    std::lock_guard lock(mu_);
    if (closed_) return;
    released_ = true;
    write_shut_ = true;
    kick_writer();
  }
  bool released() {
    std::lock_guard lock(mu_);
    return released_;
  }

  // Strand side ----------------------------------------------------------------------

  // Appends what the socket gave; false when the handler has enough unread
  // (the strand stops reading until read() resumes it).
  bool deliver(const char* data, size_t n) {
    std::lock_guard lock(mu_);
    if (inbound_off_ > 0 && inbound_off_ == inbound_.size()) {
      inbound_.clear();
      inbound_off_ = 0;
    }
    inbound_.append(data, n);
    cv_.notify_all();
    if (inbound_.size() - inbound_off_ >= upgrade_limits::kInboundLimit) {
      read_paused_ = true;
      return false;
    }
    return true;
  }
  void deliver_eof() {
    std::lock_guard lock(mu_);
    eof_ = true;
    cv_.notify_all();
  }
  void fail(std::string why) {
    std::lock_guard lock(mu_);
    if (!failed_) failure_ = std::move(why);
    failed_ = true;
    connection_.reset();
    cv_.notify_all();
  }
  // Moves the queued bytes into `out` (empty on entry). Returns false when
  // there were none; then `*shut` says whether the handler closed its side.
  bool take(std::string& out, bool* shut) {
    std::lock_guard lock(mu_);
    *shut = write_shut_;
    if (outbound_.empty()) {
      write_posted_ = false;
      return false;
    }
    out.swap(outbound_);
    return true;
  }
  // `n` queued bytes reached the socket. A writer waiting for room is woken
  // once half the queue has drained, not for every record: a wake-up per
  // 16 KiB TLS record costs more than the copy.
  void sent(size_t n) {
    std::lock_guard lock(mu_);
    queued_ -= std::min(n, queued_);
    if (room_wanted_ && queued_ <= upgrade_limits::kOutboundLimit / 2) {
      room_wanted_ = false;
      cv_.notify_all();
    }
  }

 private:
  // Waits for a change under the deadline; false when it passed.
  bool wait(std::unique_lock<std::mutex>& lock) {
    if (deadline_ == Clock::time_point::max()) {
      cv_.wait(lock);
      return true;
    }
    return cv_.wait_until(lock, deadline_) != std::cv_status::timeout || Clock::now() < deadline_;
  }
  void kick_writer() {
    if (write_posted_) return;
    write_posted_ = true;
    post([](Connection& c) { c.upgrade_flush(); });
  }
  template <typename Fn>
  void post(Fn fn) {
    if (connection_) net::post(executor_, [c = connection_, fn] { fn(*c); });
  }

  std::mutex mu_;
  std::condition_variable cv_;
  // Keeps the connection while the handler holds the channel; released by
  // close() or when the connection fails.
  std::shared_ptr<Connection> connection_;
  const net::any_io_executor executor_;
  std::string inbound_;
  size_t inbound_off_ = 0;
  std::string outbound_;
  size_t queued_ = 0;  // taken by the strand or waiting in outbound_, not yet sent
  bool read_paused_ = false;
  bool room_wanted_ = false;  // a writer waits for the queue to drain
  bool write_posted_ = false;
  bool write_shut_ = false;
  bool eof_ = false;
  bool failed_ = false;
  bool closed_ = false;
  bool released_ = false;
  std::string failure_;
  Clock::time_point deadline_ = Clock::time_point::max();
};

// What the handler holds: letting go of it releases the channel.
class UpgradeHandle final : public Duplex {
 public:
  explicit UpgradeHandle(std::shared_ptr<UpgradeChannel> c) : c_(std::move(c)) {}
  ~UpgradeHandle() override { c_->release(); }
  Result<size_t> read(char* out, size_t size) override { return c_->read(out, size); }
  Status write(std::string_view data) override { return c_->write(data); }
  void close_write() override { c_->close_write(); }
  void close() override { c_->close(); }
  void set_deadline(Clock::time_point d) override { c_->set_deadline(d); }

 private:
  std::shared_ptr<UpgradeChannel> c_;
};

}  // namespace vkube::http::detail
