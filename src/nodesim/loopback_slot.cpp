// What `vkube host` works out before its simulator starts: its loopback slot
// (so that a second embedded host on the machine hands out other addresses),
// its load balancer pool, and the made-up networks it must never dial.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>

#include "pod_ips.h"
#include "sim_time.h"
#include "vkube/nodesim/simulator.h"

namespace vkube::nodesim {

namespace {

constexpr int kFirstSlot = 1;   // 127.0.x.y stays the machine's own (127.0.0.1)
constexpr int kLastSlot = 253;  // 127.254.x.y: load balancer pools

// "10.244.3.0/24" or "172.16.0.5" -> "10.244.0.0/16"; "" when unparsable.
std::string slash16(const std::string& address) {
  auto ip = PodIps::parse(address.substr(0, address.find('/')));
  if (!ip) return {};
  return PodIps::format(*ip & 0xFFFF0000u) + "/16";
}

// Who holds a slot's lock file: the data directory it wrote there.
std::string holder(int fd) {
  char buf[512] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("another vkube host");
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_sim_duration(std::string_view text) {
  return parse_duration(text);
}

std::vector<std::string> simulated_networks(const std::vector<gpu::NodeSpec>& nodes) {
  std::set<std::string> nets;
  for (const gpu::NodeSpec& n : nodes) {
    if (std::string s = slash16(n.pod_cidr); !s.empty()) nets.insert(s);
    if (std::string s = slash16(n.internal_ip); !s.empty()) nets.insert(s);
  }
  return {nets.begin(), nets.end()};
}

Result<int> claim_loopback_slot(const std::string& data_dir, const std::string& lock_dir) {
  std::error_code ec;
  const std::string dir = std::filesystem::absolute(data_dir, ec).lexically_normal().string();
  std::filesystem::create_directories(lock_dir, ec);
  ::chmod(lock_dir.c_str(), 01777);  // shared by every user's hosts, as /tmp is
  const int span = kLastSlot - kFirstSlot + 1;
  const int first = static_cast<int>(std::hash<std::string>{}(dir) % span);
  std::string busy;
  for (int i = 0; i < span; ++i) {
    const int slot = kFirstSlot + (first + i) % span;
    const std::string path = lock_dir + "/" + std::to_string(slot) + ".lock";
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (busy.empty()) busy = holder(fd);
      ::close(fd);
      continue;
    }
    // Held until this process ends (the descriptor is never closed).
    if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, dir.data(), dir.size(), 0) < 0) {
      // Only the holder's name for others' messages is lost.
    }
    return slot;
  }
  return Status::unavailable("no loopback range is free for another embedded host: all " +
                             std::to_string(span) + " in " + lock_dir + " are held (one by " +
                             busy + ")");
}

std::string default_load_balancer_pool(int slot) {
  return "127.254." + std::to_string(slot) + ".0/24";
}

}  // namespace vkube::nodesim
