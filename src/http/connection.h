// One client connection: TLS detection, request reading, handler dispatch,
// response writing and chunked streaming. Private to the transport.
//
// Every member is used on the connection's strand, except request_ and
// response_, which belong to the worker thread while a handler runs, and to
// the thread that completes a deferred response until it posts it (the
// strand does not touch them in State::kHandling; the posts between them
// order the accesses).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "worker_pool.h"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "tls_stream.h"
#include "vkube/http/server.h"
#include "wire.h"

namespace vkube::http::detail {

namespace net = boost::asio;
namespace beast = boost::beast;
using error_code = boost::system::error_code;

class Connection;
class SinkImpl;
class UpgradeChannel;

// A StreamHome for one io_context, which exactly one I/O thread runs: a task
// posted there runs on the thread of every connection of that io_context,
// never beside their handlers.
class IoHome final : public StreamHome {
 public:
  explicit IoHome(net::io_context& ioc) : ioc_(&ioc) {}
  void post(std::function<void()> task) override;
  // The io_context is about to go: later tasks are dropped.
  void close();

 private:
  std::mutex mu_;
  net::io_context* ioc_;
};

// State shared by the server, its connections and the worker threads.
class ServerCore {
 public:
  ServerCore(ServerOptions options, Handler handler, std::unique_ptr<net::ssl::context> tls)
      : options(std::move(options)), handler(std::move(handler)), tls(std::move(tls)) {}

  const ServerOptions options;
  const Handler handler;
  const std::unique_ptr<net::ssl::context> tls;  // null: plain HTTP only
  std::optional<WorkerPool> workers;             // runs handlers; made by Server once listening
  std::atomic<bool> stopping{false};             // shutdown began: no new requests or streams
  std::atomic<bool> abandon{false};              // grace is over: queued handlers are skipped
  std::atomic<uint64_t> tls_handshakes{0};       // completed
  std::atomic<uint64_t> tls_resumptions{0};      // of those, resumed sessions

  void add(const std::shared_ptr<Connection>& c);
  void remove(Connection* c);
  std::vector<std::shared_ptr<Connection>> connections();
  size_t open() const { return open_.load(); }
  void connection_opened() { open_.fetch_add(1); }
  void connection_closed();
  void handler_started();
  void handler_finished();
  // Waits until no handler runs and no connection is open, or until `deadline`.
  bool wait_quiet(std::chrono::steady_clock::time_point deadline);

 private:
  void notify_waiter();

  std::atomic<size_t> open_{0};
  std::atomic<size_t> in_flight_{0};
  std::mutex mu_;  // guards conns_; pairs with cv_ for wait_quiet()
  std::condition_variable cv_;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> conns_;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `home` is the StreamHome of the io_context `socket` belongs to.
  Connection(ServerCore& core, net::ip::tcp::socket socket, std::shared_ptr<IoHome> home);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const net::any_io_executor& executor() const { return executor_; }

  // The following run on the strand (or, for close_now, on the shutdown
  // thread once every I/O and worker thread has been joined).
  void start();
  // Shutdown began: finish the current response or stream, then close.
  void shutdown_graceful();
  // Closes the socket at once; stops a running stream.
  void close_now();
  // A stream sink queued data or was closed by its producer (stream.cpp).
  void flush_stream();
  // A stream sink went over the buffer limit (stream.cpp).
  void on_stream_overflow();
  // SinkImpl::write_here, on the connection's thread: frames `chunk` and
  // sends it now. kNotNow when earlier bytes are still unsent (the caller
  // queues the chunk instead); kClosed when the connection closed.
  enum class DirectWrite { kDone, kNotNow, kClosed };
  DirectWrite write_stream_now(std::string_view chunk);

 private:
  enum class State {
    kDetecting,
    kHandshaking,
    kIdle,
    kReading,
    kHandling,
    kWriting,
    kStreaming,
    kUpgrading,  // an upgrade's head is on its way
    kUpgraded,   // the connection is the handler's (upgrade.cpp)
    kClosing,
    kClosed
  };

  template <typename Fn>
  void with_stream(Fn&& fn) {
    if (tls_) {
      fn(*tls_);
    } else {
      fn(tcp_);
    }
  }
  beast::tcp_stream& lowest() { return tls_ ? tls_->next_layer() : tcp_; }
  // Sets the deadline for the next reads and writes; 0 means none.
  void arm(std::chrono::seconds timeout);

  // connection.cpp: requests and plain responses.
  void on_detect(error_code ec, bool is_tls);
  void on_handshake(error_code ec);
  void read_next();
  void on_idle_data(error_code ec, size_t n);
  void read_request();
  void on_header(error_code ec, size_t n);
  void on_continue_sent(error_code ec, size_t n);
  void on_body(error_code ec, size_t n);
  void on_read_error(error_code ec);
  // Go's net/http refusals, written as it writes them (no Status body), then
  // the connection closes: a cleartext request on a TLS port (false when the
  // request does not look like one Go answers: the connection just closes),
  // and a transfer-coding other than chunked.
  bool cleartext_refused();
  void refuse_cleartext();
  bool transfer_encoding_refused();
  void send_raw(std::string_view bytes);
  void dispatch();
  // On a worker thread, or on the strand for a request that runs inline.
  void run_handler(bool on_strand);
  void on_response();
  void send_error(int code, std::string_view reason, std::string_view message);
  void write_response();
  void on_written(error_code ec, size_t n);
  void close_gracefully();
  void drain();
  void on_drained(error_code ec, size_t n);

  // stream.cpp: chunked streaming responses.
  void begin_stream();
  void on_stream_head(error_code ec, size_t n);
  void watch_peer();
  void on_peer_data(error_code ec, size_t n);
  // Builds the next write from what the sink holds; false when it holds nothing.
  bool next_stream_write();
  enum class SendResult { kProgress, kBlocked, kFailed };
  // Sends what it can of stream_out_ now, without blocking.
  SendResult send_stream_bytes();
  // Waits for the socket to take more of stream_out_.
  void wait_stream_writable();
  void on_stream_writable(error_code ec);
  void end_stream_for_shutdown();
  // Calls stream_->stop() once, unless the producer ended the stream itself.
  void stop_stream();

  // upgrade.cpp: a connection handed to its handler after the head.
 public:
  // From UpgradeChannel, posted to the strand: the reader made room, the
  // writer queued bytes or asked to close its direction.
  void upgrade_resume_read();
  void upgrade_flush();

 private:
  void begin_upgrade();
  void on_upgrade_head(error_code ec, size_t n);
  // Reads what the socket has into the channel until it would block or the
  // channel is full.
  void upgrade_read();
  void upgrade_wait(bool for_read);
  void upgrade_finish();
  enum class IoResult { kData, kBlocked, kWantWrite, kEof, kFailed };
  IoResult upgrade_recv(char* out, size_t size, size_t* n);

  ServerCore& core_;
  net::any_io_executor executor_;  // a strand
  std::shared_ptr<IoHome> home_;
  beast::tcp_stream tcp_;          // moved into tls_ once TLS is detected
  std::optional<TlsStream> tls_;
  beast::flat_buffer buffer_;
  std::optional<beast::http::request_parser<beast::http::string_body>> parser_;
  State state_ = State::kDetecting;
  bool keep_alive_ = false;
  bool http10_ = false;
  bool head_request_ = false;
  bool open_counted_ = true;  // still counted in ServerCore::open()
  bool cleartext_on_tls_ = false;  // a TLS port, spoken to without TLS

  std::string remote_;
  std::optional<PeerCertificate> peer_;
  Request request_;
  Response response_;
  std::string head_;  // serialized status line and headers, reused
  std::array<net::const_buffer, 2> response_buffers_;

  // Streaming (stream.cpp).
  std::shared_ptr<ResponseStream> stream_;
  std::shared_ptr<SinkImpl> sink_;
  bool stream_head_sent_ = false;
  bool stream_started_ = false;
  bool stream_writing_ = false;  // the head is on its way, or waiting for the socket
  bool stream_stop_called_ = false;
  bool stream_last_sent_ = false;
  bool stream_shutdown_ = false;
  size_t stream_payload_ = 0;  // chunk bytes in stream_out_
  std::vector<std::string> stream_batch_;
  std::string stream_out_;  // framed chunks (plaintext under TLS) being sent
  size_t stream_out_sent_ = 0;

  // Upgraded (upgrade.cpp).
  std::function<void(std::shared_ptr<Duplex>)> upgrade_;
  std::shared_ptr<UpgradeChannel> channel_;  // reset by close_now
  bool up_read_waiting_ = false;   // an async_wait for the socket is pending for reads
  bool up_read_paused_ = false;    // the channel is full; the reader resumes us
  bool up_read_eof_ = false;
  std::string up_in_;   // read buffer
};

}  // namespace vkube::http::detail
