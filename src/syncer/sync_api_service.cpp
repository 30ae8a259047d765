// The tenant's default/kubernetes Service when the tenant runs on a host (as
// vcluster does): its cluster IP and port become those of the host Service
// that fronts the tenant's API (`vkube` in the host namespace). The tenant's
// DNS answers kubernetes.default.svc with that address, and host pods reach
// their own tenant's API there; the tenant's own first service address is
// the host's API server on a host using the same range, which turns away
// tenant tokens. The Service carries kHostServiceAnnotation, so the
// kubernetes-service controller keeps its ports as the syncer set them.
#include "syncer_impl.h"
#include "vkube/common/log.h"

namespace vkube::syncer {

namespace {

constexpr const char* kKey = "default/kubernetes";
constexpr const char* kTenantPath = "/api/v1/namespaces/default/services/kubernetes";

// The host Service's port for the API: the one named https, else the first TCP one.
json api_port_of(const json& hspec) {
  json ports = hspec.value("ports", json::array());
  if (!ports.is_array()) return nullptr;
  for (const json& p : ports)
    if (p.is_object() && p.value("name", "") == "https" && p.value("port", json()).is_number())
      return p;
  for (const json& p : ports)
    if (p.is_object() && p.value("protocol", "TCP") == "TCP" && p.value("port", json()).is_number())
      return p;
  return nullptr;
}

}  // namespace

Status SyncerImpl::reconcile_api_service() {
  if (o_.api_service.empty()) return Status::ok();
  ObjectPtr tenant = t_services->get(kKey);
  if (!tenant) return Status::ok();  // the controller makes it; its event brings it back here
  // The host informer lists only the tenant's labelled objects; the chart's
  // Service carries the label, a hand-made one may not.
  const std::string hkey = o_.host_namespace + "/" + o_.api_service;
  json host;
  if (ObjectPtr cached = h_services->get(hkey)) {
    host = *cached;
  } else {
    auto r = host_->call("GET", host_path("services") + "/" + o_.api_service);
    if (r.code == 404) return Status::ok();  // none yet: the tenant keeps its own address
    if (!r.ok())
      return Status::unavailable("host service " + hkey + ": HTTP " + std::to_string(r.code));
    host = std::move(r.body);
  }
  const json hspec = host.value("spec", json::object());
  const std::string ip = str_at(hspec, "clusterIP");
  const json hport = api_port_of(hspec);
  if (ip.empty() || ip == "None" || hport.is_null()) return Status::ok();

  json body = *tenant;
  json& spec = body["spec"];
  spec["clusterIP"] = ip;
  spec["clusterIPs"] = json::array({ip});
  json port = {{"name", "https"}, {"port", hport["port"]}, {"protocol", "TCP"}};
  const json tports = tenant->value("spec", json::object()).value("ports", json::array());
  if (tports.is_array() && !tports.empty() && tports[0].is_object() &&
      tports[0].contains("targetPort"))
    port["targetPort"] = tports[0]["targetPort"];
  spec["ports"] = json::array({port});
  json& annotations = body["metadata"]["annotations"];
  if (!annotations.is_object()) annotations = json::object();
  annotations[std::string(kHostServiceAnnotation)] = hkey;
  if (body == *tenant) return Status::ok();
  auto r = tenant_call("PUT", kTenantPath, body);
  if (r.code == 409) return Status::conflict("tenant service default/kubernetes changed");
  if (!r.ok() && r.code != 404)
    return Status::internal("host address of default/kubernetes: " + r.body.dump());
  VKUBE_LOG(info, "syncer: default/kubernetes is the host service", {"service", hkey},
            {"cluster_ip", ip});
  return Status::ok();
}

}  // namespace vkube::syncer
