#include "spdy.h"

#include <strings.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "common.h"
#include "vkube/common/log.h"

namespace vkube::streaming::spdy {

namespace {

constexpr uint16_t kVersion = 3;
enum FrameType : uint16_t {
  kSynStream = 1,
  kSynReply = 2,
  kRstStream = 3,
  kSettings = 4,
  kPing = 6,
  kGoAway = 7,
  kHeaders = 8,
  kWindowUpdate = 9,
};
constexpr uint8_t kFlagFin = 0x01;
constexpr uint32_t kRstProtocolError = 1;
constexpr uint32_t kRstCancel = 5;
constexpr size_t kMaxFrame = 16u << 20;       // what SPDY's 24-bit length allows
constexpr size_t kDataFrame = 256u << 10;     // the data frames we send
constexpr size_t kStreamBuffer = 8u << 20;    // unread bytes per stream before the reader waits

// SPDY/3's header-compression dictionary (the protocol's draft 3, section
// 2.6.10.1): the length-prefixed words below, then the text after them.
const std::string& dictionary() {
  static const std::string dict = [] {
    static const char* const kWords[] = {
        "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
        "accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization",
        "cache-control", "connection", "content-base", "content-encoding", "content-language",
        "content-length", "content-location", "content-md5", "content-range", "content-type",
        "date", "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since",
        "if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
        "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
        "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent",
        "vary", "via", "warning", "www-authenticate", "method", "get", "status", "200 OK",
        "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"};
    std::string d;
    for (const char* w : kWords) {
      const uint32_t n = static_cast<uint32_t>(std::strlen(w));
      for (int s = 24; s >= 0; s -= 8) d += static_cast<char>((n >> s) & 0xff);
      d += w;
    }
    d += "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504"
         "505203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad "
         "Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not "
         "Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec "
         "00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,"
         "image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,"
         "publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";
    return d;
  }();
  return dict;
}

uint32_t be32(const char* p) {
  const auto* u = reinterpret_cast<const uint8_t*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
}

void put32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((v >> s) & 0xff);
}

void frame_head(char* h, bool control, uint32_t first, uint8_t flags, size_t len) {
  if (control) first |= 0x80000000u;
  for (int i = 0; i < 4; ++i) h[i] = static_cast<char>((first >> (24 - 8 * i)) & 0xff);
  h[4] = static_cast<char>(flags);
  h[5] = static_cast<char>((len >> 16) & 0xff);
  h[6] = static_cast<char>((len >> 8) & 0xff);
  h[7] = static_cast<char>(len & 0xff);
}

}  // namespace

bool is_upgrade(const http::Request& req) {
  return strncasecmp(std::string(req.header("Upgrade")).c_str(), "SPDY/3.1", 8) == 0;
}

std::vector<std::string> offered_protocols(const http::Request& req) {
  return header_list(req, "X-Stream-Protocol-Version");
}

http::Response accept(const std::string& protocol) {
  http::Response r;
  r.status = 101;
  r.set_header("Connection", "Upgrade");
  r.set_header("Upgrade", "SPDY/3.1");
  if (!protocol.empty()) r.set_header("X-Stream-Protocol-Version", protocol);
  return r;
}

// Header blocks in (inflate) and out (deflate), each one zlib stream for the
// connection's life.
struct Session::Zlib {
  z_stream in{};
  z_stream out{};
  bool in_ok = false;
  bool out_ok = false;
  Zlib() {
    in_ok = inflateInit(&in) == Z_OK;
    out_ok = deflateInit(&out, Z_DEFAULT_COMPRESSION) == Z_OK &&
             deflateSetDictionary(&out, reinterpret_cast<const Bytef*>(dictionary().data()),
                                  static_cast<uInt>(dictionary().size())) == Z_OK;
  }
  ~Zlib() {
    inflateEnd(&in);
    deflateEnd(&out);
  }

  Result<std::string> inflate_block(std::string_view block) {
    if (!in_ok) return Status::internal("zlib inflate unavailable");
    std::string out_buf;
    in.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
    in.avail_in = static_cast<uInt>(block.size());
    char chunk[16384];
    while (in.avail_in > 0) {
      in.next_out = reinterpret_cast<Bytef*>(chunk);
      in.avail_out = sizeof chunk;
      int rc = inflate(&in, Z_SYNC_FLUSH);
      if (rc == Z_NEED_DICT) {
        rc = inflateSetDictionary(&in, reinterpret_cast<const Bytef*>(dictionary().data()),
                                  static_cast<uInt>(dictionary().size()));
        if (rc != Z_OK) return Status::bad_request("SPDY header block: wrong zlib dictionary");
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR)
        return Status::bad_request("SPDY header block: zlib error " + std::to_string(rc));
      out_buf.append(chunk, sizeof chunk - in.avail_out);
      if (out_buf.size() > (1u << 20)) return Status::too_large("SPDY header block over 1 MiB");
      if (rc == Z_BUF_ERROR && in.avail_out != 0) break;
    }
    // Output zlib may still hold after the input is consumed.
    for (;;) {
      in.next_out = reinterpret_cast<Bytef*>(chunk);
      in.avail_out = sizeof chunk;
      int rc = inflate(&in, Z_SYNC_FLUSH);
      out_buf.append(chunk, sizeof chunk - in.avail_out);
      if (rc != Z_OK || in.avail_out != 0) break;
    }
    return out_buf;
  }

  Result<std::string> deflate_block(std::string_view block) {
    if (!out_ok) return Status::internal("zlib deflate unavailable");
    std::string out_buf;
    out.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
    out.avail_in = static_cast<uInt>(block.size());
    char chunk[4096];
    do {
      out.next_out = reinterpret_cast<Bytef*>(chunk);
      out.avail_out = sizeof chunk;
      if (deflate(&out, Z_SYNC_FLUSH) == Z_STREAM_ERROR)
        return Status::internal("SPDY header block: zlib deflate failed");
      out_buf.append(chunk, sizeof chunk - out.avail_out);
    } while (out.avail_out == 0);
    return out_buf;
  }
};

namespace {

Result<Headers> parse_headers(std::string_view b) {
  auto need = [&](size_t n) { return b.size() >= n; };
  if (!need(4)) return Status::bad_request("SPDY header block too short");
  uint32_t count = be32(b.data());
  b.remove_prefix(4);
  Headers out;
  for (uint32_t i = 0; i < count; ++i) {
    std::string kv[2];
    for (auto& part : kv) {
      if (!need(4)) return Status::bad_request("SPDY header block truncated");
      uint32_t n = be32(b.data());
      b.remove_prefix(4);
      if (!need(n)) return Status::bad_request("SPDY header block truncated");
      part.assign(b.substr(0, n));
      b.remove_prefix(n);
    }
    for (char& c : kv[0]) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // Several values are NUL-separated; the first is the one used here.
    out[kv[0]] = kv[1].substr(0, kv[1].find('\0'));
  }
  return out;
}

}  // namespace

Session::Session(std::shared_ptr<http::Duplex> d) : d_(std::move(d)), z_(std::make_unique<Zlib>()) {}

Session::~Session() { d_->close(); }

Status Session::send_control(uint16_t type, uint8_t flags, std::string_view body) {
  char h[8];
  frame_head(h, true, (uint32_t{kVersion} << 16) | type, flags, body.size());
  std::lock_guard lock(write_mu_);
  return http::write_all(*d_, {std::string_view(h, 8), body});
}

Status Session::send_headers_frame(uint16_t type, uint32_t id, const Headers& headers,
                                   uint8_t flags) {
  std::string raw;
  put32(raw, static_cast<uint32_t>(headers.size()));
  for (const auto& [k, v] : headers) {
    put32(raw, static_cast<uint32_t>(k.size()));
    raw += k;
    put32(raw, static_cast<uint32_t>(v.size()));
    raw += v;
  }
  std::string body;
  put32(body, id);
  std::lock_guard lock(write_mu_);  // the deflate stream's order is the wire's
  auto block = z_->deflate_block(raw);
  if (!block.is_ok()) return block.status();
  body += *block;
  char h[8];
  frame_head(h, true, (uint32_t{kVersion} << 16) | type, flags, body.size());
  return http::write_all(*d_, {std::string_view(h, 8), body});
}

Status Session::send_data(uint32_t id, std::string_view data, bool fin) {
  do {
    std::string_view piece = data.substr(0, kDataFrame);
    data.remove_prefix(piece.size());
    char h[8];
    frame_head(h, false, id & 0x7fffffffu, fin && data.empty() ? kFlagFin : 0, piece.size());
    std::lock_guard lock(write_mu_);
    if (closed_) return Status::cancelled("the SPDY connection is closed");
    VKUBE_RETURN_IF_ERROR(http::write_all(*d_, {std::string_view(h, 8), piece}));
  } while (!data.empty());
  return Status::ok();
}

void Session::forget(uint32_t id) {
  std::lock_guard lock(streams_mu_);
  streams_.erase(id);
}

void Session::close() {
  {
    std::lock_guard lock(write_mu_);
    if (closed_) return;
  }
  std::string body;
  put32(body, 0);
  put32(body, 0);
  (void)send_control(kGoAway, 0, body);
  {
    std::lock_guard lock(write_mu_);
    closed_ = true;
  }
  d_->close();
}

void Session::run(const std::function<void(std::shared_ptr<Stream>)>& on_stream) {
  ReadBuffer buf;
  auto fill = [&](size_t need) { return buf.fill(*d_, need).is_ok(); };
  auto find = [&](uint32_t id) {
    std::lock_guard lock(streams_mu_);
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.lock();
  };

  for (;;) {
    if (!fill(8)) break;
    const char* h = buf.data();
    const bool control = static_cast<uint8_t>(h[0]) & 0x80;
    const uint32_t first = be32(h) & 0x7fffffffu;
    const uint8_t flags = static_cast<uint8_t>(h[4]);
    const size_t len = (size_t{static_cast<uint8_t>(h[5])} << 16) |
                       (size_t{static_cast<uint8_t>(h[6])} << 8) | static_cast<uint8_t>(h[7]);
    if (len > kMaxFrame || !fill(8 + len)) break;
    std::string_view body(buf.data() + 8, len);
    buf.consume(8 + len);

    if (!control) {
      auto s = find(first);
      if (s) {
        if (!body.empty()) s->deliver(body);
        if (flags & kFlagFin) s->remote_fin();
      }
      continue;
    }
    const uint16_t type = first & 0xffff;
    if (type == kSynStream || type == kHeaders) {
      size_t skip = type == kSynStream ? 10 : 4;
      if (body.size() < skip) break;
      const uint32_t id = be32(body.data()) & 0x7fffffffu;
      auto raw = z_->inflate_block(body.substr(skip));
      if (!raw.is_ok()) {
        VKUBE_LOG(warn, "SPDY: a header block could not be read", {"error", raw.status().message()});
        break;
      }
      if (type == kHeaders) continue;
      if (id == 0 || id <= last_id_) {
        // A reused or decreasing id: refused as spdystream refuses it (RST_STREAM, protocol
        // error). Accepting it replaced the open stream, which then was never reset: its reader
        // waited forever.
        std::string rst;
        put32(rst, id);
        put32(rst, kRstProtocolError);
        if (!send_control(kRstStream, 0, rst).is_ok()) break;
        continue;
      }
      last_id_ = id;
      auto headers = parse_headers(*raw);
      if (!headers.is_ok()) break;
      auto s = std::make_shared<Stream>(shared_from_this(), id, std::move(headers).value());
      {
        std::lock_guard lock(streams_mu_);
        streams_[id] = s;
      }
      if (!send_headers_frame(kSynReply, id, {}, 0).is_ok()) break;
      if (flags & kFlagFin) s->remote_fin();
      on_stream(std::move(s));
    } else if (type == kRstStream) {
      if (body.size() >= 4)
        if (auto s = find(be32(body.data()) & 0x7fffffffu)) s->reset();
    } else if (type == kPing) {
      if (!send_control(kPing, 0, body).is_ok()) break;
    } else if (type == kGoAway) {
      break;
    }
    // SETTINGS, WINDOW_UPDATE and anything newer: nothing to do.
  }
  std::vector<std::shared_ptr<Stream>> open;
  {
    std::lock_guard lock(streams_mu_);
    for (auto& [id, w] : streams_)
      if (auto s = w.lock()) open.push_back(std::move(s));
    streams_.clear();
  }
  for (auto& s : open) s->reset();
  {
    std::lock_guard lock(write_mu_);
    closed_ = true;
  }
  d_->close();
}

Stream::~Stream() { session_->forget(id_); }

void Stream::deliver(std::string_view data) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return in_.size() - in_off_ < kStreamBuffer || reset_ || local_done_; });
  if (reset_) return;
  if (in_off_ > 0 && in_off_ == in_.size()) {
    in_.clear();
    in_off_ = 0;
  }
  in_.append(data);
  cv_.notify_all();
}

void Stream::remote_fin() {
  std::lock_guard lock(mu_);
  remote_done_ = true;
  cv_.notify_all();
}

void Stream::reset() {
  std::lock_guard lock(mu_);
  reset_ = true;
  remote_done_ = true;
  cv_.notify_all();
}

Result<size_t> Stream::read(char* out, size_t size) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (in_.size() > in_off_) {
      size_t n = std::min(size, in_.size() - in_off_);
      std::memcpy(out, in_.data() + in_off_, n);
      in_off_ += n;
      if (in_off_ == in_.size()) {
        in_.clear();
        in_off_ = 0;
      }
      cv_.notify_all();
      return n;
    }
    if (remote_done_) return size_t{0};
    if (local_done_ && reset_) return Status::cancelled("the stream was closed");
    if (deadline_ == Clock::time_point::max()) {
      cv_.wait(lock);
    } else if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout &&
               in_.size() == in_off_ && !remote_done_) {
      return Status(Code::kTimeout, "timed out");
    }
  }
}

Status Stream::write(std::string_view data) {
  {
    std::lock_guard lock(mu_);
    if (reset_) return Status::cancelled("the client reset the stream");
    if (local_done_) return Status::cancelled("the stream was closed");
  }
  return session_->send_data(id_, data, false);
}

void Stream::close_write() {
  {
    std::lock_guard lock(mu_);
    if (local_done_ || reset_) return;
    local_done_ = true;
    cv_.notify_all();
  }
  (void)session_->send_data(id_, {}, true);
}

void Stream::close() {
  bool send_reset = false;
  {
    std::lock_guard lock(mu_);
    send_reset = !reset_ && !(local_done_ && remote_done_);
    if (!local_done_ && !reset_) send_reset = true;
    local_done_ = true;
    reset_ = true;
    remote_done_ = true;
    cv_.notify_all();
  }
  if (send_reset) {
    std::string body;
    put32(body, id_);
    put32(body, kRstCancel);
    (void)session_->send_control(kRstStream, 0, body);
  }
}

void Stream::set_deadline(Clock::time_point deadline) {
  std::lock_guard lock(mu_);
  deadline_ = deadline;
  cv_.notify_all();
}

}  // namespace vkube::streaming::spdy
