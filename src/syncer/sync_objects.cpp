// ConfigMaps and Secrets (only those a tenant pod uses: a Helm release's
// Secrets or a namespace's CA bundle stay in the tenant unless a pod mounts
// them) and Services (all but the tenant's own `kubernetes`; the cluster IP
// the host assigns is given to the tenant's Service, so the addresses pods
// see in DNS and environment variables are the ones that route).
#include "syncer_impl.h"
#include "vkube/common/log.h"
#include "vkube/syncer/compare.h"
#include "vkube/syncer/translate_objects.h"

namespace vkube::syncer {

namespace {

bool being_deleted(const json& obj) {
  auto m = obj.find("metadata");
  return m != obj.end() && m->is_object() && m->contains("deletionTimestamp");
}

// Whether the host object differs from `want` in what the syncer owns.
bool differs(const json& have, const json& want, std::initializer_list<const char*> exact) {
  if (!metadata_patch(have, want).is_null()) return true;
  for (auto it = want.begin(); it != want.end(); ++it) {
    if (it.key() == "metadata" || it.key() == "status") continue;
    if (!covers(have.value(it.key(), json()), *it)) return true;
  }
  // Keys removed from data maps are not seen by covers().
  for (const char* field : exact) {
    const json h = have.value(field, json::object()), w = want.value(field, json::object());
    if (h.size() != w.size()) return true;
  }
  return false;
}

}  // namespace

Status SyncerImpl::reconcile_config(const char* plural, const std::string& key) {
  if (key.empty()) {
    // The anchor was deleted behind vkube's back: a new one, and every host
    // object owned by it again.
    VKUBE_RETURN_IF_ERROR(ensure_host_basics());
    requeue_all();
    return Status::ok();
  }
  const bool is_secret = std::string_view(plural) == "secrets";
  HostView& view = is_secret ? *h_secrets : *h_configmaps;
  const controllers::Lister& cache = is_secret ? *t_secrets : *t_configmaps;
  ObjectPtr tenant = cache.get(key);
  const std::string hkey = host_key(ns_of(key), name_of(key));
  ObjectPtr host = view.get(hkey);
  if (host && !names_.stands_for(*host, ns_of(key), name_of(key))) return Status::ok();  // not ours

  const bool wanted = tenant && referenced(plural, key);
  if (!wanted) {
    if (host) return host_delete(view, plural, *host);
    return Status::ok();
  }
  if (host && names_.stale(*host, *tenant)) {
    VKUBE_RETURN_IF_ERROR(host_delete(view, plural, *host));
    host = nullptr;
  }
  ObjectContext ctx{&names_, o_.host_namespace, owner()};
  auto want = translate_config(*tenant, ctx);
  if (!want.is_ok()) return want.status();
  record_managed_annotations(*want);
  if (!host) {
    Status s = host_create(view, plural, *want);
    if (s.code() == Code::kConflict) {
      (is_secret ? secrets : configmaps).queue.add_after(key, std::chrono::milliseconds(100));
      return Status::ok();
    }
    return s;
  }
  if (!differs(*host, *want, {"data", "binaryData"})) return Status::ok();
  if (host->value("immutable", false)) {
    // An immutable object changes only by being replaced.
    VKUBE_RETURN_IF_ERROR(host_delete(view, plural, *host));
    (is_secret ? secrets : configmaps).queue.add(key);
    return Status::ok();
  }
  return host_put(view, plural, replacement(*host, *want));
}

Status SyncerImpl::reconcile_service(const std::string& key) {
  ObjectPtr tenant = t_services->get(key);
  const std::string hkey = host_key(ns_of(key), name_of(key));
  ObjectPtr host = h_services->get(hkey);
  if (host && !names_.stands_for(*host, ns_of(key), name_of(key))) return Status::ok();
  if (key == "default/kubernetes") return reconcile_api_service();  // the tenant's own API

  if (!tenant) {
    if (host && !being_deleted(*host)) return host_delete(*h_services, "services", *host);
    return Status::ok();
  }
  const json tspec = tenant->value("spec", json::object());
  if (host && names_.stale(*host, *tenant)) {
    // Replaced once gone (a finalizer, e.g. a load balancer's, may hold it).
    if (!being_deleted(*host)) VKUBE_RETURN_IF_ERROR(host_delete(*h_services, "services", *host));
    services.queue.add_after(key, std::chrono::milliseconds(200));
    return Status::ok();
  }
  ObjectContext ctx{&names_, o_.host_namespace, owner(), &o_.host_policy};
  auto want = translate_service(*tenant, ctx);
  if (!want.is_ok() || want->is_null()) {
    // Refused by the host policy (said once; a tenant change requeues it), or
    // the tenant's own (ExternalName, answered by its DNS): no host copy.
    if (!want.is_ok()) warn(*tenant, "SyncError", "not on the host: " + want.status().message());
    if (host && !being_deleted(*host)) return host_delete(*h_services, "services", *host);
    return Status::ok();
  }
  record_managed_annotations(*want);
  if (!host) {
    Status s = host_create(*h_services, "services", *want);
    if (s.code() == Code::kConflict) {
      services.queue.add_after(key, std::chrono::milliseconds(100));
      return Status::ok();
    }
    if (s.code() == Code::kInvalid) {  // the host refuses it: said once, not retried
      warn(*tenant, "SyncError", s.message());
      return Status::ok();
    }
    VKUBE_RETURN_IF_ERROR(s);
    host = h_services->get(hkey);
    if (!host) return Status::ok();
  } else if (differs(*host, *want, {})) {
    // The host's own fields survive the update: its addresses and node ports.
    json body = replacement(*host, *want);
    const json hspec = host->value("spec", json::object());
    for (const char* field :
         {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "healthCheckNodePort"})
      if (hspec.contains(field)) body["spec"][field] = hspec[field];
    if (body["spec"].contains("ports") && hspec.contains("ports"))
      for (size_t i = 0; i < body["spec"]["ports"].size() && i < hspec["ports"].size(); ++i)
        if (hspec["ports"][i].contains("nodePort"))
          body["spec"]["ports"][i]["nodePort"] = hspec["ports"][i]["nodePort"];
    VKUBE_RETURN_IF_ERROR(host_put(*h_services, "services", body));
  }

  // The host's cluster IP becomes the tenant's.
  const std::string host_ip = str_at(host->value("spec", json::object()), "clusterIP");
  const std::string tenant_ip = str_at(tspec, "clusterIP");
  if (!host_ip.empty() && host_ip != "None" && !tenant_ip.empty() && tenant_ip != "None" &&
      host_ip != tenant_ip) {
    json body = *tenant;
    body["spec"]["clusterIP"] = host_ip;
    body["spec"]["clusterIPs"] =
        host->value("spec", json::object()).value("clusterIPs", json::array({host_ip}));
    auto r =
        tenant_call("PUT", "/api/v1/namespaces/" + ns_of(key) + "/services/" + name_of(key), body);
    if (r.code == 409) return Status::conflict("tenant service " + key + " changed");
    if (!r.ok() && r.code != 404)
      return Status::internal("cluster IP of tenant service " + key + ": " + r.body.dump());
  }
  // The host's load balancer address is the tenant's too (helm --wait waits for it).
  json host_lb = host->value("status", json::object()).value("loadBalancer", json::object());
  if (host_lb != tenant->value("status", json::object()).value("loadBalancer", json::object())) {
    if (!host_lb.contains("ingress")) host_lb["ingress"] = nullptr;  // merge patch: removed
    auto r = tenant_call(
        "PATCH", "/api/v1/namespaces/" + ns_of(key) + "/services/" + name_of(key) + "/status",
        json{{"status", {{"loadBalancer", host_lb}}}}, "application/merge-patch+json");
    if (!r.ok() && r.code != 404)
      return Status::internal("load balancer of tenant service " + key + ": " + r.body.dump());
  }
  return Status::ok();
}

Status SyncerImpl::reconcile_pvc(const std::string& key) {
  ObjectPtr tenant = t_pvcs->get(key);
  const std::string hkey = host_key(ns_of(key), name_of(key));
  ObjectPtr host = h_pvcs->get(hkey);
  if (host && !names_.stands_for(*host, ns_of(key), name_of(key))) return Status::ok();
  if (!tenant) {
    if (host && !being_deleted(*host)) return host_delete(*h_pvcs, "persistentvolumeclaims", *host);
    return Status::ok();
  }
  if (host && names_.stale(*host, *tenant)) {
    if (!being_deleted(*host))
      VKUBE_RETURN_IF_ERROR(host_delete(*h_pvcs, "persistentvolumeclaims", *host));
    pvcs.queue.add_after(key, std::chrono::milliseconds(200));
    return Status::ok();
  }
  ObjectContext ctx{&names_, o_.host_namespace, owner()};
  auto want = translate_pvc(*tenant, ctx);
  if (!want.is_ok()) return want.status();
  record_managed_annotations(*want);
  if (!host) {
    Status s = host_create(*h_pvcs, "persistentvolumeclaims", *want);
    if (s.code() == Code::kConflict) {
      pvcs.queue.add_after(key, std::chrono::milliseconds(100));
      return Status::ok();
    }
    return s;
  }
  // A claim's spec is fixed but for its size (expansion).
  json patch = metadata_patch(*host, *want);
  const json wreq = want->value("spec", json::object()).value("resources", json::object());
  if (!covers(host->value("spec", json::object()).value("resources", json::object()), wreq)) {
    if (patch.is_null()) patch = json::object();
    patch["spec"]["resources"] = wreq;
  }
  if (!patch.is_null())
    VKUBE_RETURN_IF_ERROR(
        host_patch(*h_pvcs, "persistentvolumeclaims", str_at(*host, "metadata", "name"), patch));

  const json status = tenant_pvc_status(*host);
  const json have = tenant->value("status", json::object());
  json spatch = json::object();
  for (auto it = status.begin(); it != status.end(); ++it)
    if (!have.contains(it.key()) || have[it.key()] != *it) spatch[it.key()] = *it;
  if (!spatch.empty()) {
    auto r = tenant_call(
        "PATCH",
        "/api/v1/namespaces/" + ns_of(key) + "/persistentvolumeclaims/" + name_of(key) + "/status",
        json{{"status", spatch}}, "application/merge-patch+json");
    if (!r.ok() && r.code != 404)
      return Status::internal("status of tenant claim " + key + ": " + r.body.dump());
  }
  return Status::ok();
}

}  // namespace vkube::syncer
