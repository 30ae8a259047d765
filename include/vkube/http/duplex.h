// Byte streams in both directions: an HTTP connection after its response
// head (a 101 Switching Protocols to WebSocket or SPDY, or a proxied answer
// relayed as raw bytes), a TCP connection, a TLS client connection. The
// streaming protocols (src/streaming), the node agent's port-forwards and
// the tenant's proxy to its host all move bytes through this one interface.
//
// Blocking, so that each session is plain sequential code on its own
// threads: one reader and one writer may use a Duplex at once, from two
// threads; close() may be called from any thread at any time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace vkube::http {

struct Header;

class Duplex {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~Duplex() = default;  // closes

  // Blocks until bytes arrive, then copies up to `size` of them into `out`
  // and returns how many (at least 1). 0: the peer finished sending, after
  // its last byte. kCancelled once close() was called, kTimeout when the
  // deadline passed first, kUnavailable when the connection failed.
  virtual Result<size_t> read(char* out, size_t size) = 0;
  // Blocks until all of `data` is taken: sent, or queued within the
  // stream's buffer limit (so a writer is held back by a slow reader, never
  // buffered without bound). Errors as read().
  virtual Status write(std::string_view data) = 0;
  // Ends the sending direction after what was written (TCP FIN; under TLS
  // close_notify first): the peer reads end of stream. Reading goes on.
  virtual void close_write() = 0;
  // Ends both directions now; blocked and later read() and write() return
  // kCancelled. Idempotent; thread-safe.
  virtual void close() = 0;
  // The time after which blocked and later reads and writes fail with
  // kTimeout; Clock::time_point::max() (the default) for none.
  virtual void set_deadline(Clock::time_point deadline) = 0;
};

// Bytes copied by relay().
struct RelayCounts {
  uint64_t a_to_b = 0;
  uint64_t b_to_a = 0;
};

// Copies both directions between `a` and `b` until both have ended: the end
// of one direction becomes close_write() on the other side; a failure on
// either closes both. Blocks the calling thread, and one more that it
// starts, until then.
RelayCounts relay(Duplex& a, Duplex& b);

// Writes all of `data` (a convenience over write() for callers that have
// several pieces); the first failure.
Status write_all(Duplex& d, std::initializer_list<std::string_view> pieces);

// A connected stream socket (TCP, a socketpair) as a Duplex; owns `fd`.
std::unique_ptr<Duplex> socket_duplex(int fd);
// Connects to `host` (an IPv4 or IPv6 literal, or a name to resolve) on
// `port` within `timeout`. kUnavailable naming the address and the reason
// (refused, unreachable, timed out).
Result<std::unique_ptr<Duplex>> dial_tcp(const std::string& host, uint16_t port,
                                         std::chrono::milliseconds timeout);
// A TLS client over the connected `tcp` (taken over): handshakes with `ctx`
// (not owned; must outlive the Duplex), sending `server_name` as SNI and, when
// `ctx` verifies peers, checking the certificate against it. kUnavailable
// (kForbidden-like reasons in the message) when the handshake fails.
Result<std::unique_ptr<Duplex>> tls_client(std::unique_ptr<Duplex> tcp, ssl_ctx_st* ctx,
                                           const std::string& server_name,
                                           std::chrono::milliseconds timeout);

// `d` with `already_read` served by read() first: the bytes a head parser
// read past the head.
std::unique_ptr<Duplex> with_prefix(std::unique_ptr<Duplex> d, std::string already_read);

// HTTP/1.1 over a Duplex, for the clients that need more than the host
// client's JSON calls (the tenant's proxy to its host, admission webhooks).
struct ResponseHead {
  int status = 0;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;
  // Bytes read after the head: the start of the body (or of the upgraded
  // protocol).
  std::string rest;
  // First header with this name (case-insensitive), or "".
  std::string_view header(std::string_view name) const;
};

// Sends a request head ("GET /x HTTP/1.1", the headers, a blank line) and
// `body`. Adds Content-Length when `body` is not empty and the headers have
// none.
Status write_request(Duplex& d, std::string_view method, std::string_view target,
                     const std::vector<std::pair<std::string, std::string>>& headers,
                     std::string_view body = {});
// Reads a response's status line and headers (at most 64 KiB); kUnavailable
// when the peer closed first, kBadRequest when what came is not HTTP.
Result<ResponseHead> read_response_head(Duplex& d);
// Reads the body that follows `head` whole (Content-Length, chunked, or up to
// end of stream), refusing more than `limit` bytes with kTooLarge.
Result<std::string> read_response_body(Duplex& d, ResponseHead& head, size_t limit);

}  // namespace vkube::http
