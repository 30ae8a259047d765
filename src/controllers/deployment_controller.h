// The Deployment controller (kube's pkg/controller/deployment): a
// ReplicaSet per pod template (named and labelled by the template's hash),
// rolled over by RollingUpdate (maxSurge/maxUnavailable) or Recreate, with
// revisions, history cleanup, pause, proportional scaling, the progress
// deadline and the status that `kubectl rollout status` reads.
//
// deployment_controller.cpp: handlers, the sync entry point, adoption and
// status; deployment_rollout.cpp: the new ReplicaSet, the strategies,
// scaling and cleanup.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "controller.h"
#include "util.h"

namespace vkube::controllers {

class DeploymentController final : public Controller {
 public:
  explicit DeploymentController(Context& ctx);

 protected:
  Status reconcile(const std::string& key) override;

 private:
  // The replica sets of one sync, shared with the informer's cache (a copy
  // of each 40-container template per sync cost more than the sync itself);
  // one the sync writes is replaced by the server's answer.
  class ReplicaSets {
   public:
    struct Iterator {
      std::vector<ObjectPtr>::const_iterator at;
      const json& operator*() const { return **at; }
      Iterator& operator++() {
        ++at;
        return *this;
      }
      bool operator!=(const Iterator& o) const { return at != o.at; }
    };
    const json& operator[](size_t i) const { return *items_[i]; }
    size_t size() const { return items_.size(); }
    Iterator begin() const { return {items_.begin()}; }
    Iterator end() const { return {items_.end()}; }
    void push_back(ObjectPtr rs) { items_.push_back(std::move(rs)); }
    void push_back(json&& rs) { items_.push_back(std::make_shared<const json>(std::move(rs))); }
    void replace(size_t i, json&& rs) { items_[i] = std::make_shared<const json>(std::move(rs)); }
    std::vector<ObjectPtr>& items() { return items_; }

   private:
    std::vector<ObjectPtr> items_;
  };

  // One sync's view: the deployment and the replica sets it controls, each
  // replaced by the server's answer when written.
  struct Sync {
    std::string key;
    json d;
    ReplicaSets rss;  // oldest first (creationTimestamp, then name)
    std::optional<size_t> new_rs;
    std::vector<size_t> old;
    bool classified = false;  // new_rs and old are known
    bool wrote = false;
    bool revision_pending = false;  // d's revision annotation awaits write_status
  };

  // Handlers (dispatch thread): queue the deployments concerned.
  void on_replicaset(const ObjectEvent& e);
  void on_pod(const ObjectEvent& e);
  void queue_owner(const json& rs);
  void queue_matching(const json& rs);

  Status sync_deployment(Sync& s);
  Status claim_replicasets(Sync& s, const api::LabelSelector& sel);
  Status check_paused_conditions(Sync& s);
  Result<bool> is_scaling_event(Sync& s);
  Status sync_status_only(Sync& s);
  Status sync_scale(Sync& s);
  json calculate_status(const Sync& s) const;
  Status sync_rollout_status(Sync& s);
  void requeue_stuck(const Sync& s, const json& status);
  Status write_status(Sync& s, const json& status);
  void set_deployment_revision(Sync& s, const std::string& revision);
  // The deployment as an Event's involvedObject.
  static json event_object(const json& d);

  // deployment_rollout.cpp
  Status get_all_replicasets(Sync& s, bool create);
  Status create_new_replicaset(Sync& s, const std::string& revision);
  Result<bool> scale_replicaset(Sync& s, size_t i, int64_t scale, const char* operation);
  Result<bool> scale_and_record(Sync& s, size_t i, int64_t scale);
  Status rollout_rolling(Sync& s);
  Status rollout_recreate(Sync& s);
  Result<bool> reconcile_new_replicaset(Sync& s);
  Result<bool> reconcile_old_replicasets(Sync& s);
  Result<int64_t> cleanup_unhealthy_replicas(Sync& s, int64_t max_cleanup);
  Result<int64_t> scale_down_old_for_rolling(Sync& s);
  Status scale(Sync& s);
  Status cleanup(Sync& s);
  bool old_pods_running(const Sync& s) const;
  Result<int64_t> new_rs_new_replicas(const Sync& s, const json& new_rs) const;

  ApiResult write(Sync& s, std::string_view method, const std::string& path,
                  const json& body = nullptr, std::string_view content_type = "application/json");
  static std::string rs_path(const json& rs, std::string_view sub = {});
  std::string deployment_path(const Sync& s, std::string_view sub = {}) const;

  const Lister& deployments_;
  const Lister& replicasets_;
  const Lister& pods_;
};

}  // namespace vkube::controllers
