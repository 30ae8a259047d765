// ClusterIP and NodePort allocation for Services (kube-apiserver's service
// IP and port allocators). The allocated set is rebuilt from the stored
// Services on first use, so it survives restarts without its own storage.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "errors.h"
#include "vkube/storage/backend.h"

namespace vkube::apiserver {

class ServiceIpAllocator {
 public:
  explicit ServiceIpAllocator(const std::string& cidr);
  void set_backend(storage::Backend* backend) { backend_ = backend; }

  // Assigns spec.clusterIP(s) and node ports of a new Service as its type
  // needs. Invalid error when a requested IP or port is taken or out of range.
  // A dry run checks without reserving.
  std::optional<ApiError> assign(nlohmann::json& svc, bool dry_run);
  // Returns a deleted Service's addresses to the pools.
  void release(const nlohmann::json& svc);
  // The cluster IP of a Service moves from `old`'s to `next`'s (the syncer
  // adopting the address the host cluster assigned; it may lie outside this
  // range, where it is only recorded).
  void adopt(const nlohmann::json& old, const nlohmann::json& next);

 private:
  void load_locked();
  std::mutex mu_;
  storage::Backend* backend_ = nullptr;
  bool loaded_ = false;
  uint32_t base_ = 0, size_ = 0, next_ = 1;
  std::set<uint32_t> ips_;
  std::set<int> ports_;
  int next_port_ = 30000;
};

}  // namespace vkube::apiserver
