// Inside the syncer: the generic loop (queues, workers, the host view with
// the syncer's own recent writes) and the per-kind reconcilers, which live in
// sync_pods.cpp, sync_objects.cpp and sync_nodes.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vkube/controllers/event_recorder.h"
#include "vkube/controllers/informers.h"
#include "vkube/controllers/local_client.h"
#include "vkube/controllers/work_queue.h"
#include "vkube/hostclient/client.h"
#include "vkube/hostclient/informer.h"
#include "vkube/syncer/names.h"
#include "vkube/syncer/syncer.h"
#include "vkube/syncer/translate_pod.h"

namespace vkube::syncer {

using json = nlohmann::json;
using controllers::ObjectPtr;

// The user the syncer writes tenant objects as; the API server lets it (and
// only it) give a tenant Service the host's cluster IP.
inline constexpr const char* kSyncerUser = "system:vkube:syncer";
inline constexpr const char* kAnchorPrefix = "vkube-tenant-";
// On the tenant's default/kubernetes Service once it carries the address of
// the host Service fronting the tenant's API (namespace/name); the
// kubernetes-service controller then leaves its ports alone.
inline constexpr const char* kHostServiceAnnotation = "vkube.io/host-service";

// One kind on the host: its informer, and the syncer's own writes that the
// informer has not delivered yet, so that a reconcile running right after a
// write does not write again.
class HostView {
 public:
  HostView(hostclient::Client& client, hostclient::InformerOptions options);
  hostclient::Informer informer;

  // The freshest of the cache and the recent writes; null when absent (or
  // deleted by the syncer and not yet gone from the cache).
  ObjectPtr get(const std::string& key);
  // Records a write's answer. An answer about an object the informer has
  // already seen deleted is dropped: a DELETE answered "terminating" after
  // the host finished the pod (a fast kubelet) must not outlive the pod.
  void wrote(const std::string& key, json object);
  void deleted(const std::string& key, const std::string& uid);

 private:
  struct Written {
    ObjectPtr object;
    std::chrono::steady_clock::time_point at;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Written> written_;
  std::unordered_map<std::string, std::string> deleted_;  // key -> uid
  // UIDs the informer delivered as deleted, the latest kMaxGone of them.
  std::unordered_set<std::string> gone_;
  std::deque<std::string> gone_order_;
};

// A work queue and its workers.
struct Loop {
  std::string name;
  controllers::WorkQueue queue;
  std::function<Status(const std::string&)> reconcile;
  std::unique_ptr<controllers::QueueWorkers> workers;  // made by start_loop
};

class SyncerImpl final : public Syncer {
 public:
  SyncerImpl(SyncerOptions options, std::unique_ptr<hostclient::Client> host);
  ~SyncerImpl() override;

  void attach(apiserver::ApiServer& tenant, controllers::Informers& informers) override;
  Status start() override;
  void stop() override;
  bool ready() const override { return ready_; }
  bool wait_idle(std::chrono::milliseconds timeout) override;
  SyncerStats stats() const override;
  std::string metrics() const override;
  bool busy() const;

  // --- shared by the reconcilers ---
  const SyncerOptions& options() const { return o_; }
  const NameMapper& names() const { return names_; }
  // PodDisruptionBudgets are the one synced kind outside the core group.
  std::string host_path(const char* plural) const {
    const bool policy = std::string_view(plural) == "poddisruptionbudgets";
    return (policy ? "/apis/policy/v1/namespaces/" : "/api/v1/namespaces/") + o_.host_namespace +
           "/" + plural;
  }
  std::string host_key(const std::string& ns, const std::string& name) const {
    return o_.host_namespace + "/" + names_.host_name(ns, name);
  }
  json owner() const;

  // Host writes, recorded in `view`. A 409 (the cache trails) asks for a
  // retry; an answer that cannot be retried is an error.
  Status host_create(HostView& view, const char* plural, const json& obj);
  Status host_put(HostView& view, const char* plural, const json& obj);
  Status host_patch(HostView& view, const char* plural, const std::string& name, const json& patch);
  // DELETE with a UID precondition and, when >= 0, a grace period.
  Status host_delete(HostView& view, const char* plural, const json& obj, int64_t grace = -1);
  // A tenant write as the syncer; waits until the tenant's informers hold it.
  controllers::ApiResult tenant_call(std::string_view method, const std::string& target,
                                     const json& body = nullptr,
                                     std::string_view content_type = "application/json");
  void warn(const json& tenant_obj, const std::string& reason, const std::string& message);

  // sync_pods.cpp
  Status reconcile_pod(const std::string& key);
  PodContext pod_context() const;
  // Ends the tenant pod whose host pod is gone, with the host pod's final
  // status (its DisruptionTarget) when its DELETED event left one.
  Status delete_tenant_pod(const json& tpod);
  // The host pod's last state as its DELETED event gave it, by tenant key;
  // null when none is kept.
  ObjectPtr final_host_pod(const std::string& key);
  void forget_final_host_pod(const std::string& key);
  // A ConfigMap, Secret or claim `tpod` uses whose host name holds a host
  // object of another origin (described), else nullopt.
  std::optional<std::string> foreign_reference(const json& tpod);
  // sync_tokens.cpp. The host Secret with the credentials of tenant service
  // account ns/sa (created once; its name in *secret).
  Status ensure_api_access(const std::string& ns, const std::string& sa, std::string* secret);
  // Key "ns/sa": deletes the account's host Secret once no tenant pod runs as it.
  Status reconcile_token(const std::string& key);
  static std::string account_of(const json& pod);
  bool account_in_use(const std::string& ns, const std::string& sa) const;
  // sync_objects.cpp (ConfigMaps and Secrets a pod uses; Services)
  Status reconcile_config(const char* plural, const std::string& key);
  Status reconcile_service(const std::string& key);
  // sync_api_service.cpp: default/kubernetes gets the host Service's address.
  Status reconcile_api_service();
  Status reconcile_pvc(const std::string& key);
  // sync_pdbs.cpp: a tenant PodDisruptionBudget, so host drains honour it.
  Status reconcile_pdb(const std::string& key);
  // sync_events.cpp: a host event about a synced host pod, as the tenant's.
  Status reconcile_event(const std::string& host_key);
  // sync_nodes.cpp
  Status reconcile_node(const std::string& name);
  // The ConfigMaps and Secrets a tenant pod refers to.
  struct Refs {
    std::set<std::string> configmaps, secrets;  // names in the pod's namespace
  };
  static Refs refs_of(const json& pod);
  bool referenced(const char* plural, const std::string& key);

  // Tenant caches.
  const controllers::Lister* t_pods = nullptr;
  const controllers::Lister* t_configmaps = nullptr;
  const controllers::Lister* t_secrets = nullptr;
  const controllers::Lister* t_services = nullptr;
  const controllers::Lister* t_nodes = nullptr;
  const controllers::Lister* t_pvcs = nullptr;
  const controllers::Lister* t_events = nullptr;
  const controllers::Lister* t_serviceaccounts = nullptr;
  const controllers::Lister* t_pdbs = nullptr;
  // Host views.
  std::unique_ptr<HostView> h_pods, h_configmaps, h_secrets, h_services, h_nodes, h_pvcs, h_events,
      h_pdbs;
  Loop pods, configmaps, secrets, services, nodes, pvcs, events, tokens, pdbs;
  std::vector<Loop*> loops() {
    return {&pods, &configmaps, &secrets, &services, &nodes, &pvcs, &events, &tokens, &pdbs};
  }
  std::vector<HostView*> views() {
    return {h_pods.get(),  h_configmaps.get(), h_secrets.get(), h_services.get(),
            h_nodes.get(), h_pvcs.get(),       h_events.get(),  h_pdbs.get()};
  }

 private:
  void bootstrap();
  Status ensure_host_basics();
  void start_loop(Loop& loop, int workers);
  void on_tenant_pod(const controllers::ObjectEvent& e);
  void on_host_pod(const controllers::ObjectEvent& e);
  void queue_origin(Loop& loop, const controllers::ObjectEvent& e);
  void requeue_all();
  // Every key of both sides, as client-go's resync: what a lost event left
  // undone (a host object whose tenant object is gone, a pod left
  // Terminating) is done at the latest one period later.
  void resync();
  bool sleep_for(std::chrono::milliseconds d);

  SyncerOptions o_;
  NameMapper names_;
  std::unique_ptr<hostclient::Client> host_;
  apiserver::ApiServer* tenant_ = nullptr;
  controllers::Informers* informers_ = nullptr;
  std::unique_ptr<controllers::LocalClient> client_;
  std::unique_ptr<controllers::EventRecorder> events_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;  // start() called: the tenant's informers are listed
  std::atomic<bool> ready_{false};
  std::thread bootstrap_;
  json owner_;            // guarded by mu_
  std::mutex tokens_mu_;  // orders token Secret creates and deletes
  // Pod references (tenant pod key -> what it uses; "ns/name" -> users).
  std::unordered_map<std::string, Refs> pod_refs_;
  std::unordered_map<std::string, int> configmap_users_, secret_users_;
  // Host pods per node (the virtual nodes the tenant sees).
  std::unordered_map<std::string, std::string> pod_node_;  // host pod key -> node
  std::unordered_map<std::string, int> node_pods_;
  // Tenant pod key -> its host pod's final state, kept from the host's
  // DELETED event until the tenant pod is ended: a status change and the
  // deletion right after it reach the pod loop as one reconcile, which finds
  // the pod gone and would otherwise never copy that change (a preemption's
  // DisruptionTarget).
  std::unordered_map<std::string, ObjectPtr> final_host_pods_;

 public:
  std::atomic<uint64_t> host_writes{0}, tenant_writes{0}, errors{0};
  int node_users(const std::string& node) {
    std::lock_guard lock(mu_);
    auto it = node_pods_.find(node);
    return it == node_pods_.end() ? 0 : it->second;
  }
};

// Helpers shared by the reconcilers.
std::string str_at(const json& obj, const char* a, const char* b = nullptr);
std::string ns_of(const std::string& key);
std::string name_of(const std::string& key);

}  // namespace vkube::syncer
