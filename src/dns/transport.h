// The Asio side of the DNS server (private to src/dns): TCP connections and
// the upstream forwarder. Everything runs on the server's one I/O thread, so
// none of these types locks.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "vkube/common/status.h"
#include "vkube/dns/message.h"

namespace vkube::dns::transport {

namespace net = boost::asio;
using udp = net::ip::udp;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

using Respond = std::function<void(std::string reply)>;
// Answers one client packet, now or later, through `respond` (at most once;
// never for a dropped packet).
using Dispatch = std::function<void(std::string packet, bool udp, Respond respond)>;

// "ip", "ip:port", "[v6]:port" or "v6" with `default_port`.
Result<udp::endpoint> parse_endpoint(std::string_view text, uint16_t default_port);

// Asks upstream resolvers over UDP, one after the other, each with a fresh
// socket (a random source port) and a random id, until one gives a matching
// answer within the timeout.
class Forwarder {
 public:
  using Done = std::function<void(std::optional<std::string> answer)>;

  Forwarder(net::io_context& ioc, std::vector<udp::endpoint> upstreams,
            std::chrono::milliseconds timeout);
  // Sends `query` (its id is replaced) about `question`; `done` gets the
  // first matching answer, or nullopt when every upstream failed or too many
  // queries are already in flight.
  void exchange(std::string query, Question question, Done done);
  const std::vector<udp::endpoint>& upstreams() const { return upstreams_; }

 private:
  friend class Exchange;
  net::io_context& ioc_;
  std::vector<udp::endpoint> upstreams_;
  std::chrono::milliseconds timeout_;
  std::mt19937 random_;
  std::shared_ptr<size_t> in_flight_;
};

// Serves one TCP client: 2-byte length-prefixed queries, answered in the
// order they complete (RFC 7766 allows it), until the client closes, stays
// idle past `idle_timeout` or sends something unframeable.
class TcpConnection : public std::enable_shared_from_this<TcpConnection> {
 public:
  TcpConnection(tcp::socket socket, Dispatch& dispatch, std::chrono::milliseconds idle_timeout,
                std::shared_ptr<size_t> open_count);
  ~TcpConnection();
  void start();

 private:
  void read_length();
  void read_body(size_t length);
  void send(std::string reply);
  void write_next();
  void end_of_queries();
  void close_when_done();
  void close();

  tcp::socket socket_;
  net::steady_timer idle_;
  Dispatch& dispatch_;
  std::chrono::milliseconds idle_timeout_;
  std::shared_ptr<size_t> open_count_;
  unsigned char length_[2] = {};
  std::string body_;
  std::deque<std::string> out_;  // framed answers not yet written
  size_t pending_ = 0;           // queries dispatched and not answered
  bool writing_ = false;
  bool reading_done_ = false;
  bool closed_ = false;
};

}  // namespace vkube::dns::transport
