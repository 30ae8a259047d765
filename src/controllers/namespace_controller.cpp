// The namespace lifecycle controller: when a namespace is deleted it deletes
// everything in it (every namespaced resource that supports
// deletecollection, found through discovery), reports progress in the
// namespace's status conditions, and finally clears the "kubernetes"
// finalizer so the namespace itself goes. It looks again whenever an object
// of a terminating namespace changes or goes, and every few seconds while
// content remains (objects held by finalizers).
#include <set>

#include "controller.h"
#include "util.h"
#include "vkube/common/log.h"

namespace vkube::controllers {

namespace {

using namespace std::chrono_literals;

class NamespaceController final : public Controller {
 public:
  explicit NamespaceController(Context& ctx)
      : Controller(ctx, "namespace"), namespaces_(ctx.informers.cache({"core", "namespaces"})) {
    ctx.informers.on_event({"core", "namespaces"}, [this](const ObjectEvent& e) {
      if (e.type != EventType::kDeleted && is_terminating(*e.object)) queue().add(e.key);
    });
    // Content of a terminating namespace changing (a finalizer removed, an
    // object gone) may let the namespace finish.
    ctx.informers.on_any_event([this](const ObjectEvent& e) {
      auto [ns, name] = split_key(e.key);
      if (ns.empty() || e.resource.plural == "events") return;
      if (ObjectPtr n = namespaces_.get(ns); n && is_terminating(*n)) queue().add_after(ns, 20ms);
    });
  }

 private:
  Status reconcile(const std::string& name) override {
    ObjectPtr ns = namespaces_.get(name);
    if (!ns || !is_terminating(*ns)) return Status::ok();
    size_t remaining = 0;
    std::string waiting;
    for (const std::string& url : collections(name)) {
      ApiResult del = ctx_.client.call("DELETE", url, json{{"propagationPolicy", "Background"}});
      if (!del.ok() && del.code != 404 && del.code != 405)
        VKUBE_LOG(warn, "namespace content deletion failed", {"namespace", name}, {"url", url},
                  {"code", del.code});
      ApiResult left = ctx_.client.call("GET", url + "?limit=1");
      size_t n = left.ok() ? left.body.value("items", json::array()).size() : 0;
      if (n > 0) {
        remaining += n;
        waiting = url.substr(url.rfind('/') + 1);
      }
    }
    if (remaining > 0) {
      set_condition(name, "NamespaceContentRemaining", true, "SomeResourcesRemain",
                    "Some resources are remaining: " + waiting + " has objects");
      queue().add_after(name, 5s);
      return Status::ok();
    }
    set_condition(name, "NamespaceContentRemaining", false, "ContentRemoved",
                  "All content successfully removed");
    json body = {{"apiVersion", "v1"},
                 {"kind", "Namespace"},
                 {"metadata", {{"name", name}}},
                 {"spec", {{"finalizers", json::array()}}}};
    ApiResult fin = ctx_.client.call("PUT", "/api/v1/namespaces/" + name + "/finalize", body);
    if (!fin.ok() && fin.code != 404)
      return Status::internal("finalizing namespace " + name + ": " + fin.body.dump());
    VKUBE_LOG(info, "namespace deleted", {"namespace", name});
    return Status::ok();
  }

  // The collection URLs of every namespaced resource that can be deleted.
  std::vector<std::string> collections(const std::string& ns) {
    std::vector<std::string> out;
    std::vector<std::string> group_versions = {"/api/v1"};
    ApiResult groups = ctx_.client.call("GET", "/apis");
    for (const json& g : groups.body.value("groups", json::array()))
      group_versions.push_back("/apis/" + g["preferredVersion"].value("groupVersion", ""));
    std::set<std::string> seen;
    for (const std::string& gv : group_versions) {
      ApiResult list = ctx_.client.call("GET", gv);
      for (const json& r : list.body.value("resources", json::array())) {
        std::string name = r.value("name", "");
        if (!r.value("namespaced", false) || name.find('/') != std::string::npos) continue;
        bool deletable = false;
        for (const json& v : r.value("verbs", json::array())) deletable |= v == "deletecollection";
        if (!deletable || !seen.insert(r.value("kind", "") + "/" + name).second) continue;
        out.push_back(gv + "/namespaces/" + ns + "/" + name);
      }
    }
    return out;
  }

  void set_condition(const std::string& ns, const std::string& type, bool status,
                     const std::string& reason, const std::string& message) {
    ApiResult cur = ctx_.client.call("GET", "/api/v1/namespaces/" + ns);
    if (!cur.ok()) return;
    json cond = {{"type", type},
                 {"status", status ? "True" : "False"},
                 {"lastTransitionTime", rfc3339(ctx_.now())},
                 {"reason", reason},
                 {"message", message}};
    json conditions = cur.body["status"].value("conditions", json::array());
    bool found = false;
    for (json& c : conditions) {
      if (c.value("type", "") != type) continue;
      if (c.value("status", "") == cond["status"] && c.value("message", "") == message) return;
      c = cond;
      found = true;
    }
    if (!found) conditions.push_back(cond);
    json patch = {{"status", {{"conditions", conditions}}}};
    ctx_.client.call("PATCH", "/api/v1/namespaces/" + ns + "/status", patch,
                     "application/merge-patch+json");
  }

  const Lister& namespaces_;
};

}  // namespace

std::unique_ptr<Controller> make_namespace_controller(Context& ctx) {
  return std::make_unique<NamespaceController>(ctx);
}

}  // namespace vkube::controllers
