#include "vkube/common/dial_policy.h"

#include <arpa/inet.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <vector>

namespace vkube::dial_policy {

namespace {

struct Net {
  uint32_t base = 0;
  uint32_t mask = 0;
  std::string text;
};

std::optional<uint32_t> parse_v4(std::string_view text) {
  in_addr a{};
  if (inet_pton(AF_INET, std::string(text).c_str(), &a) != 1) return std::nullopt;
  return ntohl(a.s_addr);
}

std::optional<Net> parse_cidr(std::string_view text) {
  auto slash = text.find('/');
  auto ip = parse_v4(text.substr(0, slash));
  if (!ip) return std::nullopt;
  int bits = 32;
  if (slash != std::string_view::npos) {
    std::string b(text.substr(slash + 1));
    char* end = nullptr;
    long v = std::strtol(b.c_str(), &end, 10);
    if (b.empty() || *end != '\0' || v < 0 || v > 32) return std::nullopt;
    bits = static_cast<int>(v);
  }
  Net n;
  n.mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
  n.base = *ip & n.mask;
  n.text = std::string(text);
  return n;
}

struct State {
  std::mutex mu;
  std::vector<Net> nets;
  bool on = false;
};

State& state() {
  static State* s = [] {
    auto* st = new State;
    if (const char* env = std::getenv(kEnvVar); env != nullptr) {
      std::string_view all(env);
      while (!all.empty()) {
        auto comma = all.find(',');
        std::string_view item = all.substr(0, comma);
        if (auto n = parse_cidr(item)) {
          st->nets.push_back(*n);
          st->on = true;
        }
        all = comma == std::string_view::npos ? std::string_view() : all.substr(comma + 1);
      }
    }
    return st;
  }();
  return *s;
}

bool loopback(std::string_view ip) {
  if (ip == "::1") return true;
  if (ip.starts_with("::ffff:")) ip.remove_prefix(7);
  auto v4 = parse_v4(ip);
  return v4 && (*v4 >> 24) == 127;
}

}  // namespace

Status note_simulated_network(std::string_view cidr) {
  auto n = parse_cidr(cidr);
  if (!n) return Status::invalid("not an IPv4 CIDR: \"" + std::string(cidr) + "\"");
  State& s = state();
  std::lock_guard lock(s.mu);
  s.on = true;
  for (const Net& have : s.nets)
    if (have.base == n->base && have.mask == n->mask) return Status::ok();
  s.nets.push_back(*n);
  return Status::ok();
}

std::string simulated_networks() {
  State& s = state();
  std::lock_guard lock(s.mu);
  std::string out;
  for (const Net& n : s.nets) out += (out.empty() ? "" : ",") + n.text;
  return out;
}

Status check(std::string_view ip, int port) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.on || loopback(ip)) return Status::ok();
  const std::string where =
      (ip.find(':') != std::string_view::npos ? "[" + std::string(ip) + "]" : std::string(ip)) +
      ":" + std::to_string(port);
  if (auto v4 = parse_v4(ip)) {
    for (const Net& n : s.nets)
      if ((*v4 & n.mask) == n.base)
        return Status::unavailable("dial tcp " + where +
                                   ": pod runs on a simulated node: nothing listens");
  }
  return Status::unavailable("dial tcp " + where +
                             ": not dialled: the clusters of an embedded host (vkube host) "
                             "reach only this machine (127.0.0.0/8)");
}

}  // namespace vkube::dial_policy
