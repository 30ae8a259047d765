// What the Endpoints and EndpointSlice controllers share (kube's
// pkg/controller/util/endpoint and endpointslice util): which services select
// a pod, which pods belong in a service's endpoints, how a service port maps
// onto a pod's port, and the last-change trigger time.
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "util.h"
#include "vkube/controllers/informers.h"

// Nested so that these names cannot collide with other controllers' helpers.
namespace vkube::controllers::endpoint {

// The annotation both controllers set on what they write.
inline constexpr const char* kLastChangeTriggerTime =
    "endpoints.kubernetes.io/last-change-trigger-time";
inline constexpr const char* kHeadlessLabel = "service.kubernetes.io/headless";

// A service selects pods when its spec.selector is a non-empty map (an empty
// one is absent once stored, in kube) and ExternalName services get none.
bool service_has_selector(const json& svc);
bool selector_matches(const json& svc, const json& pod_labels);
// spec.clusterIP is "None" or unset.
bool service_is_headless(const json& svc);

// Keys ("ns/name") of the services whose endpoints a pod event may change
// (kube's GetServicesToUpdateOnPodChange): none when nothing that endpoints
// show changed; both the old and new memberships when the labels changed.
std::set<std::string> services_for_pod_event(const Lister& services, const ObjectEvent& e);

// kube's ShouldPodBeInEndpoints: the pod has an IP, is not terminating
// (unless `include_terminating`) and is not terminal (Succeeded or Failed).
bool should_pod_be_in_endpoints(const json& pod, bool include_terminating);
// The pod's IPs: status.podIPs, else status.podIP.
std::vector<std::string> pod_ips(const json& pod);
inline bool is_ipv6(const std::string& ip) {
  return ip.find(':') != std::string::npos;
}
// kube's podutil.FindPort: a numeric targetPort as is; a named one looked up
// among the pod's container (and sidecar) ports of the same protocol.
std::optional<int64_t> find_port(const json& pod, const json& service_port);
// The pod's spec.hostname is published when its subdomain names the service.
bool should_set_hostname(const json& pod, const json& svc);
// {kind: Pod, namespace, name, uid}.
json pod_reference(const json& pod);

// kube's TriggerTimeTracker: the earliest change (a pod's Ready transition,
// the service's creation) not yet reflected in a service's endpoints.
// Thread-safe; a service is synced by one worker at a time.
class TriggerTimeTracker {
 public:
  // The trigger time for this sync (nullopt when nothing changed since the
  // last one), remembering the state for the next one.
  std::optional<TimePoint> compute(const std::string& service_key, const json& svc,
                                   const std::vector<ObjectPtr>& pods);
  void forget(const std::string& service_key);

 private:
  struct State {
    TimePoint service_time;
    std::unordered_map<std::string, TimePoint> pod_times;
  };
  std::mutex mu_;
  std::unordered_map<std::string, State> states_;
};

// A 403 whose cause is a terminating namespace: creates there are dropped.
bool refused_for_terminating_namespace(const ApiResult& r);

}  // namespace vkube::controllers::endpoint
