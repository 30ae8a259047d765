#include "pod_ips.h"

#include <charconv>

namespace vkube::nodesim {

namespace {

// A /16 is the widest range handed out per node; wider ones are cut to it
// (no node holds 65,000 pods).
constexpr int kMinPrefix = 16;

}  // namespace

PodIps::PodIps(const std::vector<std::string>& cidrs) {
  ranges_.resize(cidrs.size());
  for (size_t i = 0; i < cidrs.size(); ++i) {
    Range& r = ranges_[i];
    r.text = cidrs[i];
    auto slash = cidrs[i].find('/');
    if (slash == std::string::npos) continue;
    auto base = parse(std::string_view(cidrs[i]).substr(0, slash));
    int prefix = 0;
    const char* p = cidrs[i].data() + slash + 1;
    const char* end = cidrs[i].data() + cidrs[i].size();
    auto [q, ec] = std::from_chars(p, end, prefix);
    if (!base || ec != std::errc() || q != end || prefix < 0 || prefix > 30) continue;
    prefix = std::max(prefix, kMinPrefix);
    r.size = uint32_t{1} << (32 - prefix);
    r.base = *base & ~(r.size - 1);
  }
}

std::string PodIps::format(uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string(a >> 16 & 255) + "." +
         std::to_string(a >> 8 & 255) + "." + std::to_string(a & 255);
}

std::optional<uint32_t> PodIps::parse(std::string_view text) {
  uint32_t out = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int part = 0; part < 4; ++part) {
    unsigned v = 0;
    auto [q, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || v > 255) return std::nullopt;
    out = out << 8 | v;
    p = q;
    if (part < 3) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
  }
  if (p != end) return std::nullopt;
  return out;
}

bool PodIps::offset_of(const Range& r, uint32_t ip, uint32_t* offset) const {
  if (r.size == 0 || ip < r.base || ip - r.base >= r.size) return false;
  *offset = ip - r.base;
  return *offset >= 2 && *offset < r.size - 1;
}

std::optional<uint32_t> PodIps::allocate(size_t node) {
  std::lock_guard lock(mu_);
  Range& r = ranges_[node];
  if (r.size < 4) return std::nullopt;
  if (r.used.empty()) r.used.assign((r.size + 63) / 64, 0);
  const uint32_t usable = r.size - 3;  // without network, gateway and broadcast
  for (uint32_t n = 0; n < usable; ++n) {
    uint32_t off = r.next;
    r.next = r.next + 1 >= r.size - 1 ? 2 : r.next + 1;
    if (!(r.used[off / 64] >> (off % 64) & 1)) {
      r.used[off / 64] |= uint64_t{1} << (off % 64);
      return r.base + off;
    }
  }
  return std::nullopt;
}

bool PodIps::mark(size_t node, uint32_t ip) {
  std::lock_guard lock(mu_);
  Range& r = ranges_[node];
  uint32_t off;
  if (!offset_of(r, ip, &off)) return false;
  if (r.used.empty()) r.used.assign((r.size + 63) / 64, 0);
  r.used[off / 64] |= uint64_t{1} << (off % 64);
  return true;
}

void PodIps::release(size_t node, uint32_t ip) {
  std::lock_guard lock(mu_);
  Range& r = ranges_[node];
  uint32_t off;
  if (!offset_of(r, ip, &off) || r.used.empty()) return;
  r.used[off / 64] &= ~(uint64_t{1} << (off % 64));
}

}  // namespace vkube::nodesim
