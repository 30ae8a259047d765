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

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/post.hpp>

#include "connection.h"

namespace vkube::http::detail {

bool set_tls_write_buffer(SSL* ssl, std::string* buffer);  // tls_stream.h

namespace upgrade_limits {

constexpr size_t kInboundLimit = 1u << 20;  // read ahead of the handler

}  // namespace upgrade_limits

// The state of an upgraded connection: its Duplex methods run on the
// handler's threads and wait on cv_; the connection's strand fills the
// inbound buffer. Writes go to the socket from the writing thread itself
// (SSL_write or send, under io_mu_, which the strand's SSL_read takes too):
// no copy into a queue and no hand-off to the strand per write, which for a
// relay cost as much as the encryption. A writer waits for the socket with
// poll(2) outside the lock. The handler holds the channel through an
// UpgradeHandle.
class UpgradeChannel final : public Duplex {
 public:
  // `ssl` (null: plain TCP) and `fd` are the connection's; they stay valid
  // until fail(), which the connection calls before it closes them.
  UpgradeChannel(std::shared_ptr<Connection> connection, std::string already_read, SSL* ssl,
                 int fd)
      : connection_(std::move(connection)), executor_(connection_->executor()), ssl_(ssl), fd_(fd) {
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
    // One write's bytes go out together, even while it waits for the socket
    // with io_mu_ let go.
    std::lock_guard one_writer(write_mu_);
    Clock::time_point deadline;
    {
      std::lock_guard lock(mu_);
      if (closed_) return Status::cancelled("the connection was closed");
      if (failed_) return Status::unavailable(failure_);
      if (write_shut_) return Status::invalid("write after close_write");
      deadline = deadline_;
    }
    std::unique_lock io(io_mu_);
    if (!io_closed_ && ssl_ != nullptr && data.size() > kRecord &&
        set_tls_write_buffer(ssl_, &records_))
      return write_records(io, data, deadline);
    while (!data.empty()) {
      if (io_closed_) return Status::unavailable("the connection was closed");
      short want = POLLOUT;
      if (ssl_ != nullptr) {
        size_t n = 0;
        if (SSL_write_ex(ssl_, data.data(), data.size(), &n) == 1) {
          data.remove_prefix(n);
          continue;
        }
        const int err = SSL_get_error(ssl_, 0);
        ERR_clear_error();
        if (err == SSL_ERROR_WANT_READ) want = POLLIN;
        else if (err != SSL_ERROR_WANT_WRITE) return write_failed(io);
      } else {
        ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) {
          data.remove_prefix(static_cast<size_t>(n));
          continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return write_failed(io);
      }
      // The socket is full: wait for it outside the lock, in slices, so a
      // close in the meantime is noticed.
      io.unlock();
      Status waited = wait_socket(want, deadline);
      io.lock();
      if (!waited.is_ok()) return waited;
    }
    return Status::ok();
  }

  void close_write() override {
    {
      std::lock_guard lock(mu_);
      if (closed_ || write_shut_) return;
      write_shut_ = true;
    }
    shut_sending();
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

  // The handler let go without close(): what it wrote was sent (writes
  // return once it is), so the connection closes as a finished response does.
  void release() {
    bool shut = false;
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      released_ = true;
      shut = !write_shut_;
      write_shut_ = true;
    }
    if (shut) shut_sending();
    std::lock_guard lock(mu_);
    post([](Connection& c) { c.upgrade_flush(); });
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
  // The connection is about to close the socket (and free the SSL): from
  // here on no writer touches them. Waits for a write in progress.
  void fail(std::string why) {
    {
      std::lock_guard io(io_mu_);
      // A writer waiting for the socket leaves its records; the TLS stream must not keep them.
      if (!io_closed_ && ssl_ != nullptr) set_tls_write_buffer(ssl_, nullptr);
      io_closed_ = true;
    }
    std::lock_guard lock(mu_);
    if (!failed_) failure_ = std::move(why);
    failed_ = true;
    connection_.reset();
    cv_.notify_all();
  }
  // The strand's reads of the socket take this too (OpenSSL is not safe for
  // concurrent calls on one SSL).
  std::mutex& io_mutex() { return io_mu_; }

 private:
  // Waits for a change under the deadline; false when it passed.
  bool wait(std::unique_lock<std::mutex>& lock) {
    if (deadline_ == Clock::time_point::max()) {
      cv_.wait(lock);
      return true;
    }
    return cv_.wait_until(lock, deadline_) != std::cv_status::timeout || Clock::now() < deadline_;
  }
  // The handler's side is done sending: close_notify, then FIN.
  void shut_sending() {
    std::lock_guard io(io_mu_);
    if (io_closed_) return;
    if (ssl_ != nullptr) {
      SSL_shutdown(ssl_);  // one attempt is enough before FIN
      ERR_clear_error();
    }
    ::shutdown(fd_, SHUT_WR);
  }
  // Encrypts `data` into records_ (set as the TLS stream's write buffer, under io_mu_) and sends
  // them kBatch at a time: one send(2) for many records. The buffer stays set while the writer
  // waits for the socket, so a record the strand's SSL_read writes meanwhile (a key update)
  // queues behind the ones not yet sent. Records left unsent (a deadline, a closed socket) break
  // the TLS stream, so the connection fails with them.
  Status write_records(std::unique_lock<std::mutex>& io, std::string_view data,
                       Clock::time_point deadline) {
    Status result;
    bool broken = false;
    while (result.is_ok() && !broken && (!data.empty() || records_sent_ < records_.size())) {
      if (io_closed_) {
        result = Status::unavailable("the connection was closed");
        break;
      }
      while (!data.empty() && records_.size() - records_sent_ < kBatch) {
        size_t n = 0;
        if (SSL_write_ex(ssl_, data.data(), data.size(), &n) != 1) {
          ERR_clear_error();
          broken = true;
          break;
        }
        data.remove_prefix(n);
      }
      while (!broken && records_sent_ < records_.size()) {
        ssize_t n = ::send(fd_, records_.data() + records_sent_, records_.size() - records_sent_,
                           MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) {
          records_sent_ += static_cast<size_t>(n);
          continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          broken = true;
          break;
        }
        io.unlock();
        Status waited = wait_socket(POLLOUT, deadline);
        io.lock();
        if (!waited.is_ok()) {
          result = waited;
          break;
        }
        if (io_closed_) {
          result = Status::unavailable("the connection was closed");
          break;
        }
      }
      if (records_sent_ == records_.size()) {
        records_.clear();
        records_sent_ = 0;
      }
    }
    if (!io_closed_) set_tls_write_buffer(ssl_, nullptr);
    broken = broken || (!io_closed_ && records_sent_ < records_.size());
    records_.clear();
    records_sent_ = 0;
    if (broken) {
      Status failed = write_failed(io);
      return result.is_ok() ? failed : result;
    }
    return result;
  }

  Status write_failed(std::unique_lock<std::mutex>& io) {
    io.unlock();
    std::shared_ptr<Connection> c;
    {
      std::lock_guard lock(mu_);
      c = connection_;
    }
    fail("the connection failed");
    if (c) net::post(executor_, [c] { c->close_now(); });
    return Status::unavailable("the connection failed");
  }
  // Waits until the socket is ready for `events`, the deadline passes, or
  // the channel closes (checked every 100 ms: the connection may have
  // closed the descriptor meanwhile).
  Status wait_socket(short events, Clock::time_point deadline) {
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (closed_) return Status::cancelled("the connection was closed");
        if (failed_) return Status::unavailable(failure_);
      }
      int slice = 100;
      if (deadline != Clock::time_point::max()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return Status(Code::kTimeout, "timed out");
        slice = static_cast<int>(std::min<int64_t>(left.count(), 100));
      }
      pollfd p{fd_, events, 0};
      int r = ::poll(&p, 1, slice);
      if (r > 0) return Status::ok();  // ready, or an error the next write reports
      if (r < 0 && errno != EINTR)
        return Status::unavailable(std::string("poll: ") + std::strerror(errno));
    }
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
  SSL* const ssl_;
  const int fd_;
  std::mutex write_mu_;  // one write() at a time
  std::mutex io_mu_;
  // TLS records of the write in progress, and how much of them is sent (write_records).
  static constexpr size_t kRecord = 16 * 1024;
  static constexpr size_t kBatch = 128 * 1024;
  std::string records_;
  size_t records_sent_ = 0;
  bool io_closed_ = false;  // guarded by io_mu_: ssl_ and fd_ are no longer ours
  std::string inbound_;
  size_t inbound_off_ = 0;
  bool read_paused_ = false;
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
