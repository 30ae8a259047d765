// RFC 6455 WebSocket, the server's side, over an upgraded connection: the
// handshake answer, and messages in both directions. Pings are answered as
// they come; fragmented messages are joined. Private to src/streaming.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "vkube/http/duplex.h"
#include "vkube/http/server.h"
#include "common.h"

namespace vkube::streaming::ws {

enum Opcode : uint8_t {
  kContinuation = 0,
  kText = 1,
  kBinary = 2,
  kClose = 8,
  kPing = 9,
  kPong = 10,
};

// Whether `req` asks for a WebSocket (Upgrade: websocket, a key, version 13).
bool is_upgrade(const http::Request& req);
// The protocols the client offers in Sec-WebSocket-Protocol, in its order.
std::vector<std::string> offered_protocols(const http::Request& req);
// The 101 answer to `req` choosing `protocol` ("" for none).
http::Response accept(const http::Request& req, const std::string& protocol);

struct Message {
  Opcode opcode = kBinary;  // kText or kBinary
  std::string data;
};

// One WebSocket connection. read() is for one thread; send() may be called
// from any number at once.
class Conn {
 public:
  explicit Conn(std::shared_ptr<http::Duplex> d) : d_(std::move(d)) {}

  // The next text or binary message. kCancelled once the peer sent a close
  // frame or the connection ended (its message says which).
  Result<Message> read();
  // One message whose payload is `prefix` then `data` (a channel byte and
  // its bytes), unmasked as a server's are.
  Status send(Opcode opcode, std::string_view prefix, std::string_view data);
  // A close frame (1000: normal) once, then the end of the sending side.
  void close(uint16_t code = 1000, std::string_view reason = {});
  http::Duplex& duplex() { return *d_; }

 private:
  Status fill(size_t need);
  Status frame_out(Opcode opcode, std::string_view prefix, std::string_view data);

  std::shared_ptr<http::Duplex> d_;
  ReadBuffer in_;  // bytes read, not yet parsed
  std::mutex write_mu_;
  bool closed_ = false;  // a close frame was sent (under write_mu_)
};

// The bytes of the binary messages of `conn`, as one stream (SPDY tunnelled
// through a WebSocket, kubectl's port-forward since 1.31): read() gives the
// payloads in order, write() sends each write as one binary message.
std::unique_ptr<http::Duplex> tunnel(std::shared_ptr<Conn> conn);

}  // namespace vkube::streaming::ws
