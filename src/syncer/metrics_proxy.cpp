// A tenant's metrics.k8s.io (the apiserver's MetricsProvider): its pods'
// usage is its synced host pods' usage, read from the host's metrics API
// (metrics-server on a real host, the node agent on `vkube host`) and named
// back as the tenant knows them; a node's usage is the host node's.
#include "vkube/syncer/pod_proxy.h"

#include <map>

#include "vkube/hostclient/client.h"

namespace vkube::syncer {

namespace {

using json = nlohmann::json;

class MetricsProxy final : public apiserver::MetricsProvider {
 public:
  MetricsProxy(NameMapper names, std::string host_ns, std::shared_ptr<hostclient::Client> host,
               const controllers::Lister& pods, const controllers::Lister& nodes)
      : names_(std::move(names)),
        host_ns_(std::move(host_ns)),
        host_(std::move(host)),
        pods_(pods),
        nodes_(nodes) {}

  Result<std::vector<json>> node_metrics() override {
    auto got = host_items("/apis/metrics.k8s.io/v1beta1/nodes");
    if (!got.is_ok()) return got.status();
    std::vector<json> out;
    for (const auto& node : nodes_.list()) {
      const json& meta = node->value("metadata", json::object());
      auto it = got->find(meta.value("name", ""));
      if (it == got->end()) continue;
      json notes = it->second.value("metadata", json::object()).value("annotations", json());
      json m = std::move(it->second);
      m["metadata"] = {{"name", meta.value("name", "")},
                       {"labels", meta.value("labels", json::object())}};
      if (notes.is_object()) m["metadata"]["annotations"] = std::move(notes);
      out.push_back(std::move(m));
    }
    return out;
  }

  Result<std::vector<json>> pod_metrics(const std::string& ns) override {
    auto got = host_items("/apis/metrics.k8s.io/v1beta1/namespaces/" + host_ns_ + "/pods");
    if (!got.is_ok()) return got.status();
    std::vector<json> out;
    for (const auto& pod : pods_.list(ns)) {
      const json& meta = pod->value("metadata", json::object());
      const std::string pns = meta.value("namespace", "");
      const std::string name = meta.value("name", "");
      auto it = got->find(names_.host_name(pns, name));
      if (it == got->end()) continue;
      json notes =  // vkube.io/simulated, on `vkube host`
          it->second.value("metadata", json::object()).value("annotations", json());
      json m = std::move(it->second);
      m["metadata"] = {{"name", name},
                       {"namespace", pns},
                       {"labels", meta.value("labels", json::object())}};
      if (notes.is_object()) m["metadata"]["annotations"] = std::move(notes);
      out.push_back(std::move(m));
    }
    return out;
  }

 private:
  // The host's metrics items by name; its refusal as a Status.
  Result<std::map<std::string, json>> host_items(const std::string& path) {
    hostclient::Response r = host_->call("GET", path);
    if (r.code == 404 || r.code == 503)
      return Status::unavailable(
          "the host cluster serves no metrics.k8s.io (on Kubernetes: is metrics-server "
          "installed?): " + r.message());
    if (!r.ok()) {
      return Status::unavailable("the host refused metrics (" + std::to_string(r.code) +
                                 "): " + r.message());
    }
    std::map<std::string, json> by_name;
    for (json& item : r.body.value("items", json::array())) {
      const json& meta = item.value("metadata", json::object());
      std::string name = meta.value("name", "");
      if (!name.empty()) by_name[name] = std::move(item);
    }
    return by_name;
  }

  const NameMapper names_;
  const std::string host_ns_;
  const std::shared_ptr<hostclient::Client> host_;
  const controllers::Lister& pods_;
  const controllers::Lister& nodes_;
};

}  // namespace

std::shared_ptr<apiserver::MetricsProvider> make_metrics_proxy(
    NameMapper names, std::string host_namespace, std::shared_ptr<hostclient::Client> host,
    const controllers::Lister& tenant_pods, const controllers::Lister& tenant_nodes) {
  return std::make_shared<MetricsProxy>(std::move(names), std::move(host_namespace),
                                        std::move(host), tenant_pods, tenant_nodes);
}

}  // namespace vkube::syncer
