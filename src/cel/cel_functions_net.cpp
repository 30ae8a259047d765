// kube's CEL IP and CIDR libraries: ip("10.0.0.1"), isIP(), ip.isCanonical(), cidr("10.0.0.0/8"),
// isCIDR(), an IP's family() and isUnspecified/isLoopback/isLinkLocalMulticast/
// isLinkLocalUnicast/isGlobalUnicast(), a CIDR's ip(), containsIP(), containsCIDR(), masked()
// and prefixLength(). Parsed as Go's netip parses them: strict dotted quads, no zones, no
// IPv4-mapped IPv6 addresses; kube's error wording.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel::detail {
namespace {

struct Addr {
  std::string bytes;  // 4 or 16
};

// Addr or kube's message for why `s` is not one.
std::optional<Addr> parse_addr(std::string_view s, std::string* why) {
  const std::string text(s);
  if (text.find('%') != std::string::npos) {
    *why = "IP address with zone value is not allowed";
    return std::nullopt;
  }
  unsigned char buf[16];
  if (text.find(':') == std::string::npos) {
    if (inet_pton(AF_INET, text.c_str(), buf) == 1)
      return Addr{std::string(reinterpret_cast<char*>(buf), 4)};
  } else if (inet_pton(AF_INET6, text.c_str(), buf) == 1) {
    static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(buf, kMapped, 12) == 0) {
      *why = "IPv4-mapped IPv6 address is not allowed";
      return std::nullopt;
    }
    return Addr{std::string(reinterpret_cast<char*>(buf), 16)};
  }
  *why = "IP Address \"" + text + "\" parse error during conversion from string: ParseAddr(\"" +
         text + "\"): unable to parse IP";
  return std::nullopt;
}

struct Prefix {
  std::string bytes;
  int bits = 0;
};

std::optional<Prefix> parse_prefix(std::string_view s, std::string* why) {
  const std::size_t slash = s.find('/');
  std::string inner;
  if (slash != std::string_view::npos) {
    const std::string_view len = s.substr(slash + 1);
    auto addr = parse_addr(s.substr(0, slash), &inner);
    bool digits = !len.empty() && len.size() <= 3 && (len.size() == 1 || len[0] != '0');
    for (char c : len) digits = digits && c >= '0' && c <= '9';
    if (addr && digits) {
      const int bits = std::stoi(std::string(len));
      if (bits <= static_cast<int>(addr->bytes.size()) * 8) return Prefix{addr->bytes, bits};
    }
    if (!addr &&
        (inner.find("zone") != std::string::npos || inner.find("mapped") != std::string::npos)) {
      *why = inner;
      return std::nullopt;
    }
  }
  *why = "network address parse error during conversion from string: netip.ParsePrefix(\"" +
         std::string(s) + "\"): bad prefix";
  return std::nullopt;
}

Value ip_value(std::string bytes) {
  Value v = make_text(Kind::kIp, std::move(bytes));
  return v;
}

Value cidr_value(std::string bytes, int bits) {
  Value v = make_text(Kind::kCidr, std::move(bytes));
  v.u = static_cast<uint64_t>(bits);
  return v;
}

std::string addr_text(std::string_view bytes) {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(bytes.size() == 4 ? AF_INET : AF_INET6, bytes.data(), buf, sizeof buf);
  return buf;
}

std::string masked(std::string bytes, int bits) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const int keep = std::max(0, std::min(8, bits - static_cast<int>(i) * 8));
    bytes[i] = static_cast<char>(static_cast<unsigned char>(bytes[i]) & (0xff00 >> keep));
  }
  return bytes;
}

bool contains(const std::string& prefix, int bits, const std::string& addr) {
  return prefix.size() == addr.size() && masked(prefix, bits) == masked(addr, bits);
}

const unsigned char* raw(const Value& v) {
  return reinterpret_cast<const unsigned char*>(v.str().data());
}

bool all_zero(const Value& v) {
  for (char c : v.str())
    if (c != 0) return false;
  return true;
}

bool loopback(const Value& v) {
  const unsigned char* b = raw(v);
  if (v.str().size() == 4) return b[0] == 127;
  for (int i = 0; i < 15; ++i)
    if (b[i] != 0) return false;
  return b[15] == 1;
}

bool link_local_multicast(const Value& v) {
  const unsigned char* b = raw(v);
  if (v.str().size() == 4) return b[0] == 224 && b[1] == 0 && b[2] == 0;
  return b[0] == 0xff && (b[1] & 0x0f) == 0x02;
}

bool link_local_unicast(const Value& v) {
  const unsigned char* b = raw(v);
  if (v.str().size() == 4) return b[0] == 169 && b[1] == 254;
  return b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
}

bool multicast(const Value& v) {
  const unsigned char* b = raw(v);
  return v.str().size() == 4 ? (b[0] & 0xf0) == 0xe0 : b[0] == 0xff;
}

// Go's IsGlobalUnicast: not unspecified, loopback, multicast, link-local or the IPv4 broadcast.
bool global_unicast(const Value& v) {
  const unsigned char* b = raw(v);
  const bool broadcast =
      v.str().size() == 4 && b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255;
  return !all_zero(v) && !loopback(v) && !multicast(v) && !link_local_unicast(v) && !broadcast;
}

}  // namespace

std::string net_text(const Value& v) {
  if (v.kind == Kind::kIp) return addr_text(v.str());
  return addr_text(v.str()) + "/" + std::to_string(v.u);
}

Value net_function(Fn fn, const std::vector<Value>& a) {
  std::string why;
  switch (fn) {
    case Fn::kIp:
      if (a[0].kind == Kind::kCidr) return ip_value(std::string(a[0].str()));  // cidr.ip()
      [[fallthrough]];
    case Fn::kIsIp:
    case Fn::kIpIsCanonical: {
      if (a[0].kind != Kind::kString) return no_overload();
      auto addr = parse_addr(a[0].str(), &why);
      if (fn == Fn::kIsIp) return make_bool(addr.has_value());
      if (!addr) return make_error(why);
      if (fn == Fn::kIpIsCanonical) return make_bool(addr_text(addr->bytes) == a[0].str());
      return ip_value(std::move(addr->bytes));
    }
    case Fn::kCidr:
    case Fn::kIsCidr: {
      if (a[0].kind != Kind::kString) return no_overload();
      auto prefix = parse_prefix(a[0].str(), &why);
      if (fn == Fn::kIsCidr) return make_bool(prefix.has_value());
      if (!prefix) return make_error(why);
      return cidr_value(std::move(prefix->bytes), prefix->bits);
    }
    default:
      break;
  }
  if (a[0].kind == Kind::kIp) {
    const Value& ip = a[0];
    switch (fn) {
      case Fn::kIpFamily:
        return make_int(ip.str().size() == 4 ? 4 : 6);
      case Fn::kIpIsUnspecified:
        return make_bool(all_zero(ip));
      case Fn::kIpIsLoopback:
        return make_bool(loopback(ip));
      case Fn::kIpIsLinkLocalMulticast:
        return make_bool(link_local_multicast(ip));
      case Fn::kIpIsLinkLocalUnicast:
        return make_bool(link_local_unicast(ip));
      case Fn::kIpIsGlobalUnicast:
        return make_bool(global_unicast(ip));
      default:
        return no_overload();
    }
  }
  if (a[0].kind != Kind::kCidr) return no_overload();
  const std::string bytes(a[0].str());
  const int bits = static_cast<int>(a[0].u);
  switch (fn) {
    case Fn::kCidrMasked:
      return cidr_value(masked(bytes, bits), bits);
    case Fn::kCidrPrefixLength:
      return make_int(bits);
    case Fn::kCidrContainsIp: {
      std::string addr;
      if (a[1].kind == Kind::kIp) {
        addr = std::string(a[1].str());
      } else if (a[1].kind == Kind::kString) {
        auto parsed = parse_addr(a[1].str(), &why);
        if (!parsed) return make_error(why);
        addr = parsed->bytes;
      } else {
        return no_overload();
      }
      return make_bool(contains(bytes, bits, addr));
    }
    case Fn::kCidrContainsCidr: {
      std::string other;
      int other_bits = 0;
      if (a[1].kind == Kind::kCidr) {
        other = std::string(a[1].str());
        other_bits = static_cast<int>(a[1].u);
      } else if (a[1].kind == Kind::kString) {
        auto parsed = parse_prefix(a[1].str(), &why);
        if (!parsed) return make_error(why);
        other = parsed->bytes;
        other_bits = parsed->bits;
      } else {
        return no_overload();
      }
      return make_bool(other_bits >= bits && contains(bytes, bits, other));
    }
    default:
      return no_overload();
  }
}

}  // namespace vkube::cel::detail
