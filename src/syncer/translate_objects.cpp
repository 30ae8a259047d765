// ConfigMaps, Secrets and Services for the host (see translate_objects.h).
#include "vkube/syncer/translate_objects.h"

namespace vkube::syncer {

namespace {

using json = nlohmann::json;

// The host object's metadata: host name and namespace, the tenant's labels
// and annotations, the ownership marks and the anchor as owner.
Result<json> host_shell(const json& tenant_obj, const ObjectContext& ctx) {
  if (ctx.names == nullptr) return Status::invalid("translate: no NameMapper");
  const json tmeta = tenant_obj.value("metadata", json::object());
  json host = {{"apiVersion", tenant_obj.value("apiVersion", "v1")},
               {"kind", tenant_obj.value("kind", "")}};
  json meta = {
      {"name", ctx.names->host_name(tmeta.value("namespace", ""), tmeta.value("name", ""))},
      {"namespace", ctx.host_namespace}};
  if (auto l = tmeta.find("labels"); l != tmeta.end() && l->is_object()) meta["labels"] = *l;
  if (auto a = tmeta.find("annotations"); a != tmeta.end() && a->is_object()) {
    meta["annotations"] = *a;
    // kubectl's record of the tenant's apply is no business of the host's.
    meta["annotations"].erase("kubectl.kubernetes.io/last-applied-configuration");
  }
  if (ctx.owner.is_object()) meta["ownerReferences"] = json::array({ctx.owner});
  host["metadata"] = std::move(meta);
  ctx.names->mark(host, tenant_obj);
  return host;
}

}  // namespace

Result<json> translate_config(const json& tenant_obj, const ObjectContext& ctx) {
  auto host = host_shell(tenant_obj, ctx);
  if (!host.is_ok()) return host.status();
  for (const char* field : {"data", "binaryData", "stringData", "immutable", "type"})
    if (auto it = tenant_obj.find(field); it != tenant_obj.end()) (*host)[field] = *it;
  if (host->value("type", "") == "kubernetes.io/service-account-token") {
    (*host)["type"] = "Opaque";
    (*host)["metadata"]["annotations"].erase("kubernetes.io/service-account.name");
    (*host)["metadata"]["annotations"].erase("kubernetes.io/service-account.uid");
  }
  return host;
}

Result<json> translate_service(const json& tenant_svc, const ObjectContext& ctx) {
  if (tenant_only_service(tenant_svc)) return json(nullptr);
  static const HostPolicy kDefaults;
  const auto refused = service_violations(ctx.policy ? *ctx.policy : kDefaults,
                                          tenant_svc.value("spec", json::object()));
  if (!refused.empty())
    return Status(Code::kForbidden,
                  "refused by the tenant's host policy: " + join_violations(refused, "spec."));
  auto host = host_shell(tenant_svc, ctx);
  if (!host.is_ok()) return host.status();
  const json tspec = tenant_svc.value("spec", json::object());
  json spec = json::object();
  for (const char* field :
       {"ports", "type", "sessionAffinity", "sessionAffinityConfig", "publishNotReadyAddresses",
        "ipFamilyPolicy", "ipFamilies", "internalTrafficPolicy", "externalTrafficPolicy"})
    if (auto it = tspec.find(field); it != tspec.end()) spec[field] = *it;
  if (tspec.value("clusterIP", "") == "None") spec["clusterIP"] = "None";
  if (auto sel = tspec.find("selector"); sel != tspec.end() && sel->is_object() && !sel->empty()) {
    spec["selector"] = *sel;
    spec["selector"][std::string(kNamespaceLabel)] =
        tenant_svc.value("metadata", json::object()).value("namespace", "");
    spec["selector"][std::string(kTenantLabel)] = ctx.names->tenant();
  }
  // Node ports are the host's to hand out, as cluster IPs are.
  if (auto ports = spec.find("ports"); ports != spec.end() && ports->is_array())
    for (json& p : *ports)
      if (p.is_object()) p.erase("nodePort");
  (*host)["spec"] = std::move(spec);
  return host;
}

Result<json> translate_pdb(const json& tenant_pdb, const ObjectContext& ctx) {
  auto host = host_shell(tenant_pdb, ctx);
  if (!host.is_ok()) return host.status();
  const json tspec = tenant_pdb.value("spec", json::object());
  json spec = json::object();
  for (const char* field : {"minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy"})
    if (auto it = tspec.find(field); it != tspec.end() && !it->is_null()) spec[field] = *it;
  if (auto sel = tspec.find("selector"); sel != tspec.end() && sel->is_object()) {
    json selector = json::object();
    if (auto ml = sel->find("matchLabels"); ml != sel->end() && ml->is_object())
      selector["matchLabels"] = *ml;
    if (auto me = sel->find("matchExpressions"); me != sel->end() && me->is_array() && !me->empty())
      selector["matchExpressions"] = *me;
    // An empty selector is every pod of the tenant namespace: on the host,
    // every pod with its labels, never those of other namespaces.
    selector["matchLabels"][std::string(kNamespaceLabel)] =
        tenant_pdb.value("metadata", json::object()).value("namespace", "");
    selector["matchLabels"][std::string(kTenantLabel)] = ctx.names->tenant();
    spec["selector"] = std::move(selector);
  }
  (*host)["spec"] = std::move(spec);
  return host;
}

Result<json> translate_pvc(const json& tenant_pvc, const ObjectContext& ctx) {
  auto host = host_shell(tenant_pvc, ctx);
  if (!host.is_ok()) return host.status();
  const json tspec = tenant_pvc.value("spec", json::object());
  json spec = json::object();
  for (const char* field :
       {"accessModes", "resources", "storageClassName", "volumeMode", "volumeAttributesClassName"})
    if (auto it = tspec.find(field); it != tspec.end()) spec[field] = *it;
  const std::string ns = tenant_pvc.value("metadata", json::object()).value("namespace", "");
  for (const char* field : {"dataSource", "dataSourceRef"}) {
    auto it = tspec.find(field);
    if (it == tspec.end() || !it->is_object()) continue;
    json ref = *it;
    // A cross-namespace source (dataSourceRef.namespace) would name another
    // namespace of the host, another tenant's included.
    ref.erase("namespace");
    if (ref.value("kind", "") == "PersistentVolumeClaim" && ref.value("apiGroup", "").empty())
      ref["name"] = ctx.names->host_name(ns, ref.value("name", ""));
    spec[field] = std::move(ref);
  }
  // The claim binds to whatever the host provisions: kube's annotations of
  // a binding done in the tenant mean nothing there.
  json& annotations = (*host)["metadata"]["annotations"];
  for (const char* a :
       {"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
        "volume.kubernetes.io/selected-node", "volume.kubernetes.io/storage-provisioner",
        "volume.beta.kubernetes.io/storage-provisioner"})
    annotations.erase(a);
  (*host)["spec"] = std::move(spec);
  return host;
}

json tenant_pvc_status(const json& host_pvc) {
  const json status = host_pvc.value("status", json::object());
  json out = json::object();
  for (const char* field : {"phase", "capacity", "accessModes", "conditions", "allocatedResources"})
    if (auto it = status.find(field); it != status.end()) out[field] = *it;
  return out;
}

}  // namespace vkube::syncer
