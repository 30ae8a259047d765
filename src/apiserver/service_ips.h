// ClusterIP and NodePort allocation for Services (kube-apiserver's service
// IP and port allocators). The allocated set is rebuilt from the stored
// Services on first use, so it survives restarts without its own storage.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "errors.h"
#include "vkube/storage/backend.h"

namespace vkube::apiserver {

// What one write reserved (given back if the write fails) and what it gives
// up once committed (kube's allocation transaction: Commit or Revert).
struct ServiceAllocation {
  std::vector<uint32_t> reserved_ips, freed_ips;
  std::vector<int> reserved_ports, freed_ports;
};

class ServiceIpAllocator {
 public:
  explicit ServiceIpAllocator(const std::string& cidr);
  void set_backend(storage::Backend* backend) { backend_ = backend; }

  // Assigns spec.clusterIP(s) and node ports of a new Service as its type
  // needs. Invalid error when a requested IP or port is taken or out of range.
  // A dry run checks without reserving.
  std::optional<ApiError> assign(nlohmann::json& svc, bool dry_run);
  // An update of `old` into `next` (kube's allocateUpdate): a type that now
  // needs a cluster IP, node ports or a health check node port gets them,
  // requested ones are checked, and what `next` no longer holds is listed to
  // be freed once the write commits. A dry run checks without reserving and
  // leaves `out` empty. Pass the result to finish().
  std::optional<ApiError> assign_update(const nlohmann::json& old, nlohmann::json& next,
                                        bool dry_run, ServiceAllocation& out);
  // Ends a write's allocation: committed, what it freed goes back to the
  // pools; failed, what it reserved does.
  void finish(const ServiceAllocation& a, bool committed);
  // Returns a deleted Service's addresses to the pools.
  void release(const nlohmann::json& svc);
  // The cluster IP of a Service moves from `old`'s to `next`'s (the syncer
  // adopting the address the host cluster assigned; it may lie outside this
  // range, where it is only recorded).
  void adopt(const nlohmann::json& old, const nlohmann::json& next);

 private:
  void load_locked();
  std::optional<ApiError> take_cluster_ip_locked(nlohmann::json& spec, const std::string& name,
                                                 std::vector<uint32_t>& taken);
  std::optional<ApiError> take_node_port_locked(nlohmann::json& holder, const char* key,
                                                const std::string& field, bool allocate,
                                                const std::set<int>& kept, const std::string& name,
                                                std::vector<int>& taken);
  std::mutex mu_;
  storage::Backend* backend_ = nullptr;
  bool loaded_ = false;
  uint32_t base_ = 0, size_ = 0, next_ = 1;
  std::set<uint32_t> ips_;
  std::set<int> ports_;
  int next_port_ = 30000;
};

}  // namespace vkube::apiserver
