// LoadBalancer Services on the embedded host: each gets an address of a
// configured pool in status.loadBalancer.ingress, as cloud-provider-kind or
// MetalLB give one on a kind cluster, so that `helm install --wait` of a
// chart with such a Service completes. Nothing listens at the address (the
// pool is meant to be a loopback range no local pod holds): it is a name
// for the Service, not a route to it.
//
// A Service with spec.loadBalancerClass belongs to another implementation
// and is left alone; spec.loadBalancerIP, when in the pool and free, is the
// address given. An address is the Service's until it is deleted or stops
// being a LoadBalancer. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client.h"
#include "vkube/common/status.h"
#include "vkube/controllers/informers.h"
#include "vkube/controllers/work_queue.h"

namespace vkube::nodesim {

class LoadBalancers {
 public:
  // `pool`: "a.b.c.d/n" (the network and broadcast addresses are never
  // given); empty: no addresses, the controller does nothing.
  static Result<std::unique_ptr<LoadBalancers>> create(Client& client,
                                                       const controllers::Lister& services,
                                                       const std::string& pool);
  ~LoadBalancers();

  void on_service(const controllers::ObjectEvent& e);
  // Takes the addresses Services already hold, then runs one worker.
  void start();
  void stop();
  bool idle() { return queue_.idle(); }

 private:
  LoadBalancers(Client& client, const controllers::Lister& services, uint32_t base, uint32_t size);
  Status reconcile(const std::string& key);
  // The Service's address: the one it holds, the one it asks for, or the
  // next free one; 0 when the pool is spent.
  uint32_t address_for(const std::string& key, const json& svc);
  bool in_pool(uint32_t ip) const { return ip > base_ && ip < base_ + size_ - 1; }

  Client& client_;
  const controllers::Lister& services_;
  const uint32_t base_, size_;
  std::mutex mu_;
  std::map<uint32_t, std::string> held_;  // address -> Service key
  std::map<std::string, uint32_t> by_key_;
  uint32_t next_ = 1;
  controllers::WorkQueue queue_;
  std::thread worker_;
};

}  // namespace vkube::nodesim
