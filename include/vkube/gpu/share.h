// A tenant's share of the pooled GPUs (issue 38), and the books that say who
// holds, borrows and lends what. Pure values: no I/O, no threads.
//
// The model (KAI's queues, Kueue's cohorts; ../shared/reference/GPU-SHARING.md):
//   deserved     GPUs guaranteed to the tenant: while it wants them, they are
//                its, taking them back from tenants that borrowed them
//   limit        never more than this, borrowing included (none: the pool)
//   weight       how idle GPUs beyond everyone's deserved share are split
//                among the tenants that want more (default 1)
//   preemptible  whether its pods may be reclaimed; a tenant whose pods may
//                not be preempted never borrows (as KAI's non-preemptible
//                workloads stay within quota)
//   model:M=N    a guarantee of N GPUs whose product (nvidia.com/gpu.product)
//                contains M ("H100"), within the tenant's deserved share
//
// Amounts are thousandths of a GPU ("milli"): a whole GPU is 1000, a share
// its milli, a MIG slice its compute fraction (quota.h's usage_of).
//
// Where it lives on the host: the annotation kShareAnnotation on the
// tenant's host namespace (`vkube create --gpu-share`, or edited later with
// `kubectl annotate namespace vkube-a vkube.io/gpu-share=deserved=8 --overwrite`);
// without it, the --gpu-share argument of the tenant's control-plane
// StatefulSet (the chart's gpu.share value). A namespace with neither has
// deserved 0: everything it holds is borrowed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"

namespace vkube::gpu {

inline constexpr std::string_view kShareAnnotation = "vkube.io/gpu-share";
inline constexpr std::string_view kShareFlag = "--gpu-share=";
// Host-owned: set by the host scheduler in a pod's binding when its tenant
// holds more than deserved; the thousandths of a GPU the pod borrows.
inline constexpr std::string_view kBorrowingAnnotation = "gpu.vkube.io/borrowing";
// A gang: pods of one host namespace with the same group name are admitted
// all or nothing, `size` of them at once.
inline constexpr std::string_view kPodGroupAnnotation = "vkube.io/pod-group";
inline constexpr std::string_view kPodGroupSizeAnnotation = "vkube.io/pod-group-size";

struct GpuShare {
  int64_t deserved_milli = 0;
  std::optional<int64_t> limit_milli;  // none: up to the whole pool
  int64_t weight = 1;                  // 0..1000
  bool preemptible = true;
  std::map<std::string, int64_t> model_deserved_milli;  // product substring -> milli

  // Canonical flag form: "deserved=8,limit=24,weight=2,model:H100=4"
  // (preemptible=false only when false; amounts as GPUs: "0.5", "8").
  std::string to_string() const;
  bool operator==(const GpuShare&) const = default;
};

// Parses `deserved=N,limit=N,weight=W,preemptible=true|false,model:M=N`,
// comma-separated, each key at most once, in any order. GPU amounts are
// "8", "1.5" or "1500m"; weight a whole number 0..1000. limit >= deserved;
// the model guarantees sum to at most deserved. "" is the default share
// (deserved 0). kInvalid saying which item is wrong and why.
Result<GpuShare> parse_gpu_share(std::string_view text);

// "8", "0.5", "1.25": thousandths of a GPU as GPUs.
std::string format_gpus(int64_t milli);

// One tenant's line in the books.
struct TenantBooks {
  std::string ns;      // host namespace
  std::string tenant;  // vkube.io/tenant label; the namespace when absent
  GpuShare share;
  int64_t allocated = 0;   // held by its bound pods
  int64_t pending = 0;     // asked for by its pods not bound yet
  int64_t reclaiming = 0;  // held by its pods being reclaimed (terminating)
  // Filled by settle():
  int64_t borrowed = 0;    // allocated beyond deserved
  int64_t lent = 0;        // its unused deserved GPUs that others borrow
  int64_t fair_share = 0;  // what it may hold now (see settle)
};

// Fills borrowed, lent and fair_share of every row for a pool of
// `capacity` milli. fair_share is the water-filling split: each tenant first
// gets min(deserved, demand) (demand = allocated + pending, capped at its
// limit), then what is left of the pool goes to tenants that want more, in
// proportion to their weights, none beyond its demand; a non-preemptible
// tenant gets no more than its deserved. A tenant below its fair share with
// pods pending may reclaim from tenants above theirs. Lent: the borrowed
// total beyond the pool's undeserved capacity, charged to the tenants whose
// deserved GPUs sit unused, in proportion to how many.
void settle(std::vector<TenantBooks>& rows, int64_t capacity);

}  // namespace vkube::gpu
