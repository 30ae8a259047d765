// The HTTP transport: Boost.Beast/Asio behind plain value types.
//
// One port serves HTTP/1.1 over TLS when TLS is configured (a cleartext
// request there gets Go's 400 "Client sent an HTTP request to an HTTPS
// server." unless ServerOptions::cleartext_allowed lets it in), plain HTTP
// otherwise; with keep-alive, read/idle timeouts, a request body limit (413),
// chunked streaming responses (for watch) and graceful shutdown. Request
// framing is as strict as Go's net/http: a Transfer-Encoding other than one
// "chunked" field gets 501 "Unsupported transfer encoding".
// Nothing above this header includes Beast or Asio: the API server only sees
// Request, Response and ResponseStream. The transport never sees Kubernetes
// types.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"
#include "vkube/http/duplex.h"

namespace vkube::http {

struct Header {
  std::string name;
  std::string value;
};

// Identity from a client certificate that verified against the client CA.
struct PeerCertificate {
  std::string common_name;                 // subject CN: the user name
  std::vector<std::string> organizations;  // subject O entries: the groups
};

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: "/api/v1/pods?limit=500"
  std::string path;    // target before '?', percent-decoded
  std::string query;   // target after '?', raw (see query_param)
  std::vector<Header> headers;
  std::string body;
  std::string remote;  // "127.0.0.1:40312"
  bool tls = false;
  std::optional<PeerCertificate> peer;

  // First header with this name (case-insensitive), or "" when absent.
  std::string_view header(std::string_view name) const;
};

// Decoded value of the first query parameter `name`, or nullopt.
std::optional<std::string> query_param(std::string_view query, std::string_view name);
// All parameters in order, decoded ('+' as space, %XX).
std::vector<std::pair<std::string, std::string>> parse_query(std::string_view query);
std::string percent_decode(std::string_view in, bool plus_as_space);

class StreamSink;

// A response body produced over time (a watch). The transport sends the
// status and headers with Transfer-Encoding: chunked, then calls start()
// once with a sink; the producer writes chunks until it or the client ends.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // Called on a transport thread; must not block. Keep the sink to write.
  virtual void start(std::shared_ptr<StreamSink> sink) = 0;
  // The client went away, was too slow (see StreamSink::write) or the server
  // is shutting down; stop producing. Called at most once, after start(), on
  // a transport thread; not called when the producer ended the stream with
  // StreamSink::close(). Must not block.
  virtual void stop() = 0;
};

// A transport thread, as the producers of streams see it. A producer that
// feeds many streams at once (one watch event to a thousand watchers) runs
// its work for all the streams of one thread in one task there, and writes
// with StreamSink::write_here: no hand-off per stream.
class StreamHome {
 public:
  virtual ~StreamHome() = default;
  // Runs `task` on this thread, after the handlers queued there before it.
  // Thread-safe; never runs `task` inline. Once the transport has shut down,
  // tasks are destroyed unrun.
  virtual void post(std::function<void()> task) = 0;
};

// Where a ResponseStream writes. Thread-safe; all methods are non-blocking.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // Queues one chunk (an empty one is ignored: it would end the response).
  // Queued chunks are sent in order, several per socket write. Returns false
  // once the stream is closed, or when more than the transport's stream
  // buffer limit would be queued unsent (the client is too slow): the
  // transport then closes the connection and calls stop().
  virtual bool write(std::string chunk) = 0;
  // Ends the response (the terminating zero-length chunk) after queued
  // chunks; the transport then closes the connection. Later writes fail.
  virtual void close() = 0;
  // The thread that sends this stream's chunks, or null when the sink has
  // none to offer (write from any thread).
  virtual std::shared_ptr<StreamHome> home() { return nullptr; }
  // write(), for a caller on home()'s thread, in a task it posted there:
  // sends the chunk to the socket before returning when nothing is queued
  // before it and the socket takes it; otherwise queues it as write() does.
  virtual bool write_here(std::string_view chunk) { return write(std::string(chunk)); }
};

class DeferredResponse;

struct Response {
  int status = 200;
  std::vector<Header> headers;  // Content-Type etc.; Content-Length is set by the transport
  std::string body;
  // When set, the body instead of `body` (left empty): bytes shared with
  // other answers and never changed (identical LISTs answered at once), sent
  // without a copy.
  std::shared_ptr<const std::string> shared_body;
  std::shared_ptr<ResponseStream> stream;  // when set, body is ignored
  // When set, the rest is ignored: the answer comes later (DeferredResponse).
  std::shared_ptr<DeferredResponse> deferred;
  // When set, the connection is the handler's after this head: a protocol
  // switch (101 with Upgrade and Connection headers, for WebSocket or SPDY),
  // or a proxied answer whose body the handler relays as raw bytes. The
  // transport sends `status` and `headers` exactly as given (no
  // Content-Length, no chunking; `body` is ignored), then calls `upgrade`
  // with the connection, on a transport thread: it must not block (it hands
  // the Duplex to a thread of its own). The connection closes once the
  // Duplex is closed or released; it is never kept alive for another
  // request, has no read or idle timeout, and server shutdown closes it.
  // Called with nullptr when the head could not be sent (the client went
  // away, the server is stopping).
  std::function<void(std::shared_ptr<Duplex>)> upgrade;
  // Kept until the transport has sent this response (or dropped it: the
  // client went away), then released on a transport thread: what the
  // answer keeps in use beyond its handler, e.g. an in-flight slot and the
  // memory its body holds. Streams and upgrades release it once their head
  // is out.
  std::shared_ptr<void> lease;

  void set_header(std::string name, std::string value);
  // The body's bytes, shared or not.
  std::string_view body_bytes() const { return shared_body ? *shared_body : body; }
};

// An answer its handler gives later, from any thread: the handler returns a
// Response with only `deferred` set, and whoever finishes the work (a durable
// write's commit) calls complete() exactly once. The handler's thread is free
// for other requests meanwhile. The layers between the handler and the
// transport add their part (metrics, headers) with then().
class DeferredResponse {
 public:
  // Runs `step` on the final response before the client gets it, after the
  // steps added before it; at once when the response is already complete.
  void then(std::function<void(Response&)> step);
  void complete(Response response);
  // For the transport: `deliver` gets the final response, once.
  void on_complete(std::function<void(Response)> deliver);
  // `r` itself, or when deferred its final response, waited for.
  static Response wait(Response r);
  // Runs `step` on `r` now, or on its final response when `r` is deferred.
  static void finally(Response& r, std::function<void(Response&)> step);

 private:
  std::mutex mu_;
  std::vector<std::function<void(Response&)>> steps_;
  std::optional<Response> done_;
  std::function<void(Response)> deliver_;
};

// Handles one request. Runs on a worker thread (not an I/O thread), so it may
// block on storage; many run concurrently.
using Handler = std::function<Response(Request&)>;

struct TlsConfig {
  std::string cert_pem;       // serving certificate chain
  std::string key_pem;        // its private key
  std::string client_ca_pem;  // CA for client certificates; empty = none asked
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0 = pick a free port (see Server::port)
  std::optional<TlsConfig> tls;  // when set, the port speaks TLS (see cleartext_allowed)
  // On a TLS port, which cleartext requests are served anyway (a health
  // probe that cannot speak TLS): called with the method and the target as
  // sent. A request that carries an Authorization header is never served
  // in cleartext. Null, or false: Go's net/http answer "HTTP/1.0 400 Bad
  // Request" with "Client sent an HTTP request to an HTTPS server.\n", and
  // the connection closes. Unused without `tls`.
  std::function<bool(std::string_view method, std::string_view target)> cleartext_allowed;
  size_t body_limit = 3u << 20;  // larger bodies get 413
  // To receive a whole request (from its first byte, or from accept for the
  // first request including the TLS handshake), and to write a response
  // (not a stream). 0 = none.
  std::chrono::seconds read_timeout{30};
  std::chrono::seconds idle_timeout{120};  // keep-alive connection idle; 0 = none
  size_t io_threads = 1;
  size_t worker_threads = 64;             // concurrent handlers
  // Requests for which this returns true run the handler on the I/O thread
  // that read them, without the hand-off to a worker (a wake-up of another
  // thread, and one back). Only for requests the handler answers without
  // blocking: at once, or with a DeferredResponse. Null: all go to workers.
  std::function<bool(const Request&)> runs_inline;
  size_t stream_buffer_limit = 16u << 20; // unsent stream bytes before cut-off
};

class Server {
 public:
  // Binds and starts serving. kUnavailable when the address is taken,
  // kInvalid for a bad host or TLS material.
  static Result<std::unique_ptr<Server>> start(ServerOptions options, Handler handler);
  virtual ~Server() = default;

  virtual uint16_t port() const = 0;
  // Stops accepting, stops streams (ending each with its last chunk), lets
  // in-flight requests finish for up to `grace`, then closes every connection
  // and joins the I/O threads and the workers (a handler still running after
  // `grace` is waited for; queued ones are skipped unanswered). Idempotent; the
  // destructor calls it with no grace. Must not be called from a handler or a
  // stream callback: it joins the threads that run them.
  virtual void shutdown(std::chrono::milliseconds grace) = 0;
  // Connections accepted and not yet closed. Thread-safe.
  virtual size_t open_connections() const = 0;
  // TLS handshakes completed, and those of them that resumed an earlier
  // session (no certificate exchange). Thread-safe.
  virtual uint64_t tls_handshakes() const = 0;
  virtual uint64_t tls_resumptions() const = 0;
};

}  // namespace vkube::http
