// Port forwarding: SPDY (a data and an error stream per forwarded
// connection, paired by requestid), the same SPDY tunnelled through a
// WebSocket (kubectl 1.31+), and the WebSocket channel protocol with the
// `ports` query parameter (the Python client).
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "common.h"
#include "spdy.h"
#include "vkube/common/base64.h"
#include "vkube/common/log.h"
#include "vkube/streaming/streaming.h"
#include "websocket.h"

namespace vkube::streaming {

namespace {

using json = nlohmann::json;

constexpr const char* kSpdyOverWebSocket = "SPDY/3.1+portforward.k8s.io";
constexpr const char* kPortForward = "portforward.k8s.io";


std::optional<uint16_t> parse_port(std::string_view s) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v == 0 || v > 65535) return std::nullopt;
  return static_cast<uint16_t>(v);
}

// Relays one forwarded connection both ways. When the client ends its side
// (kubectl does when the local connection closes, and cannot reset the
// stream after that), the pod's side is shut for writing and has a moment to
// finish what it sends; then the pod connection is closed, so that a pod
// that only talks (a download) does not stream into a dead connection.
void relay_port(http::Duplex& client, http::Duplex& pod) {
  constexpr auto kDrain = std::chrono::seconds(1);
  std::mutex mu;
  std::condition_variable cv;
  bool down_done = false;
  std::thread down([&] {
    std::unique_ptr<char[]> buf(new char[256 * 1024]);
    for (;;) {
      Result<size_t> n = pod.read(buf.get(), 256 * 1024);
      if (!n.is_ok() || *n == 0) break;
      if (!client.write(std::string_view(buf.get(), *n)).is_ok()) {
        pod.close();
        break;
      }
    }
    client.close_write();
    std::lock_guard lock(mu);
    down_done = true;
    cv.notify_all();
  });
  std::unique_ptr<char[]> buf(new char[256 * 1024]);
  for (;;) {
    Result<size_t> n = client.read(buf.get(), 256 * 1024);
    if (!n.is_ok()) break;
    if (*n == 0) {
      pod.close_write();
      break;
    }
    if (!pod.write(std::string_view(buf.get(), *n)).is_ok()) break;
  }
  {
    std::unique_lock lock(mu);
    cv.wait_for(lock, kDrain, [&] { return down_done; });
  }
  pod.close();  // ends the reader above if the pod still talks
  down.join();
}

// One forwarded connection of a SPDY session: dials, then relays.
void forward_pair(std::shared_ptr<spdy::Stream> error, std::shared_ptr<spdy::Stream> data,
                  const Dialer& dial) {
  auto port = parse_port(data->header("port"));
  if (!port) {
    (void)error->write("invalid port \"" + data->header("port") + "\"");
    error->close_write();
    data->close();
    return;
  }
  auto conn = dial(*port);
  if (!conn.is_ok()) {
    (void)error->write(conn.status().message());
    error->close_write();
    data->close_write();
    return;
  }
  std::unique_ptr<http::Duplex> pod = std::move(conn).value();
  relay_port(*data, *pod);
  error->close_write();
}

// A SPDY port-forward session over `d` until the client ends it.
void run_spdy(std::shared_ptr<http::Duplex> d, Dialer dial) {
  auto session = std::make_shared<spdy::Session>(std::move(d));
  struct Pending {
    std::shared_ptr<spdy::Stream> error, data;
  };
  std::map<std::string, Pending> pending;  // by requestid; the reader's alone
  session->run([&](std::shared_ptr<spdy::Stream> s) {
    const std::string type = s->header("streamtype");
    std::string id = s->header("requestid");
    // Clients before requestid: the data stream follows its error stream.
    if (id.empty())
      id = std::to_string(type == "data" ? s->id() - 2 : s->id());
    Pending& p = pending[id];
    if (type == "error") p.error = std::move(s);
    else if (type == "data") p.data = std::move(s);
    else {
      s->close();
      pending.erase(id);
      return;
    }
    if (p.error && p.data) {
      std::thread([e = std::move(p.error), dt = std::move(p.data), dial] {
        forward_pair(e, dt, dial);
      }).detach();
      pending.erase(id);
    }
  });
}

// The WebSocket channel protocol: per port i, data on channel 2i and errors
// on 2i+1; the first message of each channel from this side is the port,
// two bytes little-endian.
void run_ws_channels(std::shared_ptr<http::Duplex> d, std::vector<uint16_t> ports, bool base64,
                     Dialer dial) {
  auto conn = std::make_shared<ws::Conn>(d);
  auto send = [&, conn](uint8_t ch, std::string_view data) {
    if (!base64) {
      char c = static_cast<char>(ch);
      return conn->send(ws::kBinary, std::string_view(&c, 1), data).is_ok();
    }
    char c = static_cast<char>('0' + ch);
    return conn->send(ws::kText, std::string_view(&c, 1), base64_encode(data)).is_ok();
  };
  std::vector<std::shared_ptr<http::Duplex>> pods(ports.size());
  std::vector<std::thread> pumps;
  std::atomic<size_t> live{0};
  for (size_t i = 0; i < ports.size(); ++i) {
    char port[2] = {static_cast<char>(ports[i] & 0xff), static_cast<char>(ports[i] >> 8)};
    send(static_cast<uint8_t>(2 * i), std::string_view(port, 2));
    send(static_cast<uint8_t>(2 * i + 1), std::string_view(port, 2));
    auto c = dial(ports[i]);
    if (!c.is_ok()) {
      send(static_cast<uint8_t>(2 * i + 1), c.status().message());
      continue;
    }
    pods[i] = std::shared_ptr<http::Duplex>(std::move(c).value());
    ++live;
  }
  for (size_t i = 0; i < ports.size(); ++i) {
    if (!pods[i]) continue;
    pumps.emplace_back([&, i, pod = pods[i]] {
      std::string buf(256 << 10, '\0');
      for (;;) {
        auto n = pod->read(buf.data(), buf.size());
        if (!n.is_ok() || *n == 0) break;
        if (!send(static_cast<uint8_t>(2 * i), std::string_view(buf.data(), *n))) break;
      }
      // Every port's connection ended: so does the session.
      if (--live == 0) conn->close(1000);
    });
  }
  if (live == 0) conn->close(1000);
  for (;;) {
    auto m = conn->read();
    if (!m.is_ok()) break;
    if (m->data.empty()) continue;
    uint8_t ch = static_cast<uint8_t>(m->data[0]);
    std::string body = m->data.substr(1);
    if (base64) {
      ch = static_cast<uint8_t>(ch - '0');
      auto decoded = base64_decode(body);
      if (!decoded) continue;
      body = std::move(*decoded);
    }
    size_t i = ch / 2;
    if (ch % 2 == 0 && i < pods.size() && pods[i])
      if (!pods[i]->write(body).is_ok()) pods[i]->close();
  }
  for (auto& p : pods)
    if (p) p->close();
  for (auto& t : pumps) t.join();
  conn->close(1000);
  d->close();
}

}  // namespace

http::Response serve_port_forward(const http::Request& req, Dialer dial) {
  if (ws::is_upgrade(req)) {
    auto offered = ws::offered_protocols(req);
    if (std::find(offered.begin(), offered.end(), kSpdyOverWebSocket) != offered.end()) {
      http::Response r = ws::accept(req, kSpdyOverWebSocket);
      r.upgrade = [dial](std::shared_ptr<http::Duplex> d) {
        if (!d) return;
        std::thread([d, dial] {
          auto conn = std::make_shared<ws::Conn>(d);
          run_spdy(std::shared_ptr<http::Duplex>(ws::tunnel(conn)), dial);
        }).detach();
      };
      return r;
    }
    std::string protocol;
    for (const auto& p : offered)
      if (p == "v4.channel.k8s.io" || p == "v4.base64.channel.k8s.io" || p == kPortForward) {
        protocol = p;
        break;
      }
    if (protocol.empty() && !offered.empty())
      return refuse(400, "requested protocol(s) are not supported: none of the offered "
                         "WebSocket protocols is " + std::string(kSpdyOverWebSocket) +
                         ", v4.channel.k8s.io or v4.base64.channel.k8s.io");
    std::vector<uint16_t> ports;
    for (auto& [k, v] : http::parse_query(req.query)) {
      if (k != "ports") continue;
      std::string_view list = v;
      while (!list.empty()) {
        size_t comma = list.find(',');
        auto port = parse_port(list.substr(0, comma));
        if (!port)
          return refuse(400, "unable to parse \"" + std::string(list.substr(0, comma)) +
                                 "\" as a port: must be an integer between 1 and 65535");
        ports.push_back(*port);
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
      }
    }
    if (ports.empty()) return refuse(400, "query parameter \"ports\" is required");
    http::Response r = ws::accept(req, protocol);
    const bool base64 = protocol.find("base64") != std::string::npos;
    r.upgrade = [dial, ports, base64](std::shared_ptr<http::Duplex> d) {
      if (!d) return;
      std::thread([d, dial, ports, base64] { run_ws_channels(d, ports, base64, dial); }).detach();
    };
    return r;
  }
  if (spdy::is_upgrade(req)) {
    auto offered = spdy::offered_protocols(req);
    if (std::find(offered.begin(), offered.end(), kPortForward) == offered.end()) {
      std::string list = "[";
      for (size_t i = 0; i < offered.size(); ++i) list += (i ? " " : "") + offered[i];
      return refuse(403, "unable to upgrade: unable to negotiate protocol: client supports " +
                             list + "], server accepts [" + kPortForward + "]");
    }
    http::Response r = spdy::accept(kPortForward);
    r.upgrade = [dial](std::shared_ptr<http::Duplex> d) {
      if (!d) return;
      std::thread([d, dial] { run_spdy(d, dial); }).detach();
    };
    return r;
  }
  return refuse(400, "Upgrade request required");
}

}  // namespace vkube::streaming
