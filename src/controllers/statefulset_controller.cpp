// The StatefulSet controller (kube's pkg/controller/statefulset): pods with
// stable ordinal names, hostnames and PersistentVolumeClaims, created in
// order (OrderedReady) or all at once (Parallel), rolled from the highest
// ordinal down to the partition, with ControllerRevisions recording each
// template for `kubectl rollout history/undo`. A set is looked at again
// whenever it or one of its pods changes.
#include <chrono>

#include "controller.h"
#include "statefulset_sync.h"
#include "util.h"
#include "workload_common.h"

namespace vkube::controllers {

namespace {

using statefulset::parent_and_ordinal;
using workload::int_at;

class StatefulSetController final : public Controller {
 public:
  explicit StatefulSetController(Context& ctx)
      : Controller(ctx, "statefulset"),
        sets_(ctx.informers.cache({"apps", "statefulsets"})),
        pods_(ctx.informers.cache({"core", "pods"})),
        claims_(ctx.informers.cache({"core", "persistentvolumeclaims"})),
        revisions_(ctx.informers.cache({"apps", "controllerrevisions"})) {
    ctx.informers.on_event({"apps", "statefulsets"},
                           [this](const ObjectEvent& e) { queue().add(e.key); });
    ctx.informers.on_event({"core", "pods"}, [this](const ObjectEvent& e) { on_pod(e); });
    // A claim going away may unblock a pod waiting for its stale claim.
    ctx.informers.on_event({"core", "persistentvolumeclaims"}, [this](const ObjectEvent& e) {
      if (e.type != EventType::kDeleted) return;
      for (const ObjectPtr& set : sets_.list(meta(*e.object, "namespace")))
        queue().add(object_key(*set));
    });
  }

 private:
  // A pod's controlling set, or for an orphan every set that could adopt it.
  void on_pod(const ObjectEvent& e) {
    auto owner_key = [&](const json& pod) -> std::string {
      const json* ref = controller_ref(pod);
      if (ref == nullptr || ref->value("kind", "") != "StatefulSet") return {};
      return meta(pod, "namespace") + "/" + ref->value("name", "");
    };
    std::string key = owner_key(*e.object);
    if (!key.empty()) queue().add(key);
    if (e.old) {
      std::string old_key = owner_key(*e.old);
      if (!old_key.empty() && old_key != key) queue().add(old_key);
    }
    if (controller_ref(*e.object) != nullptr || e.type == EventType::kDeleted) return;
    const std::string parent = parent_and_ordinal(meta(*e.object, "name")).first;
    if (parent.empty()) return;
    if (ObjectPtr set = sets_.get(meta(*e.object, "namespace"), parent)) {
      auto selector = selector_of(set->at("spec").value("selector", json()));
      if (selector && selector->matches(labels_of(*e.object))) queue().add(object_key(*set));
    }
  }

  Status reconcile(const std::string& key) override {
    ObjectPtr cached = sets_.get(key);
    if (!cached) return Status::ok();
    json set = workload::with_type(*cached, "apps/v1", "StatefulSet");
    auto selector = selector_of(set["spec"].value("selector", json()));
    if (!selector || selector->empty()) return Status::ok();  // selects nothing

    const std::string name = meta(set, "name");
    auto pods = workload::claim_objects(
        ctx_.client, set, pods_.list(meta(set, "namespace")),
        [&](const json& pod) {
          return selector->matches(labels_of(pod)) &&
                 parent_and_ordinal(meta(pod, "name")).first == name;
        },
        "v1", "pods");
    if (!pods.is_ok()) return pods.status();
    auto revisions = workload::claim_revisions(ctx_.client, set, revisions_, *selector);
    if (!revisions.is_ok()) return revisions.status();

    statefulset::SetSync sync(ctx_, claims_, std::move(set), std::move(pods).value(),
                              std::move(revisions).value());
    Status s = sync.run();
    if (sync.wrote()) ctx_.informers.sync();
    // Availability after minReadySeconds is a matter of time, not of events.
    const int64_t min_ready = int_at(*cached, {"spec", "minReadySeconds"});
    if (s.is_ok() && min_ready > 0 &&
        int_at(sync.status(), {"availableReplicas"}) != int_at(*cached, {"spec", "replicas"}, 1))
      queue().add_after(key, std::chrono::seconds(min_ready));
    return s;
  }

  const Lister& sets_;
  const Lister& pods_;
  const Lister& claims_;
  const Lister& revisions_;
};

}  // namespace

std::unique_ptr<Controller> make_statefulset_controller(Context& ctx) {
  return std::make_unique<StatefulSetController>(ctx);
}

}  // namespace vkube::controllers
