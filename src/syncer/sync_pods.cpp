// Pods: the tenant pod runs as a host pod; its status, the node the host
// chose and its deletion come back. The host's kubelet (or simulated node)
// is the tenant's kubelet: a tenant pod being deleted gracefully is deleted
// on the host with the same grace period, and removed from the tenant once
// the host pod is gone.
#include "syncer_impl.h"
#include "vkube/common/log.h"
#include "vkube/syncer/compare.h"
#include "vkube/syncer/gpu_sharing.h"
#include "vkube/syncer/translate_back.h"
#include "vkube/syncer/translate_pod.h"

namespace vkube::syncer {

namespace {

bool terminal(const json& pod) {
  const std::string phase = str_at(pod.value("status", json::object()), "phase");
  return phase == "Succeeded" || phase == "Failed";
}

bool being_deleted(const json& obj) {
  auto m = obj.find("metadata");
  return m != obj.end() && m->is_object() && m->contains("deletionTimestamp") &&
         !(*m)["deletionTimestamp"].is_null();
}

// The tenant pod ran on the host: its status came from a host pod that the
// host scheduled (a pod a user bound to a node name itself has no such
// condition yet).
bool was_on_host(const json& pod) {
  for (const json& c : pod.value("status", json::object()).value("conditions", json::array()))
    if (c.is_object() && c.value("type", "") == "PodScheduled" && c.value("status", "") == "True")
      return !str_at(pod.value("spec", json::object()), "nodeName").empty();
  return false;
}

// The spec fields a pod may change after creation that the syncer owns:
// container images and activeDeadlineSeconds (kube refuses the rest).
json mutable_spec_patch(const json& have, const json& want) {
  json patch = json::object();
  const json hs = have.value("spec", json::object()), ws = want.value("spec", json::object());
  for (const char* list : {"initContainers", "containers"}) {
    const json hc = hs.value(list, json::array()), wc = ws.value(list, json::array());
    if (hc.size() != wc.size()) continue;  // not ours to fix: kube forbids it
    bool differs = false;
    for (size_t i = 0; i < wc.size(); ++i)
      if (wc[i].value("image", "") != hc[i].value("image", "")) differs = true;
    if (!differs) continue;
    // A merge patch replaces lists: send the host's containers with the images changed.
    json fixed = hc;
    for (size_t i = 0; i < wc.size(); ++i) fixed[i]["image"] = wc[i].value("image", "");
    patch[list] = std::move(fixed);
  }
  if (ws.contains("activeDeadlineSeconds") &&
      ws["activeDeadlineSeconds"] != hs.value("activeDeadlineSeconds", json()))
    patch["activeDeadlineSeconds"] = ws["activeDeadlineSeconds"];
  return patch;
}

// kube mounts a token unless the pod or its service account says not to.
bool automounts(const json& pod, const controllers::Lister& accounts) {
  const json spec = pod.value("spec", json::object());
  if (auto a = spec.find("automountServiceAccountToken"); a != spec.end() && a->is_boolean())
    return a->get<bool>();
  std::string sa = str_at(spec, "serviceAccountName");
  if (sa.empty()) sa = "default";
  if (ObjectPtr account = accounts.get(str_at(pod, "metadata", "namespace"), sa))
    if (auto a = account->find("automountServiceAccountToken");
        a != account->end() && a->is_boolean())
      return a->get<bool>();
  return true;
}

// The pod projects a service account token itself (a volume of its own).
bool projects_token(const json& pod) {
  for (const json& v : pod.value("spec", json::object()).value("volumes", json::array())) {
    const json proj = v.is_object() ? v.value("projected", json::object()) : json::object();
    for (const json& src : proj.value("sources", json::array()))
      if (src.is_object() && src.contains("serviceAccountToken")) return true;
  }
  return false;
}

// The tenant status fields that differ from the host pod's (nulls for those
// the host no longer has): a merge patch of the tenant pod's status.
json status_changes(const json& host, const json& tenant, const NameMapper& names) {
  json status = tenant_pod_status(host);
  // The host scheduler's why-pending names the pod's group as the host knows it.
  if (auto c = status.find("conditions"); c != status.end() && c->is_array())
    for (json& cond : *c)
      if (cond.is_object() && cond.contains("message") && cond["message"].is_string())
        cond["message"] = tenant_view_of_group(cond["message"].get<std::string>(), tenant, names);
  const json have = tenant.value("status", json::object());
  json patch = json::object();
  for (auto it = status.begin(); it != status.end(); ++it)
    if (!have.contains(it.key()) || have[it.key()] != *it) patch[it.key()] = *it;
  for (const char* field : {"reason", "message", "podIP", "podIPs", "hostIP", "hostIPs",
                            "initContainerStatuses", "containerStatuses"})
    if (have.contains(field) && !status.contains(field)) patch[field] = nullptr;
  return patch;
}

}  // namespace

ObjectPtr SyncerImpl::final_host_pod(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = final_host_pods_.find(key);
  return it == final_host_pods_.end() ? nullptr : it->second;
}

void SyncerImpl::forget_final_host_pod(const std::string& key) {
  std::lock_guard lock(mu_);
  final_host_pods_.erase(key);
}

std::optional<std::string> SyncerImpl::foreign_reference(const json& tpod) {
  const std::string ns = str_at(tpod, "metadata", "namespace");
  Refs refs = refs_of(tpod);
  std::vector<std::pair<HostView*, std::string>> wanted;
  for (const std::string& n : refs.secrets) wanted.emplace_back(h_secrets.get(), n);
  for (const std::string& n : refs.configmaps) wanted.emplace_back(h_configmaps.get(), n);
  for (const json& v : tpod.value("spec", json::object()).value("volumes", json::array()))
    if (v.is_object() && v.contains("persistentVolumeClaim"))
      wanted.emplace_back(h_pvcs.get(), str_at(v["persistentVolumeClaim"], "claimName"));
  for (const auto& [view, name] : wanted) {
    ObjectPtr host = view->get(host_key(ns, name));
    if (host && !names_.stands_for(*host, ns, name))
      return "host object " + str_at(*host, "metadata", "name") + " is not the host copy of " + ns +
             "/" + name;
  }
  return std::nullopt;
}

PodContext SyncerImpl::pod_context() const {
  PodContext ctx;
  ctx.names = &names_;
  ctx.host_namespace = o_.host_namespace;
  ctx.owner = owner();
  ctx.gpu = o_.gpu;
  ctx.dns_ip = o_.dns_ip;
  ctx.cluster_domain = o_.cluster_domain;
  ctx.policy = &o_.host_policy;
  return ctx;
}

// Ends the tenant pod once its host pod is gone, as a kubelet does: a
// deletion with no grace left and the pod's UID as precondition.
Status SyncerImpl::delete_tenant_pod(const json& tpod) {
  const std::string ns = str_at(tpod, "metadata", "namespace"),
                    name = str_at(tpod, "metadata", "name");
  // The host pod's last status first: its final conditions (the host
  // scheduler's DisruptionTarget, set just before its deletion) may have
  // come with the deletion, after the last status this pod was given.
  json patch = json::object();
  ObjectPtr last = final_host_pod(ns + "/" + name);
  if (last && !names_.stale(*last, tpod)) patch = status_changes(*last, tpod, names_);
  // A kubelet gives a pod a terminal phase before it goes (Failed unless it
  // succeeded): a pod that finalizers keep (a Job's) must not stay Running
  // forever, and a Job counts it, or ignores it per its podFailurePolicy; a
  // watcher sees the final status (kube's preempted pod: Failed, with
  // DisruptionTarget) before the DELETED event.
  const json meta = tpod.value("metadata", json::object());
  const bool kept = meta.contains("finalizers") && !meta["finalizers"].empty();
  if (terminal(tpod))
    patch.erase("phase");  // a finished pod stays as it finished
  else if (kept || !patch.empty())
    patch["phase"] = str_at(patch, "phase") == "Succeeded" ? "Succeeded" : "Failed";
  if (!patch.empty()) {
    auto r = tenant_call("PATCH", "/api/v1/namespaces/" + ns + "/pods/" + name + "/status",
                         {{"status", std::move(patch)}}, "application/merge-patch+json");
    if (!r.ok() && r.code != 404)
      return Status::internal("fail tenant pod " + ns + "/" + name + ": " + r.body.dump());
  }
  json options = {{"apiVersion", "v1"},
                  {"kind", "DeleteOptions"},
                  {"gracePeriodSeconds", 0},
                  {"preconditions", {{"uid", str_at(tpod, "metadata", "uid")}}}};
  auto r = tenant_call("DELETE", "/api/v1/namespaces/" + ns + "/pods/" + name, options);
  // A failed UID precondition: the pod of that name is another one now. Any
  // other conflict (a write in between) leaves this pod Terminating unless
  // it is retried.
  if (r.ok() || r.code == 404 ||
      (r.code == 409 && r.body.value("message", "").find("Precondition failed: UID") == 0)) {
    forget_final_host_pod(ns + "/" + name);
    return Status::ok();
  }
  if (r.code == 409) return Status::conflict("delete tenant pod " + ns + "/" + name);
  return Status::internal("delete tenant pod " + ns + "/" + name + ": " + r.body.dump());
}

Status SyncerImpl::reconcile_pod(const std::string& key) {
  const std::string ns = ns_of(key), name = name_of(key);
  ObjectPtr tenant = t_pods->get(key);
  const std::string hkey = host_key(ns, name);
  ObjectPtr host = h_pods->get(hkey);
  if (host && !names_.stands_for(*host, ns, name)) {
    // Someone else's pod holds the name (not vkube's, or recording another
    // tenant object): leave it alone, say so.
    if (tenant) warn(*tenant, "SyncError", "host pod " + hkey + " exists and is not this tenant's");
    return Status::ok();
  }

  if (!tenant) {
    forget_final_host_pod(key);
    // An orphan (the tenant pod is gone: deleted while vkube was down, or a
    // crash between the host create and the tenant's record of it).
    if (host && !being_deleted(*host)) return host_delete(*h_pods, "pods", *host);
    return Status::ok();
  }
  const json& tpod = *tenant;
  const std::string tpath = "/api/v1/namespaces/" + ns + "/pods/" + name;

  if (host && names_.stale(*host, tpod)) {
    // Left by an earlier pod of the same name: replaced once it is gone.
    if (!being_deleted(*host)) VKUBE_RETURN_IF_ERROR(host_delete(*h_pods, "pods", *host, 0));
    pods.queue.add_after(key, std::chrono::milliseconds(200));
    return Status::ok();
  }

  if (being_deleted(tpod)) {
    if (!host) {
      // The host pod is gone: finish the tenant's deletion, as a kubelet does.
      return delete_tenant_pod(tpod);
    }
    const int64_t grace =
        std::max<int64_t>(tpod["metadata"].value("deletionGracePeriodSeconds", int64_t{30}), 0);
    // A later, shorter grace (kubectl delete --force) shortens the host's too.
    if (!being_deleted(*host) ||
        (*host)["metadata"].value("deletionGracePeriodSeconds", int64_t{0}) > grace)
      VKUBE_RETURN_IF_ERROR(host_delete(*h_pods, "pods", *host, grace));
    // Status keeps flowing back while the host pod terminates.
  }

  if (!host) {
    if (terminal(tpod) || being_deleted(tpod)) return Status::ok();
    if (was_on_host(tpod)) {
      // The host pod was deleted (by the host's operators, an eviction, a
      // node going away): so is the tenant's, as vcluster does.
      return delete_tenant_pod(tpod);
    }
    PodContext ctx = pod_context();
    for (const ObjectPtr& svc : t_services->list(ns)) {
      const json spec = svc->value("spec", json::object());
      ServiceEnv env;
      env.name = str_at(*svc, "metadata", "name");
      env.cluster_ip = str_at(spec, "clusterIP");
      for (const json& p : spec.value("ports", json::array()))
        if (p.is_object()) env.ports.emplace_back(p.value("name", ""), p);
      ctx.services.push_back(std::move(env));
    }
    ctx.api_host = o_.api_host;
    ctx.api_port = o_.api_port;
    const bool automount = automounts(tpod, *t_serviceaccounts);
    if (!o_.api_host.empty() && (automount || projects_token(tpod))) {
      const std::string sa = str_at(tpod.value("spec", json::object()), "serviceAccountName");
      VKUBE_RETURN_IF_ERROR(
          ensure_api_access(ns, sa.empty() ? "default" : sa, &ctx.api_access_secret));
      // Projected token sources read the same token; without automount the
      // pod's own projected volume is all it gets.
      ctx.token_secret = ctx.api_access_secret;
      if (!automount) ctx.api_access_secret.clear();
    }
    // What the pod mounts must be the host copies of the tenant's objects,
    // never a host object of another origin under the expected name.
    if (auto foreign = foreign_reference(tpod)) {
      warn(tpod, "SyncError", "cannot run on the host: " + *foreign);
      return Status::ok();
    }
    auto want = translate_pod(tpod, ctx);
    if (!want.is_ok()) {
      warn(tpod, "SyncError", "cannot run on the host: " + want.status().message());
      return Status::ok();  // a tenant change requeues it
    }
    record_managed_annotations(*want);
    Status s = host_create(*h_pods, "pods", *want);
    if (s.code() == Code::kConflict) {
      pods.queue.add_after(key, std::chrono::milliseconds(100));  // the cache trails
      return Status::ok();
    }
    if (s.code() == Code::kInvalid || s.code() == Code::kInternal ||
        s.code() == Code::kAlreadyExists || s.code() == Code::kForbidden) {
      // The host refuses it (its admission, its quota): the tenant learns why.
      warn(tpod, "SyncError", s.message());
    }
    // A refusal that only a change of the pod can lift (the host's Pod
    // Security level, validation, a name taken) is not retried: a tenant
    // change requeues the pod. A full quota frees up: that one is retried.
    const bool quota = s.message().find("exceeded quota") != std::string::npos;
    if (s.code() == Code::kInvalid || s.code() == Code::kAlreadyExists ||
        (s.code() == Code::kForbidden && !quota))
      return Status::ok();
    return s;
  }

  // Both sides exist.
  Status patched = Status::ok();
  if (!being_deleted(*host) && !being_deleted(tpod)) {
    PodContext ctx = pod_context();
    auto want = translate_pod(tpod, ctx);
    if (want.is_ok()) {
      record_managed_annotations(*want);
      json patch = metadata_patch(*host, *want);
      json spec = mutable_spec_patch(*host, *want);
      if (!spec.empty()) {
        if (patch.is_null()) patch = json::object();
        patch["spec"] = std::move(spec);
      }
      if (!patch.is_null()) {
        patched = host_patch(*h_pods, "pods", str_at(*host, "metadata", "name"), patch);
        // A conflict is retried at once; a refusal (a host policy) is
        // reported, and the status below still flows back meanwhile.
        if (patched.code() == Code::kConflict) return patched;
        if (!patched.is_ok()) warn(tpod, "SyncError", patched.message());
      }
    }
  }

  // Host -> tenant: the node first (so the tenant sees a node that exists),
  // then the status.
  const std::string node = str_at(host->value("spec", json::object()), "nodeName");
  if (!node.empty() && str_at(tpod.value("spec", json::object()), "nodeName").empty() &&
      !being_deleted(tpod)) {
    if (!t_nodes->get(node)) VKUBE_RETURN_IF_ERROR(reconcile_node(node));
    json binding = {{"apiVersion", "v1"},
                    {"kind", "Binding"},
                    {"metadata", {{"name", name}, {"namespace", ns}}},
                    {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    auto r = tenant_call("POST", tpath + "/binding", binding);
    if (!r.ok() && r.code != 409 && r.code != 404)
      return Status::internal("bind tenant pod " + key + ": " + r.body.dump());
    informers_->sync(std::chrono::milliseconds(2000));
    tenant = t_pods->get(key);
    if (!tenant) return Status::ok();
  }

  json patch = status_changes(*host, *tenant, names_);
  if (!patch.empty()) {
    json body = {{"status", std::move(patch)}};
    auto r = tenant_call("PATCH", tpath + "/status", body, "application/merge-patch+json");
    if (!r.ok() && r.code != 404)
      return Status::internal("status of tenant pod " + key + ": " + r.body.dump());
  }
  return patched;
}

}  // namespace vkube::syncer
