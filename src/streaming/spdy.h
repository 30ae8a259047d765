// SPDY/3.1 as Kubernetes streams use it (the kubelet's and kube-apiserver's
// peer is Go's spdystream): the server's side of one connection. The client
// opens streams (SYN_STREAM with headers such as streamtype, port and
// requestid); each is answered (SYN_REPLY) and becomes a Duplex. Header
// blocks are zlib-compressed with SPDY/3's dictionary, one zlib stream per
// direction. No flow-control windows are kept: spdystream keeps none, and a
// slow reader holds back the connection instead. Private to src/streaming.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vkube/http/duplex.h"
#include "vkube/http/server.h"

namespace vkube::streaming::spdy {

// Whether `req` asks for SPDY/3.1 (Upgrade: SPDY/3.1).
bool is_upgrade(const http::Request& req);
// The values of every X-Stream-Protocol-Version header, in order.
std::vector<std::string> offered_protocols(const http::Request& req);
// The 101 answer choosing `protocol`.
http::Response accept(const std::string& protocol);

using Headers = std::map<std::string, std::string>;  // names lowercased

class Session;

// One stream the client opened: read() gives its data frames' bytes, 0 after
// the client's FIN (or its reset); write() sends data frames; close_write()
// a FIN; close() a reset unless both sides already ended.
class Stream final : public http::Duplex {
 public:
  Stream(std::shared_ptr<Session> session, uint32_t id, Headers headers)
      : session_(std::move(session)), id_(id), headers_(std::move(headers)) {}
  ~Stream() override;

  uint32_t id() const { return id_; }
  const Headers& headers() const { return headers_; }
  std::string header(const std::string& name) const {
    auto it = headers_.find(name);
    return it == headers_.end() ? std::string() : it->second;
  }

  Result<size_t> read(char* out, size_t size) override;
  Status write(std::string_view data) override;
  void close_write() override;
  void close() override;
  void set_deadline(Clock::time_point deadline) override;

 private:
  friend class Session;
  // From the session's reader: data (blocks while too much is unread),
  // the client's FIN, its reset, the session's end.
  void deliver(std::string_view data);
  void remote_fin();
  void reset();

  const std::shared_ptr<Session> session_;
  const uint32_t id_;
  const Headers headers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string in_;
  size_t in_off_ = 0;
  bool remote_done_ = false;
  bool reset_ = false;
  bool local_done_ = false;
  Clock::time_point deadline_ = Clock::time_point::max();
};

// Made with std::make_shared: its streams hold it.
class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(std::shared_ptr<http::Duplex> d);
  ~Session();

  // Reads frames until the client goes away, calling `on_stream` (on this
  // thread; it must hand the stream off, not block) for each stream it
  // opens, after the stream is answered. Returns when the connection ends;
  // its streams are reset then.
  void run(const std::function<void(std::shared_ptr<Stream>)>& on_stream);
  // Ends the session: GOAWAY, then the connection closes; run() returns.
  void close();

 private:
  friend class Stream;
  Status send_data(uint32_t id, std::string_view data, bool fin);
  Status send_control(uint16_t type, uint8_t flags, std::string_view body);
  Status send_headers_frame(uint16_t type, uint32_t id, const Headers& headers, uint8_t flags);
  void forget(uint32_t id);

  struct Zlib;
  std::shared_ptr<http::Duplex> d_;
  std::unique_ptr<Zlib> z_;
  std::mutex write_mu_;
  std::mutex streams_mu_;
  std::map<uint32_t, std::weak_ptr<Stream>> streams_;
  bool closed_ = false;
  // The last stream id the client opened (read by run() only): ids must increase, as spdystream
  // requires, so a stream is never replaced under a reader that still waits on it.
  uint32_t last_id_ = 0;
};

}  // namespace vkube::streaming::spdy
