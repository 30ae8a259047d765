#include "vkube/controllers/namespace_controller.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "vkube/common/log.h"
#include "vkube/controllers/local_client.h"

namespace vkube::controllers {

namespace {

using namespace std::chrono_literals;

constexpr std::string_view kNamespacePrefix = "/registry/core/namespaces/";

class Impl final : public NamespaceController {
 public:
  Impl(apiserver::ApiServer& api, storage::Backend& store)
      : client_(api, "system:serviceaccount:kube-system:namespace-controller"), store_(store) {}

  ~Impl() override { stop(); }

  void start() {
    thread_ = std::thread([this] { run(); });
  }

  void stop() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    // Watch first, then list, so no deletion between the two is missed.
    auto watch = store_.watch(kNamespacePrefix, 0);
    if (watch.is_ok()) (*watch)->set_notifier([this] { wake(); });
    queue_terminating();
    std::unique_lock lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, 1s, [&] { return stopping_ || woken_; });
      if (stopping_) break;
      woken_ = false;
      lock.unlock();
      if (watch.is_ok()) {
        std::vector<storage::EventPtr> events;
        Status s = (*watch)->poll(&events, 0ms);
        if (!s.is_ok()) {
          watch = store_.watch(kNamespacePrefix, 0);
          if (watch.is_ok()) (*watch)->set_notifier([this] { wake(); });
        }
      }
      // Terminating namespaces are few: re-check them all on each wake-up
      // and each second (finalizers of their contents may be pending).
      queue_terminating();
      for (const std::string& ns : terminating_) finalize(ns);
      lock.lock();
    }
  }

  void wake() {
    std::lock_guard lock(mu_);
    woken_ = true;
    cv_.notify_all();
  }

  void queue_terminating() {
    terminating_.clear();
    ApiResult r = client_.call("GET", "/api/v1/namespaces");
    if (!r.ok()) return;
    for (const json& ns : r.body.value("items", json::array())) {
      if (ns["metadata"].contains("deletionTimestamp"))
        terminating_.push_back(ns["metadata"].value("name", ""));
    }
  }

  // The collection URLs of every namespaced resource that can be deleted.
  std::vector<std::string> collections(const std::string& ns) {
    std::vector<std::string> out;
    std::vector<std::string> group_versions = {"/api/v1"};
    ApiResult groups = client_.call("GET", "/apis");
    for (const json& g : groups.body.value("groups", json::array()))
      group_versions.push_back("/apis/" + g["preferredVersion"].value("groupVersion", ""));
    std::set<std::string> seen;
    for (const std::string& gv : group_versions) {
      ApiResult list = client_.call("GET", gv);
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
    json cond = {{"type", type},
                 {"status", status ? "True" : "False"},
                 {"reason", reason},
                 {"message", message}};
    ApiResult cur = client_.call("GET", "/api/v1/namespaces/" + ns);
    if (!cur.ok()) return;
    json conditions = cur.body["status"].value("conditions", json::array());
    bool found = false;
    for (json& c : conditions) {
      if (c.value("type", "") == type) {
        if (c.value("status", "") == cond["status"] && c.value("message", "") == message) return;
        c = cond;
        found = true;
      }
    }
    if (!found) conditions.push_back(cond);
    json patch = {{"status", {{"conditions", conditions}}}};
    client_.call("PATCH", "/api/v1/namespaces/" + ns + "/status", patch,
                 "application/merge-patch+json");
  }

  void finalize(const std::string& ns) {
    size_t remaining = 0;
    std::string waiting;
    for (const std::string& url : collections(ns)) {
      ApiResult del = client_.call("DELETE", url, json{{"propagationPolicy", "Background"}});
      if (!del.ok() && del.code != 404 && del.code != 405) {
        VKUBE_LOG(warn, "namespace content deletion failed", {"namespace", ns}, {"url", url},
                  {"code", del.code});
      }
      ApiResult left = client_.call("GET", url + "?limit=1");
      size_t n = left.ok() ? left.body.value("items", json::array()).size() : 0;
      if (n > 0) {
        remaining += n;
        waiting = url.substr(url.rfind('/') + 1);
      }
    }
    if (remaining > 0) {
      set_condition(ns, "NamespaceContentRemaining", true, "SomeResourcesRemain",
                    "Some resources are remaining: " + waiting + " has objects");
      return;
    }
    set_condition(ns, "NamespaceContentRemaining", false, "ContentRemoved",
                  "All content successfully removed");
    json body = {{"apiVersion", "v1"},
                 {"kind", "Namespace"},
                 {"metadata", {{"name", ns}}},
                 {"spec", {{"finalizers", json::array()}}}};
    ApiResult fin = client_.call("PUT", "/api/v1/namespaces/" + ns + "/finalize", body);
    if (fin.ok()) VKUBE_LOG(info, "namespace deleted", {"namespace", ns});
  }

  LocalClient client_;
  storage::Backend& store_;
  std::vector<std::string> terminating_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool woken_ = false;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<NamespaceController> NamespaceController::start(apiserver::ApiServer& api,
                                                                storage::Backend& store) {
  auto c = std::make_unique<Impl>(api, store);
  c->start();
  return c;
}

}  // namespace vkube::controllers
