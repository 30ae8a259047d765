// Registering simulated nodes as a kubelet does at start-up: the Node object
// (created, or brought up to date with the spec), its Lease, and removing the
// simulated nodes that are no longer configured.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "client.h"
#include "sim_time.h"
#include "vkube/controllers/informers.h"
#include "vkube/gpu/node_spec.h"

namespace vkube::nodesim {

struct Registrar {
  Client& client;
  controllers::WritePool& pool;
  const controllers::Lister& nodes;
  const controllers::Lister& pods;
  std::function<TimePoint()> now;

  // Creates kube-node-lease when missing.
  Status ensure_lease_namespace();
  // Creates or updates the Node of every spec, then its Lease. A node that
  // exists keeps its podCIDR (immutable in kube): the spec takes it. Writes
  // run in parallel; the first error is returned after all were tried.
  Status register_nodes(std::vector<gpu::NodeSpec>& specs);
  // Deletes the nodes labelled simulated that `specs` does not name, with
  // the pods bound to them and their Leases.
  Status remove_stale(const std::vector<gpu::NodeSpec>& specs);

  // Creates the node's Lease, or takes it over (holder, owner, renewTime).
  Status ensure_lease(const std::string& node, const std::string& node_uid);

  TimePoint wall() const { return now ? now() : std::chrono::system_clock::now(); }

 private:
  Status register_node(gpu::NodeSpec& spec);
};

// The kubelet's Lease for `node`: holder = node, 40 s, renewTime `now`,
// owned by the Node (so it goes when the Node goes).
json lease_object(const std::string& node, const std::string& node_uid, TimePoint now);

}  // namespace vkube::nodesim
