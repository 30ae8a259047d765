// Pod addresses: each node hands out addresses from its pod CIDR (as a CNI's
// host-local IPAM does), never the network address, the gateway (.1) or the
// broadcast address, and not one a live pod holds. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace vkube::nodesim {

class PodIps {
 public:
  // One range per node, by node index ("10.244.3.0/24"; empty or
  // unparsable: the node has no addresses to give).
  explicit PodIps(const std::vector<std::string>& cidrs);

  // A free address of node `node`, round robin so a released address is
  // not handed out again at once; nullopt when none is left.
  std::optional<uint32_t> allocate(size_t node);
  // Marks `ip` as held (a pod found running after a restart). False when it
  // is outside the node's range.
  bool mark(size_t node, uint32_t ip);
  void release(size_t node, uint32_t ip);
  // The CIDR text of a node, for messages.
  const std::string& cidr(size_t node) const { return ranges_[node].text; }

  static std::string format(uint32_t ip);
  static std::optional<uint32_t> parse(std::string_view text);

 private:
  struct Range {
    std::string text;
    uint32_t base = 0;
    uint32_t size = 0;           // addresses in the range; 0: none to give
    std::vector<uint64_t> used;  // a bit per address, allocated on first use
    uint32_t next = 2;           // where the round robin continues
  };
  bool offset_of(const Range& r, uint32_t ip, uint32_t* offset) const;

  std::mutex mu_;
  std::vector<Range> ranges_;
};

}  // namespace vkube::nodesim
