// The helpers the Endpoints and EndpointSlice controllers share
// (service_endpoints.h): kube's pkg/controller/util/endpoint and the
// endpointslice util package.
#include "service_endpoints.h"

#include <algorithm>
#include <iterator>

namespace vkube::controllers::endpoint {
namespace {

const json& section(const json& obj, const char* key) {
  static const json empty = json::object();
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty;
}

bool same_field(const json& a, const json& b, const char* sec, const char* field) {
  const json& x = section(a, sec);
  const json& y = section(b, sec);
  auto i = x.find(field);
  auto j = y.find(field);
  if (i == x.end() || j == y.end()) return (i == x.end()) == (j == y.end());
  return *i == *j;
}

// What an endpoint shows of a pod, beyond its labels (kube's podEndpointsChanged).
bool endpoint_changed(const json& a, const json& b) {
  return is_terminating(a) != is_terminating(b) || pod_ready(a) != pod_ready(b) ||
         pod_phase(a) != pod_phase(b) || pod_ips(a) != pod_ips(b) ||
         !same_field(a, b, "spec", "nodeName");
}

bool host_changed(const json& a, const json& b) {
  return !same_field(a, b, "spec", "hostname") || !same_field(a, b, "spec", "subdomain");
}

std::set<std::string> memberships(const Lister& services, const json& pod) {
  std::set<std::string> out;
  const json& labels = labels_of(pod);
  for (const ObjectPtr& svc : services.list(meta(pod, "namespace")))
    if (service_has_selector(*svc) && selector_matches(*svc, labels)) out.insert(object_key(*svc));
  return out;
}

std::optional<TimePoint> ready_transition(const json& pod) {
  for (const json& c : section(pod, "status").value("conditions", json::array()))
    if (c.is_object() && c.value("type", "") == "Ready")
      return parse_rfc3339(c.value("lastTransitionTime", ""));
  return std::nullopt;
}

void keep_min(std::optional<TimePoint>& acc, TimePoint t) {
  if (!acc || t < *acc) acc = t;
}

}  // namespace

bool service_has_selector(const json& svc) {
  const json& spec = section(svc, "spec");
  if (spec.value("type", "") == "ExternalName") return false;
  auto s = spec.find("selector");
  return s != spec.end() && s->is_object() && !s->empty();
}

bool selector_matches(const json& svc, const json& pod_labels) {
  for (const auto& [k, v] : section(svc, "spec")["selector"].items()) {
    auto it = pod_labels.find(k);
    if (it == pod_labels.end() || *it != v) return false;
  }
  return true;
}

bool service_is_headless(const json& svc) {
  std::string ip = section(svc, "spec").value("clusterIP", "");
  return ip.empty() || ip == "None";
}

std::set<std::string> services_for_pod_event(const Lister& services, const ObjectEvent& e) {
  if (e.type != EventType::kModified || !e.old) return memberships(services, *e.object);
  const json& cur = *e.object;
  const json& old = *e.old;
  bool changed = endpoint_changed(old, cur);
  bool relabelled = labels_of(old) != labels_of(cur) || host_changed(old, cur);
  if (!changed && !relabelled) return {};
  std::set<std::string> now = memberships(services, cur);
  if (!relabelled) return now;
  std::set<std::string> before = memberships(services, old);
  std::set<std::string> out;
  if (changed) {  // every service either way
    std::set_union(now.begin(), now.end(), before.begin(), before.end(),
                   std::inserter(out, out.end()));
  } else {  // only services the pod joined or left
    std::set_symmetric_difference(now.begin(), now.end(), before.begin(), before.end(),
                                  std::inserter(out, out.end()));
  }
  return out;
}

bool should_pod_be_in_endpoints(const json& pod, bool include_terminating) {
  std::string phase = pod_phase(pod);
  if (phase == "Succeeded" || phase == "Failed") return false;
  if (pod_ips(pod).empty()) return false;
  return include_terminating || !is_terminating(pod);
}

std::vector<std::string> pod_ips(const json& pod) {
  std::vector<std::string> out;
  const json& status = section(pod, "status");
  for (const json& ip : status.value("podIPs", json::array()))
    if (ip.is_object() && ip.contains("ip") && ip["ip"].is_string() && !ip["ip"].empty())
      out.push_back(ip["ip"].get<std::string>());
  std::string ip = status.value("podIP", "");
  if (out.empty() && !ip.empty()) out.push_back(ip);
  return out;
}

std::optional<int64_t> find_port(const json& pod, const json& service_port) {
  json target = service_port.value("targetPort", json());
  if (target.is_number_integer()) return target.get<int64_t>();
  if (!target.is_string())
    return service_port.value("port", json()).is_number_integer()
               ? std::optional<int64_t>(service_port["port"].get<int64_t>())
               : std::nullopt;
  std::string name = target.get<std::string>();
  std::string protocol = service_port.value("protocol", "TCP");
  const json& spec = section(pod, "spec");
  auto search = [&](const json& containers, bool sidecars_only) -> std::optional<int64_t> {
    if (!containers.is_array()) return std::nullopt;
    for (const json& c : containers) {
      if (sidecars_only && c.value("restartPolicy", "") != "Always") continue;
      for (const json& p : c.value("ports", json::array()))
        if (p.value("name", "") == name && p.value("protocol", "TCP") == protocol &&
            p.value("containerPort", json()).is_number_integer())
          return p["containerPort"].get<int64_t>();
    }
    return std::nullopt;
  };
  if (auto p = search(spec.value("containers", json()), false)) return p;
  return search(spec.value("initContainers", json()), true);
}

bool should_set_hostname(const json& pod, const json& svc) {
  const json& spec = section(pod, "spec");
  return !spec.value("hostname", "").empty() && spec.value("subdomain", "") == meta(svc, "name") &&
         meta(svc, "namespace") == meta(pod, "namespace");
}

json pod_reference(const json& pod) {
  return {{"kind", "Pod"},
          {"namespace", meta(pod, "namespace")},
          {"name", meta(pod, "name")},
          {"uid", meta(pod, "uid")}};
}

std::optional<TimePoint> TriggerTimeTracker::compute(const std::string& service_key,
                                                     const json& svc,
                                                     const std::vector<ObjectPtr>& pods) {
  State next;
  std::optional<TimePoint> min_changed;
  std::lock_guard lock(mu_);
  auto known = states_.find(service_key);
  for (const ObjectPtr& pod : pods) {
    auto t = ready_transition(*pod);
    if (!t) continue;
    const std::string name = meta(*pod, "name");
    next.pod_times[name] = *t;
    bool newer = true;
    if (known != states_.end()) {
      auto it = known->second.pod_times.find(name);
      newer = it == known->second.pod_times.end() || *t > it->second;
    }
    if (newer) keep_min(min_changed, *t);
  }
  auto created = parse_rfc3339(meta(svc, "creationTimestamp"));
  if (created) {
    next.service_time = *created;
    if (known == states_.end() || *created > known->second.service_time)
      keep_min(min_changed, *created);
  }
  bool was_known = known != states_.end();
  states_[service_key] = std::move(next);
  if (!was_known) return created;  // a new service: its creation
  return min_changed;
}

void TriggerTimeTracker::forget(const std::string& service_key) {
  std::lock_guard lock(mu_);
  states_.erase(service_key);
}

bool refused_for_terminating_namespace(const ApiResult& r) {
  if (r.code != 403 || !r.body.is_object()) return false;
  const json details = r.body.value("details", json::object());
  for (const json& c : details.value("causes", json::array()))
    if (c.is_object() && c.value("reason", "") == "NamespaceTerminating") return true;
  return false;
}

}  // namespace vkube::controllers::endpoint
