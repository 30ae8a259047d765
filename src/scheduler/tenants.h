// The scheduler's books per tenant (on the host, a namespace is a tenant):
// its GPU share (gpu::GpuShare, from the namespace's annotation or its
// control plane's --gpu-share), what its bound pods hold, what its waiting
// pods ask for, and which pods wait for GPUs being reclaimed for them.
// Counters move with every pod the scheduler accounts, so a decision reads
// them in O(1); the fair shares (a water-filling over all tenants) are
// computed only when a pod does not fit. Not thread-safe: the scheduler's
// lock guards it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "node_info.h"
#include "vkube/gpu/share.h"

namespace vkube::scheduler {

class TenantLedger {
 public:
  struct Tenant {
    std::string name;  // label vkube.io/tenant, else the namespace
    gpu::GpuShare share;
    bool annotated = false;                   // share from the namespace
    std::optional<gpu::GpuShare> from_flag;   // its StatefulSet's --gpu-share
    int64_t allocated = 0;                    // bound and assumed pods
    int64_t reclaiming = 0;                   // of which terminating
    int64_t pending = 0;                      // pods waiting to be placed
    std::map<std::string, int64_t> by_model;  // allocated, by the GPU product holding it
    bool has_share() const { return annotated || from_flag.has_value(); }
  };

  // A namespace object (added or changed) / deleted. True when its share changed.
  bool set_namespace(const json& ns);
  void remove_namespace(const std::string& ns);
  // A StatefulSet running a tenant control plane (its --gpu-share arg).
  bool set_statefulset(const json& sts, bool deleted);

  // Fair share is on once any namespace has a share; before that the
  // scheduler behaves as one without queues.
  bool enabled() const { return with_share_ > 0; }

  void add_bound(const PodInfo& p);
  void remove_bound(const PodInfo& p);
  // p is the node's copy; `on` false undoes a reclaim planned but not made.
  void set_terminating(PodInfo& p, bool on = true);
  void set_pending(const std::string& uid, const std::string& ns, int64_t milli);
  void clear_pending(const std::string& uid);

  const Tenant* find(const std::string& ns) const;

  // Model guarantees (GpuShare::model_deserved_milli, keys matched as
  // substrings of products): what the tenant holds on products matching
  // `key`, and whether a pod pinned to `models` asking `milli` stays within
  // one of its tenant's model guarantees.
  static int64_t held_on(const Tenant& t, const std::string& key);
  // Returns the guarantee's key, or nullopt.
  static std::optional<std::string> within_model_guarantee(const Tenant& t,
                                                           const std::vector<std::string>& models,
                                                           int64_t milli);
  // A bound pod of `t` on product `model` that its tenant's model guarantee
  // covers: the tenant holds no more on such products than guaranteed.
  static bool guaranteed(const Tenant& t, const std::string& model);
  Tenant& at(const std::string& ns) { return by_ns_[ns]; }
  const std::map<std::string, Tenant>& all() const { return by_ns_; }

  // gpu::settle over every tenant with GPUs or a share, for a pool of
  // `capacity` thousandths.
  std::vector<gpu::TenantBooks> settle(int64_t capacity) const;

  // Reclaim: pod `uid` (of `ns`, asking `milli`) waits on `node` for GPUs
  // being freed for it. Kept in status.nominatedNodeName, so a restarted
  // scheduler finds it again.
  struct Nomination {
    std::string node, ns, key;
    PodInfo pod;
    uint64_t seq = 0;  // order of nomination on its node: the earlier goes first
  };
  // Keeps the pod's place when it stays nominated on the same node.
  void nominate(const std::string& uid, Nomination n);
  void unnominate(const std::string& uid) { nominated_.erase(uid); }
  const Nomination* nomination(const std::string& uid) const;
  // The pods waiting on `node`, but `except`; when `except` waits there
  // too, only those nominated before it (a pod is not held back by pods
  // that came after it, and two pods never hold each other back).
  std::vector<const Nomination*> nominated_on(const std::string& node,
                                              const std::string& except) const;
  bool any_nominated() const { return !nominated_.empty(); }
  // Nodes with pods waiting on them.
  size_t nominated_nodes() const;
  // Whether a pod of namespace `ns` waits on a node.
  bool any_nominated_in(const std::string& ns) const;

 private:
  void recount();
  std::map<std::string, Tenant> by_ns_;
  std::unordered_map<std::string, std::pair<std::string, int64_t>> pending_;  // uid -> ns, milli
  std::unordered_map<std::string, Nomination> nominated_;
  uint64_t nomination_seq_ = 0;
  int with_share_ = 0;
};

}  // namespace vkube::scheduler
