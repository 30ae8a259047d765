// The CRD finalizer (kube's apiextensions "finalizer" controller): when a
// CustomResourceDefinition is deleted, the API server marks it and adds the
// customresourcecleanup finalizer; this controller deletes every custom
// resource of the CRD (through the API, so their own finalizers and the
// garbage collector are honoured), and once none is left removes the
// finalizer so the CRD, and with it the kind, goes.
#include <optional>

#include "controller.h"
#include "util.h"
#include "vkube/common/log.h"

namespace vkube::controllers {

namespace {

using namespace std::chrono_literals;

constexpr std::string_view kFinalizer = "customresourcecleanup.apiextensions.k8s.io";

bool has_finalizer(const json& obj) {
  for (const json& f : obj["metadata"].value("finalizers", json::array()))
    if (f == kFinalizer) return true;
  return false;
}

// Where the CRD's objects are served: "/apis/<group>/<version>" of its
// first served version, and the plural; empty when it serves none.
struct Collection {
  std::string group_version, plural;
  std::string all() const { return group_version + "/" + plural; }
  std::string object(const std::string& ns, const std::string& name) const {
    return group_version + (ns.empty() ? "" : "/namespaces/" + ns) + "/" + plural + "/" + name;
  }
};

std::optional<Collection> collection(const json& crd) {
  const json& spec = crd["spec"];
  std::string version;
  for (const json& v : spec.value("versions", json::array()))
    if (v.value("served", false) && version.empty()) version = v.value("name", "");
  std::string plural = crd["status"].value("acceptedNames", json::object()).value("plural", "");
  if (version.empty() || plural.empty()) return std::nullopt;
  return Collection{"/apis/" + spec.value("group", "") + "/" + version, plural};
}

class CrdCleanupController final : public Controller {
 public:
  explicit CrdCleanupController(Context& ctx)
      : Controller(ctx, "customresourcedefinition-cleanup"),
        crds_(ctx.informers.cache({"apiextensions.k8s.io", "customresourcedefinitions"})) {
    ctx.informers.on_event({"apiextensions.k8s.io", "customresourcedefinitions"},
                           [this](const ObjectEvent& e) {
                             if (e.type != EventType::kDeleted && deleting(*e.object))
                               queue().add(e.key);
                           });
  }

 private:
  static bool deleting(const json& crd) {
    return crd["metadata"].contains("deletionTimestamp") && has_finalizer(crd);
  }

  Status reconcile(const std::string& name) override {
    ObjectPtr crd = crds_.get("", name);
    if (!crd || !deleting(*crd)) return Status::ok();
    size_t remaining = 0;
    if (auto coll = collection(*crd)) {
      ApiResult list = ctx_.client.call("GET", coll->all());
      if (!list.ok() && list.code != 404)
        return Status::internal("listing " + coll->all() + ": " + list.body.dump());
      for (const json& item : list.body.value("items", json::array())) {
        const json& meta = item["metadata"];
        std::string path = coll->object(meta.value("namespace", ""), meta.value("name", ""));
        ++remaining;
        if (meta.contains("deletionTimestamp")) continue;  // waiting on its finalizers
        ApiResult del = ctx_.client.call("DELETE", path, json{{"propagationPolicy", "Background"}});
        if (!del.ok() && del.code != 404)
          VKUBE_LOG(warn, "custom resource deletion failed", {"path", path}, {"code", del.code});
      }
    }
    if (remaining > 0) {
      // Look again soon: objects without finalizers go at once, others when
      // their controllers let them.
      queue().add_after(name, remaining_delay(remaining));
      return Status::ok();
    }
    json finalizers = json::array();
    for (const json& f : (*crd)["metadata"].value("finalizers", json::array()))
      if (f != kFinalizer) finalizers.push_back(f);
    json patch = {{"metadata",
                   {{"finalizers", finalizers},
                    {"resourceVersion", (*crd)["metadata"].value("resourceVersion", "")}}}};
    ApiResult r =
        ctx_.client.call("PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name,
                         patch, "application/merge-patch+json");
    if (!r.ok() && r.code != 404)
      return Status::internal("removing the CRD finalizer: " + r.body.dump());
    VKUBE_LOG(info, "custom resource definition deleted with its objects", {"crd", name});
    return Status::ok();
  }

  static std::chrono::milliseconds remaining_delay(size_t remaining) {
    return remaining > 1000 ? 1s : 100ms;
  }

  const Lister& crds_;
};

}  // namespace

std::unique_ptr<Controller> make_crd_cleanup_controller(Context& ctx) {
  return std::make_unique<CrdCleanupController>(ctx);
}

}  // namespace vkube::controllers
