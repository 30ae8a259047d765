// The EndpointSlice controller (kube's pkg/controller/endpointslice and its
// reconciler): for every Service with a selector, EndpointSlices (at most 100
// endpoints each, one set per address type and port set) owned by the
// Service, updated in place: endpoints stay in the slice that holds them,
// new ones fill slices being changed anyway before new slices are made.
#include <algorithm>
#include <list>
#include <map>

#include "controller.h"
#include "service_endpoints.h"
#include "util.h"

namespace vkube::controllers {

namespace {

using namespace endpoint;

constexpr const char* kComponent = "endpoint-slice-controller";
constexpr const char* kManagedBy = "endpointslice.kubernetes.io/managed-by";
constexpr const char* kControllerName = "endpointslice-controller.k8s.io";
constexpr const char* kServiceName = "kubernetes.io/service-name";
constexpr const char* kZoneLabel = "topology.kubernetes.io/zone";
// kube-controller-manager's --max-endpoints-per-slice default.
constexpr size_t kMaxEndpointsPerSlice = 100;

const json& section(const json& obj, const char* key) {
  static const json empty = json::object();
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty;
}

json array_or_empty(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? *it : json::array();
}

// An endpoint's identity (kube's hashEndpoint): addresses, hostname, pod.
std::string endpoint_id(const json& ep) {
  json addresses = array_or_empty(ep, "addresses");
  std::sort(addresses.begin(), addresses.end());
  const json& ref = section(ep, "targetRef");
  return addresses.dump() + "|" + ep.value("hostname", "") + "|" + ref.value("namespace", "") +
         "/" + ref.value("name", "");
}

// A port set's identity (kube's NewPortMapKey): the sorted ports.
std::string ports_id(const json& ports) {
  json sorted = ports.is_array() ? ports : json::array();
  std::sort(sorted.begin(), sorted.end());
  return sorted.dump();
}

bool owned_by(const json& slice, const json& svc) {
  for (const json& r : section(slice, "metadata").value("ownerReferences", json::array()))
    if (r.value("uid", "") == meta(svc, "uid")) return true;
  return false;
}

bool is_reserved_label(const std::string& key) {
  return key == kServiceName || key == kManagedBy || key == kHeadlessLabel;
}

// kube's setEndpointSliceLabels: the service's labels plus the reserved
// ones; `changed` when the slice's own labels differ.
json slice_labels(const json& slice, const json& svc, bool* changed) {
  json want = json::object(), have = json::object();
  for (const auto& [k, v] : section(section(svc, "metadata"), "labels").items())
    if (!is_reserved_label(k)) want[k] = v;
  for (const auto& [k, v] : section(section(slice, "metadata"), "labels").items())
    if (!is_reserved_label(k)) have[k] = v;
  if (service_is_headless(svc)) want[kHeadlessLabel] = "";
  want[kServiceName] = meta(svc, "name");
  want[kManagedBy] = kControllerName;
  if (changed != nullptr) *changed = section(section(slice, "metadata"), "labels") != want;
  return want;
}

// The desired endpoints of one port set, in pod order.
struct Desired {
  json ports;
  std::list<json> endpoints;
  std::map<std::string, std::list<json>::iterator> index;  // endpoint_id -> entry
  void add(json ep) {
    std::string id = endpoint_id(ep);
    if (index.count(id)) return;
    endpoints.push_back(std::move(ep));
    index[id] = std::prev(endpoints.end());
  }
  // Takes the desired version of `ep` out of the set, if it is desired.
  std::optional<json> take(const json& ep) {
    auto it = index.find(endpoint_id(ep));
    if (it == index.end()) return std::nullopt;
    json out = std::move(*it->second);
    endpoints.erase(it->second);
    index.erase(it);
    return out;
  }
  json pop() {
    json out = std::move(endpoints.front());
    index.erase(endpoint_id(out));
    endpoints.pop_front();
    return out;
  }
  size_t size() const { return endpoints.size(); }
};

struct Plan {
  std::vector<json> create, update, remove;
};

size_t endpoint_count(const json& slice) {
  return array_or_empty(slice, "endpoints").size();
}

class EndpointSliceController final : public Controller {
 public:
  explicit EndpointSliceController(Context& ctx)
      : Controller(ctx, kComponent),
        services_(ctx.informers.cache({"core", "services"})),
        pods_(ctx.informers.cache({"core", "pods"})),
        nodes_(ctx.informers.cache({"core", "nodes"})),
        slices_(ctx.informers.cache({"discovery.k8s.io", "endpointslices"})) {
    ctx.informers.on_event({"core", "services"},
                           [this](const ObjectEvent& e) { queue().add(e.key); });
    ctx.informers.on_event({"core", "pods"}, [this](const ObjectEvent& e) {
      for (const std::string& key : services_for_pod_event(services_, e)) queue().add(key);
    });
    // Someone else's change to a managed slice is put right.
    ctx.informers.on_event({"discovery.k8s.io", "endpointslices"}, [this](const ObjectEvent& e) {
      const json& labels = labels_of(*e.object);
      if (labels.value(kManagedBy, "") != kControllerName) return;
      std::string svc = labels.value(kServiceName, "");
      if (!svc.empty()) queue().add(meta(*e.object, "namespace") + "/" + svc);
    });
  }

 protected:
  Status reconcile(const std::string& key) override;

 private:
  std::map<std::string, Desired> desired(const json& svc, const std::vector<ObjectPtr>& pods,
                                         const std::string& address_type) const;
  json new_slice(const json& svc, const json& ports, const std::string& address_type) const;
  void plan_port_set(const json& svc, const std::string& address_type, Desired& want,
                     const std::vector<ObjectPtr>& existing, Plan* plan) const;
  void plan_address_type(const json& svc, const std::vector<ObjectPtr>& pods,
                         const std::string& address_type, std::vector<ObjectPtr> existing,
                         Plan* plan) const;
  Status apply(const json& svc, Plan plan, const std::optional<TimePoint>& trigger);

  const Lister& services_;
  const Lister& pods_;
  const Lister& nodes_;
  const Lister& slices_;
  TriggerTimeTracker tracker_;
};

std::map<std::string, Desired> EndpointSliceController::desired(
    const json& svc, const std::vector<ObjectPtr>& pods, const std::string& address_type) const {
  std::map<std::string, Desired> out;
  const json& spec = section(svc, "spec");
  const bool publish_not_ready = spec.value("publishNotReadyAddresses", false);
  for (const ObjectPtr& p : pods) {
    const json& pod = *p;
    if (!should_pod_be_in_endpoints(pod, /*include_terminating=*/true)) continue;
    std::vector<std::string> ips = pod_ips(pod);
    auto ip = std::find_if(ips.begin(), ips.end(), [&](const std::string& i) {
      return is_ipv6(i) == (address_type == "IPv6");
    });
    if (ip == ips.end()) continue;
    const bool serving = pod_ready(pod);
    const bool terminating = is_terminating(pod);
    json ep = {{"addresses", {*ip}},
               {"conditions",
                {{"ready", publish_not_ready || (serving && !terminating)},
                 {"serving", serving},
                 {"terminating", terminating}}},
               {"targetRef", pod_reference(pod)}};
    std::string node = section(pod, "spec").value("nodeName", "");
    if (!node.empty()) {
      ep["nodeName"] = node;
      // A node that does not exist (yet) only costs the zone: pods of a
      // virtual cluster may name nodes the tenant cannot see.
      if (ObjectPtr n = nodes_.get(node)) {
        std::string zone = labels_of(*n).value(kZoneLabel, "");
        if (!zone.empty()) ep["zone"] = zone;
      }
    }
    if (should_set_hostname(pod, svc)) ep["hostname"] = pod["spec"]["hostname"];
    json ports = json::array();
    for (const json& sp : spec.value("ports", json::array())) {
      auto number = find_port(pod, sp);
      if (!number) continue;
      json port = {{"name", sp.value("name", "")},
                   {"port", *number},
                   {"protocol", sp.value("protocol", "TCP")}};
      if (sp.contains("appProtocol") && sp["appProtocol"].is_string())
        port["appProtocol"] = sp["appProtocol"];
      ports.push_back(std::move(port));
    }
    Desired& d = out[ports_id(ports)];
    if (d.ports.is_null()) d.ports = ports;
    d.add(std::move(ep));
  }
  return out;
}

json EndpointSliceController::new_slice(const json& svc, const json& ports,
                                        const std::string& address_type) const {
  json owner = svc;
  owner["apiVersion"] = "v1";
  owner["kind"] = "Service";
  json slice = {{"apiVersion", "discovery.k8s.io/v1"},
                {"kind", "EndpointSlice"},
                {"metadata",
                 {{"generateName", meta(svc, "name") + "-"},
                  {"namespace", meta(svc, "namespace")},
                  {"ownerReferences", {controller_owner_ref(owner)}}}},
                {"addressType", address_type},
                {"endpoints", json::array()},
                {"ports", ports.empty() ? json() : ports}};
  slice["metadata"]["labels"] = slice_labels(slice, svc, nullptr);
  return slice;
}

// kube's reconcileByPortMapping.
void EndpointSliceController::plan_port_set(const json& svc, const std::string& address_type,
                                            Desired& want, const std::vector<ObjectPtr>& existing,
                                            Plan* plan) const {
  std::vector<json> updates, unchanged;
  std::vector<ObjectPtr> deletes;
  // 1. Keep the desired endpoints where they are; note what changed.
  for (const ObjectPtr& s : existing) {
    json kept = json::array();
    bool changed = false;
    for (const json& ep : array_or_empty(*s, "endpoints")) {
      if (auto got = want.take(ep)) {
        changed = changed || *got != ep;
        kept.push_back(std::move(*got));
      }
    }
    bool labels_changed = false;
    json labels = slice_labels(*s, svc, &labels_changed);
    if (changed || kept.size() != endpoint_count(*s)) {
      if (kept.empty()) {
        deletes.push_back(s);
        continue;
      }
      json next = *s;
      next["endpoints"] = std::move(kept);
      next["metadata"]["labels"] = std::move(labels);
      updates.push_back(std::move(next));
    } else if (labels_changed) {
      json next = *s;
      next["metadata"]["labels"] = std::move(labels);
      updates.push_back(std::move(next));
    } else {
      unchanged.push_back(*s);
    }
  }
  // 2. Refill slices that would be deleted.
  for (auto it = deletes.begin(); want.size() > 0 && it != deletes.end();) {
    json next = **it;
    next["endpoints"] = json::array();
    next["metadata"]["labels"] = slice_labels(next, svc, nullptr);
    while (want.size() > 0 && next["endpoints"].size() < kMaxEndpointsPerSlice)
      next["endpoints"].push_back(want.pop());
    updates.push_back(std::move(next));
    it = deletes.erase(it);
  }
  // 3. Fill the slices being updated anyway, fullest first.
  std::sort(updates.begin(), updates.end(),
            [](const json& a, const json& b) { return endpoint_count(a) > endpoint_count(b); });
  for (json& s : updates)
    while (want.size() > 0 && s["endpoints"].size() < kMaxEndpointsPerSlice)
      s["endpoints"].push_back(want.pop());
  // 4. The rest: into the unchanged slice that fits them best, else new slices.
  while (want.size() > 0) {
    auto fill = unchanged.end();
    if (want.size() < kMaxEndpointsPerSlice) {
      for (auto it = unchanged.begin(); it != unchanged.end(); ++it) {
        size_t n = endpoint_count(*it);
        if (n + want.size() <= kMaxEndpointsPerSlice &&
            (fill == unchanged.end() || n > endpoint_count(*fill)))
          fill = it;
      }
    }
    const bool reuse = fill != unchanged.end();
    json slice = reuse ? std::move(*fill) : new_slice(svc, want.ports, address_type);
    if (reuse) unchanged.erase(fill);
    if (!slice["endpoints"].is_array()) slice["endpoints"] = json::array();
    while (want.size() > 0 && slice["endpoints"].size() < kMaxEndpointsPerSlice)
      slice["endpoints"].push_back(want.pop());
    (reuse ? updates : plan->create).push_back(std::move(slice));
  }
  for (json& s : updates) plan->update.push_back(std::move(s));
  for (const ObjectPtr& s : deletes) plan->remove.push_back(*s);
}

// kube's reconcileByAddressType.
void EndpointSliceController::plan_address_type(const json& svc, const std::vector<ObjectPtr>& pods,
                                                const std::string& address_type,
                                                std::vector<ObjectPtr> existing, Plan* plan) const {
  std::map<std::string, Desired> want = desired(svc, pods, address_type);
  std::map<std::string, std::vector<ObjectPtr>> by_ports;
  const size_t creates_before = plan->create.size();
  const size_t removes_before = plan->remove.size();
  for (const ObjectPtr& s : existing) {
    std::string id = ports_id(s->value("ports", json::array()));
    if (want.count(id) && owned_by(*s, svc))
      by_ports[id].push_back(s);
    else
      plan->remove.push_back(*s);
  }
  for (auto& [id, d] : want) plan_port_set(svc, address_type, d, by_ports[id], plan);
  // A service without endpoints keeps one empty placeholder slice.
  if (existing.size() == plan->remove.size() - removes_before &&
      plan->create.size() == creates_before) {
    json placeholder = new_slice(svc, json::array(), address_type);
    placeholder["endpoints"] = nullptr;
    if (plan->remove.size() - removes_before == 1) {
      const json& old = plan->remove.back();
      bool labels_changed = false;
      slice_labels(old, svc, &labels_changed);
      if (old.value("addressType", "") == address_type && endpoint_count(old) == 0 &&
          array_or_empty(old, "ports").empty() && !labels_changed && owned_by(old, svc)) {
        plan->remove.pop_back();
        return;
      }
    }
    plan->create.push_back(std::move(placeholder));
  }
}

Status EndpointSliceController::reconcile(const std::string& key) {
  auto [ns, name] = split_key(key);
  ObjectPtr svc = services_.get(key);
  std::vector<ObjectPtr> existing;
  for (const ObjectPtr& s : slices_.list(ns)) {
    const json& labels = labels_of(*s);
    if (labels.value(kServiceName, "") == name && labels.value(kManagedBy, "") == kControllerName &&
        !is_terminating(*s))
      existing.push_back(s);
  }
  if (svc == nullptr) {
    // The garbage collector would delete them too (they are owned); doing it
    // here does not leave them behind when it is not running.
    tracker_.forget(key);
    Plan plan;
    for (const ObjectPtr& s : existing) plan.remove.push_back(*s);
    return apply(json(), std::move(plan), std::nullopt);
  }
  if (is_terminating(*svc) || !service_has_selector(*svc)) return Status::ok();

  std::vector<ObjectPtr> pods;
  for (const ObjectPtr& p : pods_.list(ns))
    if (selector_matches(*svc, labels_of(*p))) pods.push_back(p);
  std::optional<TimePoint> trigger = tracker_.compute(key, *svc, pods);

  std::vector<std::string> types;
  for (const json& f : section(*svc, "spec").value("ipFamilies", json::array()))
    if (f == "IPv4" || f == "IPv6") types.push_back(f.get<std::string>());
  if (types.empty()) types = {"IPv4", "IPv6"};

  Plan plan;
  for (const std::string& type : types) {
    std::vector<ObjectPtr> of_type;
    for (const ObjectPtr& s : existing)
      if (s->value("addressType", "") == type) of_type.push_back(s);
    plan_address_type(*svc, pods, type, std::move(of_type), &plan);
  }
  for (const ObjectPtr& s : existing)
    if (std::find(types.begin(), types.end(), s->value("addressType", "")) == types.end())
      plan.remove.push_back(*s);
  return apply(*svc, std::move(plan), trigger);
}

// kube's reconciler.finalize: creates turn into updates of slices that would
// be deleted; then creates, updates, deletes.
Status EndpointSliceController::apply(const json& svc, Plan plan,
                                      const std::optional<TimePoint>& trigger) {
  for (size_t i = 0; i < plan.remove.size() && !plan.create.empty();) {
    json& old = plan.remove[i];
    json& slice = plan.create.back();
    if (old.value("addressType", "") == slice.value("addressType", "") && owned_by(old, svc)) {
      slice["metadata"]["name"] = old["metadata"]["name"];
      slice["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"];
      plan.update.push_back(std::move(slice));
      plan.create.pop_back();
      plan.remove.erase(plan.remove.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  auto annotate = [&](json& slice) {
    json& m = slice["metadata"];
    json annotations = section(m, "annotations");
    if (trigger)
      annotations[kLastChangeTriggerTime] = rfc3339(*trigger);
    else
      annotations.erase(kLastChangeTriggerTime);
    if (annotations.empty())
      m.erase("annotations");
    else
      m["annotations"] = std::move(annotations);
  };
  const std::string ns = svc.is_null() ? std::string() : meta(svc, "namespace");
  std::vector<std::string> errors;
  auto check = [&](const ApiResult& r, bool is_create) {
    // A 404 is retried: what the cache holds may be too new for the API
    // server's reads; the retry starts from the cache again.
    if (r.ok() || (is_create && refused_for_terminating_namespace(r))) return;
    errors.push_back(r.body.is_object() ? r.body.value("message", "")
                                        : "HTTP " + std::to_string(r.code));
  };
  bool wrote = false;
  for (json& s : plan.create) {
    annotate(s);
    check(ctx_.client.call("POST", api_path("discovery.k8s.io/v1", "endpointslices", ns), s), true);
    wrote = true;
  }
  for (json& s : plan.update) {
    annotate(s);
    std::string path =
        api_path("discovery.k8s.io/v1", "endpointslices", meta(s, "namespace"), meta(s, "name"));
    check(ctx_.client.call("PUT", path, s), false);
    wrote = true;
  }
  for (const json& s : plan.remove) {
    std::string path =
        api_path("discovery.k8s.io/v1", "endpointslices", meta(s, "namespace"), meta(s, "name"));
    check(ctx_.client.call("DELETE", path), false);
    wrote = true;
  }
  if (wrote) ctx_.informers.sync();
  if (errors.empty()) return Status::ok();
  std::string message = errors.front();
  if (!svc.is_null()) {
    json owner = svc;
    owner["apiVersion"] = "v1";
    owner["kind"] = "Service";
    ctx_.events.record(owner, kComponent, "Warning", "FailedToUpdateEndpointSlices",
                       "Error updating Endpoint Slices for Service " + ns + "/" +
                           meta(svc, "name") + ": " + message);
  }
  return Status::internal(message);
}

}  // namespace

std::unique_ptr<Controller> make_endpointslice_controller(Context& ctx) {
  return std::make_unique<EndpointSliceController>(ctx);
}

}  // namespace vkube::controllers
