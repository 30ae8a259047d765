// What the streaming protocols share: comma-separated header lists and the
// Status answer of a refused upgrade. Private to src/streaming.
#pragma once

#include <strings.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/http/duplex.h"
#include "vkube/http/server.h"

namespace vkube::streaming {

// Bytes read from a Duplex and not yet parsed: the frame readers' buffer.
// It grows only when a frame needs more room and is never zero-filled again
// (a resize per read would clear 256 KiB for every few KiB that arrive).
class ReadBuffer {
 public:
  const char* data() const { return store_.data() + off_; }
  char* data() { return store_.data() + off_; }
  size_t size() const { return end_ - off_; }
  void consume(size_t n) { off_ += n; }

  // Reads until at least `need` bytes are held. kCancelled at end of stream.
  Status fill(http::Duplex& d, size_t need) {
    if (off_ == end_) off_ = end_ = 0;
    while (size() < need) {
      if (off_ > 0 && store_.size() - end_ < need - size() + kMinRead) {
        std::memmove(store_.data(), store_.data() + off_, size());
        end_ -= off_;
        off_ = 0;
      }
      if (store_.size() - end_ < kMinRead)
        store_.resize(std::max(end_ + std::max(kMinRead, need - size()), size_t{kGrow}));
      Result<size_t> n = d.read(store_.data() + end_, store_.size() - end_);
      if (!n.is_ok()) return n.status();
      if (*n == 0) return Status::cancelled("the peer closed the connection");
      end_ += *n;
    }
    return Status::ok();
  }

 private:
  static constexpr size_t kMinRead = 64 << 10;
  static constexpr size_t kGrow = 256 << 10;
  std::string store_;
  size_t off_ = 0;
  size_t end_ = 0;
};

// The items of every `name` header of `req`, comma-separated, in order.
inline std::vector<std::string> header_list(const http::Request& req, const char* name) {
  std::vector<std::string> out;
  for (const http::Header& h : req.headers) {
    if (strcasecmp(h.name.c_str(), name) != 0) continue;
    std::string_view list = h.value;
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      if (!item.empty()) out.emplace_back(item);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  return out;
}

// kube's Status answer (400 BadRequest or 403 Forbidden) to a request that
// cannot be upgraded.
inline http::Response refuse(int code, const std::string& message) {
  http::Response r;
  r.status = code;
  r.set_header("Content-Type", "application/json");
  r.body = nlohmann::json{{"kind", "Status"},
                          {"apiVersion", "v1"},
                          {"metadata", nlohmann::json::object()},
                          {"status", "Failure"},
                          {"message", message},
                          {"reason", code == 403 ? "Forbidden" : "BadRequest"},
                          {"code", code}}
               .dump();
  return r;
}

}  // namespace vkube::streaming
