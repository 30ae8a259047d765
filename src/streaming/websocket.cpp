#include "websocket.h"

#include <strings.h>

#include <openssl/sha.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common.h"
#include "vkube/common/base64.h"

namespace vkube::streaming::ws {

namespace {

constexpr size_t kMaxMessage = 32u << 20;  // a client's message, joined

bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (item.size() == token.size() && strncasecmp(item.data(), token.data(), token.size()) == 0)
      return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// XORs `data` with the 4-byte mask, starting at mask byte `phase`.
void unmask(char* data, size_t n, const uint8_t mask[4]) {
  uint64_t wide;
  uint8_t m8[8];
  for (int i = 0; i < 8; ++i) m8[i] = mask[i % 4];
  std::memcpy(&wide, m8, 8);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    std::memcpy(&v, data + i, 8);
    v ^= wide;
    std::memcpy(data + i, &v, 8);
  }
  for (; i < n; ++i) data[i] = static_cast<char>(data[i] ^ mask[i % 4]);
}

}  // namespace

bool is_upgrade(const http::Request& req) {
  return has_token(req.header("Upgrade"), "websocket") && !req.header("Sec-WebSocket-Key").empty();
}

std::vector<std::string> offered_protocols(const http::Request& req) {
  return header_list(req, "Sec-WebSocket-Protocol");
}

http::Response accept(const http::Request& req, const std::string& protocol) {
  std::string key(req.header("Sec-WebSocket-Key"));
  key += "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest);
  http::Response r;
  r.status = 101;
  r.set_header("Upgrade", "websocket");
  r.set_header("Connection", "Upgrade");
  r.set_header("Sec-WebSocket-Accept",
               base64_encode(std::string_view(reinterpret_cast<char*>(digest), sizeof digest)));
  if (!protocol.empty()) r.set_header("Sec-WebSocket-Protocol", protocol);
  return r;
}

Status Conn::fill(size_t need) {
  Status st = in_.fill(*d_, need);
  if (st.code() == Code::kCancelled) return Status::cancelled("the client closed the connection");
  return st;
}

Result<Message> Conn::read() {
  Message msg;
  bool in_message = false;
  for (;;) {
    VKUBE_RETURN_IF_ERROR(fill(2));
    const auto* h = reinterpret_cast<const uint8_t*>(in_.data());
    const bool fin = h[0] & 0x80;
    const auto opcode = static_cast<Opcode>(h[0] & 0x0f);
    const bool masked = h[1] & 0x80;
    uint64_t len = h[1] & 0x7f;
    size_t head = 2;
    if (len == 126) {
      VKUBE_RETURN_IF_ERROR(fill(4));
      h = reinterpret_cast<const uint8_t*>(in_.data());
      len = (uint64_t{h[2]} << 8) | h[3];
      head = 4;
    } else if (len == 127) {
      VKUBE_RETURN_IF_ERROR(fill(10));
      h = reinterpret_cast<const uint8_t*>(in_.data());
      len = 0;
      for (int i = 2; i < 10; ++i) len = (len << 8) | h[i];
      head = 10;
    }
    if (len > kMaxMessage || msg.data.size() + len > kMaxMessage) {
      close(1009, "message too big");
      return Status::too_large("a WebSocket message over 32 MiB");
    }
    uint8_t mask[4] = {0, 0, 0, 0};
    if (masked) {
      VKUBE_RETURN_IF_ERROR(fill(head + 4));
      std::memcpy(mask, in_.data() + head, 4);
      head += 4;
    }
    VKUBE_RETURN_IF_ERROR(fill(head + len));
    char* payload = in_.data() + head;
    if (masked) unmask(payload, len, mask);
    std::string_view body(payload, len);
    in_.consume(head + len);

    switch (opcode) {
      case kPing:
        VKUBE_RETURN_IF_ERROR(frame_out(kPong, {}, body));
        continue;
      case kPong:
        continue;
      case kClose:
        close(1000);
        return Status::cancelled("the client closed the WebSocket");
      case kText:
      case kBinary:
        if (in_message) return Status::bad_request("a WebSocket message began inside another");
        msg.opcode = opcode;
        in_message = true;
        break;
      case kContinuation:
        if (!in_message) return Status::bad_request("a WebSocket continuation without a message");
        break;
      default:
        close(1002, "unknown opcode");
        return Status::bad_request("unknown WebSocket opcode " + std::to_string(opcode));
    }
    if (msg.data.empty() && fin) {
      msg.data.assign(body);
      return msg;
    }
    msg.data.append(body);
    if (fin) return msg;
  }
}

Status Conn::frame_out(Opcode opcode, std::string_view prefix, std::string_view data) {
  const uint64_t len = prefix.size() + data.size();
  char head[10];
  size_t n = 2;
  head[0] = static_cast<char>(0x80 | opcode);
  if (len < 126) {
    head[1] = static_cast<char>(len);
  } else if (len < 65536) {
    head[1] = 126;
    head[2] = static_cast<char>(len >> 8);
    head[3] = static_cast<char>(len);
    n = 4;
  } else {
    head[1] = 127;
    for (int i = 0; i < 8; ++i) head[2 + i] = static_cast<char>(len >> (56 - 8 * i));
    n = 10;
  }
  std::lock_guard lock(write_mu_);
  if (closed_) return Status::cancelled("the WebSocket is closed");
  if (len <= 4096) {  // one write for small frames
    char small[10 + 4096];
    std::memcpy(small, head, n);
    // An empty view may hold a null pointer, which memcpy may not be given.
    if (!prefix.empty()) std::memcpy(small + n, prefix.data(), prefix.size());
    if (!data.empty()) std::memcpy(small + n + prefix.size(), data.data(), data.size());
    return d_->write(std::string_view(small, n + len));
  }
  return http::write_all(*d_, {std::string_view(head, n), prefix, data});
}

Status Conn::send(Opcode opcode, std::string_view prefix, std::string_view data) {
  return frame_out(opcode, prefix, data);
}

void Conn::close(uint16_t code, std::string_view reason) {
  {
    std::lock_guard lock(write_mu_);
    if (closed_) return;
  }
  std::string body;
  body += static_cast<char>(code >> 8);
  body += static_cast<char>(code & 0xff);
  body.append(reason.substr(0, 120));
  (void)frame_out(kClose, {}, body);
  std::lock_guard lock(write_mu_);
  closed_ = true;
  d_->close_write();
}

namespace {

class Tunnel final : public http::Duplex {
 public:
  explicit Tunnel(std::shared_ptr<Conn> conn) : conn_(std::move(conn)) {}
  ~Tunnel() override { close(); }

  Result<size_t> read(char* out, size_t size) override {
    while (off_ == buf_.size()) {
      if (ended_) return size_t{0};
      auto m = conn_->read();
      if (!m.is_ok()) {
        if (m.status().code() == Code::kCancelled && !closed_) {
          ended_ = true;  // the client's close: the end of the stream
          return size_t{0};
        }
        return m.status();
      }
      buf_ = std::move(m->data);
      off_ = 0;
    }
    size_t n = std::min(size, buf_.size() - off_);
    std::memcpy(out, buf_.data() + off_, n);
    off_ += n;
    return n;
  }
  Status write(std::string_view data) override { return conn_->send(kBinary, {}, data); }
  void close_write() override { conn_->close(1000); }
  void close() override {
    closed_ = true;
    conn_->close(1000);
    conn_->duplex().close();
  }
  void set_deadline(Clock::time_point deadline) override { conn_->duplex().set_deadline(deadline); }

 private:
  std::shared_ptr<Conn> conn_;
  std::string buf_;
  size_t off_ = 0;
  bool ended_ = false;
  std::atomic<bool> closed_{false};
};

}  // namespace

std::unique_ptr<http::Duplex> tunnel(std::shared_ptr<Conn> conn) {
  return std::make_unique<Tunnel>(std::move(conn));
}

}  // namespace vkube::streaming::ws
