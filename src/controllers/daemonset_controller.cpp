// The DaemonSet controller (kube's pkg/controller/daemon): one pod per
// eligible Node, pinned to it by node affinity, with the daemon tolerations;
// pods of nodes that go away or stop fitting are deleted; template changes
// roll out with RollingUpdate (maxUnavailable/maxSurge) or wait for manual
// deletes (OnDelete), recorded as ControllerRevisions. A set is looked at
// again when it, one of its pods, its revisions or any Node changes.
#include "controller.h"
#include "daemonset_sync.h"
#include "util.h"
#include "workload_common.h"

namespace vkube::controllers {

namespace {

using daemonset::DaemonSync;

class DaemonSetController final : public Controller {
 public:
  explicit DaemonSetController(Context& ctx)
      : Controller(ctx, "daemonset"),
        sets_(ctx.informers.cache({"apps", "daemonsets"})),
        pods_(ctx.informers.cache({"core", "pods"})),
        nodes_(ctx.informers.cache({"core", "nodes"})),
        revisions_(ctx.informers.cache({"apps", "controllerrevisions"})) {
    ctx.informers.on_event({"apps", "daemonsets"},
                           [this](const ObjectEvent& e) { queue().add(e.key); });
    ctx.informers.on_event({"core", "pods"}, [this](const ObjectEvent& e) { on_owned(e); });
    ctx.informers.on_event({"apps", "controllerrevisions"},
                           [this](const ObjectEvent& e) { on_owned(e); });
    // A node that comes, goes or changes labels or taints may change where
    // daemon pods belong; its status heartbeats do not.
    ctx.informers.on_event({"core", "nodes"}, [this](const ObjectEvent& e) {
      if (e.type == EventType::kModified && e.old && labels_of(*e.old) == labels_of(*e.object) &&
          e.old->value("spec", json()) == e.object->value("spec", json()))
        return;
      for (const ObjectPtr& ds : sets_.list()) queue().add(object_key(*ds));
    });
  }

 private:
  // An object's controlling DaemonSet, or for an orphan pod every set whose
  // selector matches it.
  void on_owned(const ObjectEvent& e) {
    auto owner_key = [](const json& obj) -> std::string {
      const json* ref = controller_ref(obj);
      if (ref == nullptr || ref->value("kind", "") != "DaemonSet") return {};
      return meta(obj, "namespace") + "/" + ref->value("name", "");
    };
    std::string key = owner_key(*e.object);
    if (!key.empty()) queue().add(key);
    if (e.old) {
      std::string old_key = owner_key(*e.old);
      if (!old_key.empty() && old_key != key) queue().add(old_key);
    }
    if (controller_ref(*e.object) != nullptr || e.type == EventType::kDeleted) return;
    for (const ObjectPtr& ds : sets_.list(meta(*e.object, "namespace"))) {
      auto selector = selector_of(ds->at("spec").value("selector", json()));
      if (selector && !selector->empty() && selector->matches(labels_of(*e.object)))
        queue().add(object_key(*ds));
    }
  }

  Status reconcile(const std::string& key) override {
    ObjectPtr cached = sets_.get(key);
    // A set being deleted keeps its status: its history may be half gone.
    if (!cached || is_terminating(*cached)) return Status::ok();
    json ds = workload::with_type(*cached, "apps/v1", "DaemonSet");
    auto selector = selector_of(ds["spec"].value("selector", json()));
    if (!selector) return Status::ok();
    if (selector->empty()) {
      ctx_.events.record(ds, std::string(daemonset::kComponent), "Warning", "SelectingAll",
                         "This daemon set is selecting all pods. A non-empty selector is "
                         "required.");
      return Status::ok();
    }
    auto pods = workload::claim_objects(
        ctx_.client, ds, pods_.list(meta(ds, "namespace")),
        [&](const json& pod) { return selector->matches(labels_of(pod)); }, "v1", "pods");
    if (!pods.is_ok()) return pods.status();
    auto revisions = workload::claim_revisions(ctx_.client, ds, revisions_, *selector);
    if (!revisions.is_ok()) return revisions.status();

    DaemonSync sync(ctx_, pods_, nodes_, backoff_, std::move(ds), std::move(pods).value(),
                    std::move(revisions).value());
    Status s = sync.run();
    if (sync.wrote()) ctx_.informers.sync();
    if (sync.requeue_after().count() > 0) queue().add_after(key, sync.requeue_after());
    return s;
  }

  const Lister& sets_;
  const Lister& pods_;
  const Lister& nodes_;
  const Lister& revisions_;
  daemonset::FailedPodBackoff backoff_;
};

}  // namespace

std::unique_ptr<Controller> make_daemonset_controller(Context& ctx) {
  return std::make_unique<DaemonSetController>(ctx);
}

}  // namespace vkube::controllers
