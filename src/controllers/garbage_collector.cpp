// The garbage collector (kube's pkg/controller/garbagecollector): a graph of
// every object's ownerReferences, fed by the informers' any-event stream.
//   - An object whose owners are all gone is deleted (Background), or in
//     the foreground when an owner waits for its dependents.
//   - An object with a surviving owner loses its references to gone owners.
//   - An owner being deleted with the "orphan" finalizer has its references
//     removed from its dependents, then the finalizer.
//   - An owner being deleted with "foregroundDeletion" has its dependents
//     deleted; the finalizer goes once no dependent with
//     blockOwnerDeletion remains.
// Queue keys are object uids.
#include <mutex>
#include <set>
#include <unordered_map>

#include "controller.h"
#include "util.h"

namespace vkube::controllers {

namespace {

struct OwnerRef {
  std::string uid;
  bool block = false;
};

struct Node {
  std::string path;  // API path of the object
  std::vector<OwnerRef> owners;
  bool deleting = false;
  bool foreground = false;  // finalizer foregroundDeletion
  bool orphan = false;      // finalizer orphan
};

bool has(const json& list, std::string_view v) {
  if (!list.is_array()) return false;
  for (const json& x : list)
    if (x.is_string() && x.get_ref<const std::string&>() == v) return true;
  return false;
}

class GarbageCollector final : public Controller {
 public:
  explicit GarbageCollector(Context& ctx) : Controller(ctx, "garbage-collector") {
    min_workers_ = 8;  // kube runs 20 concurrent GC workers
    ctx.informers.on_any_event([this](const ObjectEvent& e) { observe(e); });
  }

 private:
  void observe(const ObjectEvent& e) {
    const json& obj = *e.object;
    std::string uid = meta(obj, "uid");
    if (uid.empty()) return;
    std::vector<std::string> wake;
    {
      std::lock_guard lock(mu_);
      if (e.type == EventType::kDeleted) {
        auto it = nodes_.find(uid);
        if (it != nodes_.end()) {
          for (const OwnerRef& o : it->second.owners) {
            unlink(o.uid, uid);
            wake.push_back(o.uid);  // a foreground owner may be done waiting
          }
          nodes_.erase(it);
        }
        if (auto d = dependents_.find(uid); d != dependents_.end())
          wake.insert(wake.end(), d->second.begin(), d->second.end());
      } else {
        Node& n = nodes_[uid];
        for (const OwnerRef& o : n.owners) unlink(o.uid, uid);
        n = Node{};
        n.path = api_path(obj.value("apiVersion", ""), e.resource.plural, meta(obj, "namespace"),
                          meta(obj, "name"));
        const json& m = obj["metadata"];
        if (auto refs = m.find("ownerReferences"); refs != m.end() && refs->is_array()) {
          for (const json& r : *refs) {
            if (!r.is_object()) continue;
            OwnerRef o{r.value("uid", ""), r.value("blockOwnerDeletion", false)};
            if (o.uid.empty()) continue;
            dependents_[o.uid].insert(uid);
            n.owners.push_back(std::move(o));
          }
        }
        n.deleting = is_terminating(obj);
        if (auto f = m.find("finalizers"); f != m.end()) {
          n.foreground = has(*f, "foregroundDeletion");
          n.orphan = has(*f, "orphan");
        }
        // Objects with owners are checked (their owners may be gone); owners
        // being deleted with our finalizers have work to do.
        if (!n.owners.empty() || (n.deleting && (n.foreground || n.orphan))) wake.push_back(uid);
      }
    }
    for (const std::string& w : wake) queue().add(w);
  }

  void unlink(const std::string& owner, const std::string& dependent) {
    auto d = dependents_.find(owner);
    if (d == dependents_.end()) return;
    d->second.erase(dependent);
    if (d->second.empty()) dependents_.erase(d);
  }

  Status reconcile(const std::string& uid) override {
    Node n;
    std::vector<std::pair<std::string, Node>> deps;
    std::vector<std::string> gone, waiting;
    bool solid = false;
    {
      std::lock_guard lock(mu_);
      auto it = nodes_.find(uid);
      if (it == nodes_.end()) return Status::ok();
      n = it->second;
      if (auto d = dependents_.find(uid); d != dependents_.end())
        for (const std::string& dep : d->second)
          if (auto dn = nodes_.find(dep); dn != nodes_.end()) deps.emplace_back(dep, dn->second);
      for (const OwnerRef& o : n.owners) {
        auto on = nodes_.find(o.uid);
        if (on == nodes_.end())
          gone.push_back(o.uid);
        else if (on->second.deleting && on->second.foreground)
          waiting.push_back(o.uid);
        else
          solid = true;
      }
    }
    if (n.deleting && n.orphan) return orphan_dependents(uid, n, deps);
    if (n.deleting && n.foreground) return delete_dependents(uid, n, deps);
    if (n.owners.empty() || n.deleting) return Status::ok();
    if (solid) {
      if (gone.empty() && waiting.empty()) return Status::ok();
      std::vector<std::string> drop = gone;
      drop.insert(drop.end(), waiting.begin(), waiting.end());
      return remove_owner_refs(n.path, uid, drop);
    }
    // Every owner is gone or waiting for its dependents: this object goes.
    bool foreground = !waiting.empty() && !deps.empty();
    json body = {{"propagationPolicy", foreground ? "Foreground" : "Background"},
                 {"preconditions", {{"uid", uid}}}};
    ApiResult r = ctx_.client.call("DELETE", n.path, body);
    if (r.ok() || r.code == 404 || r.code == 409) return Status::ok();
    return Status::internal("deleting " + n.path + ": " + r.body.dump());
  }

  Status orphan_dependents(const std::string& uid, const Node& n,
                           const std::vector<std::pair<std::string, Node>>& deps) {
    for (const auto& [dep_uid, dep] : deps)
      VKUBE_RETURN_IF_ERROR(remove_owner_refs(dep.path, dep_uid, {uid}));
    return remove_finalizer(n.path, uid, "orphan");
  }

  Status delete_dependents(const std::string& uid, const Node& n,
                           const std::vector<std::pair<std::string, Node>>& deps) {
    bool blocked = false;
    for (const auto& [dep_uid, dep] : deps) {
      for (const OwnerRef& o : dep.owners)
        if (o.uid == uid && o.block) blocked = true;
      if (dep.deleting) continue;
      bool has_dependents;
      {
        std::lock_guard lock(mu_);
        has_dependents = dependents_.count(dep_uid) > 0;
      }
      json body = {{"propagationPolicy", has_dependents ? "Foreground" : "Background"},
                   {"preconditions", {{"uid", dep_uid}}}};
      ApiResult r = ctx_.client.call("DELETE", dep.path, body);
      if (!r.ok() && r.code != 404 && r.code != 409)
        return Status::internal("deleting " + dep.path + ": " + r.body.dump());
    }
    // Woken again as each blocking dependent goes.
    if (blocked) return Status::ok();
    return remove_finalizer(n.path, uid, "foregroundDeletion");
  }

  // Reads the object, and writes it back without the owner references to
  // `owners` (optimistic concurrency through resourceVersion).
  Status remove_owner_refs(const std::string& path, const std::string& uid,
                           const std::vector<std::string>& owners) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      ApiResult cur = ctx_.client.call("GET", path);
      if (cur.code == 404) return Status::ok();
      if (!cur.ok()) return Status::internal("reading " + path + ": " + cur.body.dump());
      if (meta(cur.body, "uid") != uid) return Status::ok();
      json refs = json::array();
      for (const json& r : cur.body["metadata"].value("ownerReferences", json::array()))
        if (std::find(owners.begin(), owners.end(), r.value("uid", "")) == owners.end())
          refs.push_back(r);
      json patch = {{"metadata",
                     {{"ownerReferences", refs.empty() ? json(nullptr) : refs},
                      {"resourceVersion", meta(cur.body, "resourceVersion")}}}};
      ApiResult r = ctx_.client.call("PATCH", path, patch, "application/merge-patch+json");
      if (r.ok() || r.code == 404) return Status::ok();
      if (r.code != 409) return Status::internal("patching " + path + ": " + r.body.dump());
    }
    return Status::conflict("ownerReferences of " + path + " keep changing");
  }

  Status remove_finalizer(const std::string& path, const std::string& uid,
                          const std::string& finalizer) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      ApiResult cur = ctx_.client.call("GET", path);
      if (cur.code == 404) return Status::ok();
      if (!cur.ok()) return Status::internal("reading " + path + ": " + cur.body.dump());
      if (meta(cur.body, "uid") != uid) return Status::ok();
      json fins = json::array();
      for (const json& f : cur.body["metadata"].value("finalizers", json::array()))
        if (f != finalizer) fins.push_back(f);
      json patch = {{"metadata",
                     {{"finalizers", fins.empty() ? json(nullptr) : fins},
                      {"resourceVersion", meta(cur.body, "resourceVersion")}}}};
      ApiResult r = ctx_.client.call("PATCH", path, patch, "application/merge-patch+json");
      if (r.ok() || r.code == 404) return Status::ok();
      if (r.code != 409) return Status::internal("patching " + path + ": " + r.body.dump());
    }
    return Status::conflict("finalizers of " + path + " keep changing");
  }

  std::mutex mu_;
  std::unordered_map<std::string, Node> nodes_;
  std::unordered_map<std::string, std::set<std::string>> dependents_;
};

}  // namespace

std::unique_ptr<Controller> make_garbage_collector(Context& ctx) {
  return std::make_unique<GarbageCollector>(ctx);
}

}  // namespace vkube::controllers
