// The kubelet's streaming protocols, served over an upgraded HTTP connection
// (http::Response::upgrade): exec and attach (remotecommand: WebSocket with
// v5/v4/v3/v2/v1.channel.k8s.io and the base64 variants, SPDY/3.1 with
// v4/v3/v2/channel.k8s.io) and port forwarding (SPDY/3.1 portforward.k8s.io,
// WebSocket v4.channel.k8s.io / portforward.k8s.io with the `ports` query
// parameter, and SPDY tunnelled through WebSocket, SPDY/3.1+portforward.k8s.io,
// which kubectl 1.31+ uses by default).
//
// What runs in the container is the caller's: an ExecHandler or a Dialer.
// This module knows the wire, never pods (a node agent serves pods with it;
// a real host's kubelet speaks the same wire, so the tenant only relays bytes).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"
#include "vkube/http/duplex.h"
#include "vkube/http/server.h"

namespace vkube::streaming {

struct TerminalSize {
  uint16_t width = 0;
  uint16_t height = 0;
};

// One exec or attach session's streams, as the container side sees them.
// Blocking. read_stdin, the writes and next_resize may each be called from a
// thread of their own.
class Session {
 public:
  virtual ~Session() = default;
  // What the client sends on stdin (only when the request asked for it):
  // blocks, returns the bytes copied into `out`, 0 once the client closed
  // its stdin or went away.
  virtual Result<size_t> read_stdin(char* out, size_t size) = 0;
  // Makes blocked and later read_stdin calls return 0 and next_resize
  // nullopt: the handler's input threads end with the command, before the
  // handler returns.
  virtual void stop_input() = 0;
  // Output for the client, in order per stream. False once the client is
  // gone (stop producing). With a tty there is no separate stderr: what the
  // handler writes there goes to stdout.
  virtual bool write_stdout(std::string_view data) = 0;
  virtual bool write_stderr(std::string_view data) = 0;
  // Blocks until the client's terminal changes size (tty sessions; the
  // first call returns the initial size if one was sent), nullopt once the
  // session ends.
  virtual std::optional<TerminalSize> next_resize() = 0;
  // Whether the client has gone: the handler ends an exec's process, or
  // detaches an attach.
  virtual bool client_gone() const = 0;
};

// The query of an exec or attach request (kube's PodExecOptions /
// PodAttachOptions): command (repeated `command=` parameters), container,
// stdin, stdout, stderr, tty.
struct ExecOptions {
  std::vector<std::string> command;  // exec only; never empty for exec
  std::string container;
  // Absent parameters are false, as kube's query conversion has them.
  bool stdin = false;
  bool stdout = false;
  bool stderr = false;
  bool tty = false;
};

// The query of `req` as ExecOptions. kBadRequest with kube's messages: an
// exec without a command, no stream asked for ("you must specify at least
// 1 of stdin, stdout, stderr"), tty with stderr.
Result<ExecOptions> parse_exec_options(const http::Request& req, bool attach);

// How an exec or attach ended. `code` is the command's exit code (0:
// success); `message`, when set, says why it could not run at all
// (reported to the client as a Failure Status with that message).
struct ExitStatus {
  int code = 0;
  std::string message;
};

// The container side of an exec or attach: runs with the session's streams
// until the command ends (or, for attach, the client detaches). Called on a
// thread of the session's own; may block.
using ExecHandler = std::function<ExitStatus(const ExecOptions&, Session&)>;

// Answers an exec or attach request: picks the protocol from the request's
// Upgrade, Sec-WebSocket-Protocol and X-Stream-Protocol-Version headers and
// returns the 101 answer, whose upgrade runs `handler` and then reports its
// ExitStatus on the error (status) stream and closes. A request that is no
// upgrade, or offers no protocol this side speaks, gets kube's 400 or 403
// Status answer.
http::Response serve_exec(const http::Request& req, ExecOptions options, ExecHandler handler);

// Opens a connection to `port` of the pod for a port-forward stream.
// kUnavailable (with the reason the client will see) when nothing listens.
using Dialer = std::function<Result<std::unique_ptr<http::Duplex>>(uint16_t port)>;

// Answers a portforward request in any of the protocols above, relaying
// each forwarded connection through `dial`.
http::Response serve_port_forward(const http::Request& req, Dialer dial);

}  // namespace vkube::streaming
