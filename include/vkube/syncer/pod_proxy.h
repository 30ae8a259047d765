// A tenant's pods/log, exec, attach and portforward, relayed to the pod that
// runs its containers on the host (the apiserver's PodConnector). The host's
// API server speaks the streaming protocols (a real kubelet behind it, or
// `vkube host`'s node agent), so the tenant relays bytes and never parses
// WebSocket or SPDY: the client's upgrade request goes to the host pod's
// subresource as it came, and after the host's answer head both
// connections are spliced.
#pragma once

#include <memory>
#include <string>

#include "vkube/apiserver/apiserver.h"
#include "vkube/controllers/informers.h"
#include "vkube/syncer/names.h"

namespace vkube::hostclient {
class Client;
}

namespace vkube::syncer {

// `host` (shared with the connector's relays) reaches the host API;
// `host_namespace` is the tenant's namespace there.
std::shared_ptr<apiserver::PodConnector> make_pod_proxy(NameMapper names,
                                                        std::string host_namespace,
                                                        std::shared_ptr<hostclient::Client> host);

// The tenant's metrics.k8s.io: its pods' usage (and its nodes') from the
// host's metrics API, under the tenant's names (metrics_proxy.cpp). The
// listers are the tenant's pods and nodes and must outlive the provider's use.
std::shared_ptr<apiserver::MetricsProvider> make_metrics_proxy(
    NameMapper names, std::string host_namespace, std::shared_ptr<hostclient::Client> host,
    const controllers::Lister& tenant_pods, const controllers::Lister& tenant_nodes);

// A host Status message with the host's names of the pod and namespace put
// back as the tenant knows them (pods "web-x-default-x-dev" not found ->
// pods "web" not found).
std::string tenant_message(std::string message, const std::string& host_name,
                           const std::string& name, const std::string& host_namespace,
                           const std::string& ns);

}  // namespace vkube::syncer
