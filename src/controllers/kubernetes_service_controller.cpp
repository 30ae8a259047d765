// The default/kubernetes Service (kube-apiserver's bootstrap controller and
// its endpoint reconciler): every cluster has it, with the first address of
// the service range and port 443 "https" to the API server, and an
// Endpoints object and EndpointSlice naming the server's address. In-cluster
// clients and charts look for it. A deleted or changed one is put back.
#include "controller.h"
#include "util.h"
#include "vkube/apiserver/apiserver.h"
#include "vkube/common/log.h"

namespace vkube::controllers {

namespace {

constexpr const char* kNamespace = "default";
constexpr const char* kName = "kubernetes";
const std::string kKey = "default/kubernetes";
const ResourceKey kServices{"core", "services"};
// Set by the syncer (src/syncer/syncer_impl.h) on the Service it gave the host's address.
constexpr const char* kHostServiceAnnotation = "vkube.io/host-service";
const ResourceKey kEndpoints{"core", "endpoints"};
const ResourceKey kSlices{"discovery.k8s.io", "endpointslices"};

Status failure(const ApiResult& r, const std::string& what) {
  std::string msg = r.body.is_object() ? r.body.value("message", "") : std::string();
  return Status::internal(what + ": " + (msg.empty() ? "HTTP " + std::to_string(r.code) : msg));
}

class KubernetesServiceController final : public Controller {
 public:
  KubernetesServiceController(Context& ctx, std::string cluster_ip)
      : Controller(ctx, "kubernetes-service"),
        cluster_ip_(std::move(cluster_ip)),
        services_(ctx.informers.cache(kServices, mine)),
        endpoints_(ctx.informers.cache(kEndpoints, mine)),
        slices_(ctx.informers.cache(kSlices, mine)) {
    for (const ResourceKey& r : {kServices, kEndpoints, kSlices})
      ctx.informers.on_event(r, [this](const ObjectEvent& e) {
        if (e.key == kKey && e.type != EventType::kAdded) queue().add(kKey);
      });
    ctx.informers.on_event({"core", "namespaces"}, [this](const ObjectEvent& e) {
      if (e.key == kNamespace) queue().add(kKey);
    });
  }

 protected:
  Status reconcile(const std::string&) override {
    VKUBE_RETURN_IF_ERROR(ensure(services_, "v1", "services", service()));
    VKUBE_RETURN_IF_ERROR(ensure(endpoints_, "v1", "endpoints", endpoints()));
    VKUBE_RETURN_IF_ERROR(ensure(slices_, "discovery.k8s.io/v1", "endpointslices", slice()));
    ctx_.informers.sync();
    return Status::ok();
  }

 private:
  static bool mine(std::string_view key) { return key == kKey; }

  static bool has_annotation(const json& obj, const char* name) {
    const json meta = obj.value("metadata", json::object());
    const json a = meta.is_object() ? meta.value("annotations", json::object()) : json();
    return a.is_object() && a.contains(name);
  }

  const ManagerOptions& o() const { return ctx_.options; }

  json port(bool service) const {
    json p = {{"name", "https"}, {"port", service ? 443 : o().api_port}, {"protocol", "TCP"}};
    if (service) p["targetPort"] = o().api_port;
    return p;
  }

  json meta(json labels) const {
    return {{"name", kName}, {"namespace", kNamespace}, {"labels", std::move(labels)}};
  }

  json service() const {
    return {{"apiVersion", "v1"},
            {"kind", "Service"},
            {"metadata", meta({{"component", "apiserver"}, {"provider", "kubernetes"}})},
            {"spec",
             {{"type", "ClusterIP"},
              {"clusterIP", cluster_ip_},
              {"ports", json::array({port(true)})},
              {"sessionAffinity", "None"}}}};
  }

  json endpoints() const {
    return {{"apiVersion", "v1"},
            {"kind", "Endpoints"},
            // Not mirrored into a second slice: the one below is the server's.
            {"metadata", meta({{"endpointslice.kubernetes.io/skip-mirror", "true"}})},
            {"subsets", json::array({{{"addresses", json::array({{{"ip", o().api_address}}})},
                                      {"ports", json::array({port(false)})}}})}};
  }

  json slice() const {
    return {{"apiVersion", "discovery.k8s.io/v1"},
            {"kind", "EndpointSlice"},
            {"metadata", meta({{"kubernetes.io/service-name", kName}})},
            {"addressType", "IPv4"},
            {"endpoints", json::array({{{"addresses", json::array({o().api_address})},
                                        {"conditions", {{"ready", true}}}}})},
            {"ports", json::array({port(false)})}};
  }

  // Creates `want`, or puts back what differs from it: its labels, and
  // every top-level field it sets (for the Service: type and ports; a
  // cluster IP already given stays, as kube keeps it).
  Status ensure(const Lister& cache, const char* api_version, const char* plural,
                const json& want) {
    ObjectPtr have = cache.get(kKey);
    const std::string what = std::string(plural) + " " + kKey;
    if (have == nullptr) {
      ApiResult r = ctx_.client.call("POST", api_path(api_version, plural, kNamespace), want);
      if (r.ok() || r.code == 409) return Status::ok();
      if (r.code == 404 || r.code == 403) return Status::ok();  // no default namespace (yet)
      return failure(r, "create " + what);
    }
    if (have->value("metadata", json::object()).contains("deletionTimestamp"))
      return Status::ok();  // put back once it is gone
    json next = *have;
    json& labels = next["metadata"]["labels"];
    if (!labels.is_object()) labels = json::object();
    for (auto& [k, v] : want["metadata"]["labels"].items()) labels[k] = v;
    for (auto& [k, v] : want.items()) {
      if (k == "metadata" || k == "apiVersion" || k == "kind") continue;
      if (k != "spec") {
        next[k] = v;
        continue;
      }
      json& spec = next["spec"];
      if (!spec.is_object()) spec = json::object();
      spec["type"] = v["type"];
      // A tenant on a host: the syncer gave it the port of the host Service
      // that fronts this API (src/syncer/sync_api_service.cpp); it keeps it.
      if (!has_annotation(*have, kHostServiceAnnotation)) spec["ports"] = v["ports"];
    }
    if (next == *have) return Status::ok();
    ApiResult r = ctx_.client.call("PUT", api_path(api_version, plural, kNamespace, kName), next);
    if (r.ok() || r.code == 404) return Status::ok();  // a 404 comes back as a delete event
    return failure(r, "update " + what);
  }

  std::string cluster_ip_;
  const Lister& services_;
  const Lister& endpoints_;
  const Lister& slices_;
};

}  // namespace

std::unique_ptr<Controller> make_kubernetes_service_controller(Context& ctx) {
  if (ctx.options.api_address.empty() || ctx.options.api_port <= 0) {
    VKUBE_LOG(info, "no API address configured: the default/kubernetes Service is not kept");
    return nullptr;
  }
  auto ip = apiserver::parse_service_cidr(ctx.options.service_cidr);
  if (!ip.is_ok()) {
    VKUBE_LOG(warn, "the default/kubernetes Service is not kept", {"error", ip.status().message()});
    return nullptr;
  }
  auto c = std::make_unique<KubernetesServiceController>(ctx, *ip);
  c->queue().add(kKey);
  return c;
}

}  // namespace vkube::controllers
