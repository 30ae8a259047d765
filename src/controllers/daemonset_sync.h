// One pass of the DaemonSet controller over one set (kube's syncDaemonSet):
// history, then a pod per eligible node (manage), the rolling update, old
// revisions pruned, and the status.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "controller.h"
#include "util.h"

namespace vkube::controllers::daemonset {

inline constexpr std::string_view kComponent = "daemonset-controller";
inline constexpr std::string_view kHashLabel = "controller-revision-hash";
inline constexpr std::string_view kGenerationLabel = "pod-template-generation";
inline constexpr std::string_view kGenerationAnnotation =
    "deprecated.daemonset.template.generation";

// kube's failedPodsBackoff: a failed daemon pod on a node is deleted at most
// once per backoff period, starting at 1 s and doubling up to 15 min.
// Thread-safe.
class FailedPodBackoff {
 public:
  // Whether `key` is still backing off at `now`; *wait is what remains.
  bool in_backoff(const std::string& key, TimePoint now, std::chrono::milliseconds* wait);
  // Starts or doubles the backoff of `key` at `now`.
  void next(const std::string& key, TimePoint now);

 private:
  struct Entry {
    TimePoint updated;
    std::chrono::milliseconds delay{0};
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

// kube's podByCreationTimestampAndPhase: bound pods first, then the oldest.
bool older_first(const json* a, const json* b);

class DaemonSync {
 public:
  // `ds` is the cached set (apiVersion/kind set), `pods` those it claimed,
  // `revisions` its history sorted by revision number.
  DaemonSync(Context& ctx, const Lister& pods, const Lister& nodes, FailedPodBackoff& backoff,
             json ds, std::vector<ObjectPtr> pods_claimed, std::vector<ObjectPtr> revisions);

  Status run();
  bool wrote() const { return wrote_.load(); }
  // Set when the pass wants to look again after a delay (failed-pod backoff,
  // minReadySeconds).
  std::chrono::milliseconds requeue_after() const { return requeue_after_; }

 private:
  using NodePods = std::map<std::string, std::vector<const json*>>;

  // Finds or creates the revision of the current template; hash_ is its hash.
  Status construct_history();
  // Creates the revision of the current template (kube's snapshot).
  Result<json> snapshot(int64_t number);
  // Of several revisions holding the current template, keeps the newest.
  Result<json> dedup(const std::vector<const json*>& current);
  Status manage();
  // kube's podsShouldBeOnNode for one node.
  void plan_node(const json& node, const NodePods& by_node, std::vector<std::string>* create,
                 std::vector<std::string>* remove);
  Status rolling_update();
  // The one new and one old live pod of a node; false when there are more.
  bool split_node(const std::vector<const json*>& pods, const json** fresh, const json** old) const;
  Status roll_replacing(const NodePods& by_node, int64_t max_unavailable);
  Status roll_surging(const NodePods& by_node, int64_t max_surge, int64_t desired);
  Status cleanup_history();
  Status write_status();

  // The claimed pods by target node; terminal pods being deleted count only
  // when `with_deleted_terminal`.
  NodePods pods_by_node(bool with_deleted_terminal) const;
  // Re-reads the set's pods from the cache after this pass's writes.
  void refresh_pods();
  Status sync_nodes(const std::vector<std::string>& remove, const std::vector<std::string>& create);
  bool pod_updated(const json& pod) const;
  bool available(const json& pod) const;
  void requeue(std::chrono::milliseconds delay);

  Context& ctx_;
  const Lister& pod_cache_;
  const Lister& nodes_;
  FailedPodBackoff& backoff_;
  json ds_;
  std::vector<ObjectPtr> pods_;
  std::vector<ObjectPtr> revisions_;
  std::vector<ObjectPtr> node_list_;
  TimePoint now_;
  int64_t min_ready_ = 0;
  std::string hash_;
  std::vector<const json*> old_revisions_;
  std::atomic<bool> wrote_{false};
  std::chrono::milliseconds requeue_after_{0};
};

}  // namespace vkube::controllers::daemonset
