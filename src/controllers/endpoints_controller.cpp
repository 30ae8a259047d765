// The Endpoints controller (kube's pkg/controller/endpoint): for every
// Service with a selector, an Endpoints object of the same name listing the
// selected pods' addresses (ready ones in addresses, the others in
// notReadyAddresses) per resolved port set.
#include <algorithm>
#include <cmath>
#include <map>

#include "controller.h"
#include "service_endpoints.h"
#include "util.h"

namespace vkube::controllers {

namespace {

using namespace endpoint;

constexpr const char* kComponent = "endpoint-controller";
constexpr const char* kOverCapacity = "endpoints.kubernetes.io/over-capacity";
constexpr const char* kLeaderAnnotation = "control-plane.alpha.kubernetes.io/leader";
// Addresses one Endpoints object holds at most (kube's maxCapacity).
constexpr size_t kMaxCapacity = 1000;
// The queue key of the start-up sweep for Endpoints without a Service.
const std::string kLeftoversKey = "";

const json& section(const json& obj, const char* key) {
  static const json empty = json::object();
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty;
}

// The service the API server's bootstrap owns; never touched here.
bool is_master_service(const std::string& key) {
  return key == "default/kubernetes";
}

Status answer_status(const ApiResult& r, const std::string& what) {
  std::string msg = r.body.is_object() ? r.body.value("message", "") : std::string();
  if (msg.empty()) msg = what + ": HTTP " + std::to_string(r.code);
  return r.code == 409 ? Status::conflict(msg) : Status::internal(msg);
}

// One subset under construction: address key -> (address, ready).
struct AddressSet {
  std::map<std::string, std::pair<json, bool>> addresses;
  std::string key() const {
    std::string k;
    for (const auto& [a, v] : addresses) k += a + (v.second ? "+" : "-") + ";";
    return k;
  }
};

// kube's RepackSubsets: each distinct set of addresses gets one subset with
// every port those addresses offer; addresses sorted by IP, then uid.
json repack(const std::map<std::string, AddressSet>& by_port) {
  std::map<std::string, std::pair<const AddressSet*, json>> by_addresses;
  for (const auto& [port, set] : by_port) {
    auto& entry = by_addresses[set.key()];
    entry.first = &set;
    if (entry.second.is_null()) entry.second = json::array();
    if (!port.empty()) entry.second.push_back(json::parse(port));
  }
  json subsets = json::array();
  for (auto& [key, entry] : by_addresses) {
    json ready = json::array(), not_ready = json::array();
    for (const auto& [k, v] : entry.first->addresses)
      (v.second ? ready : not_ready).push_back(v.first);
    json subset = json::object();
    if (!ready.empty()) subset["addresses"] = std::move(ready);
    if (!not_ready.empty()) subset["notReadyAddresses"] = std::move(not_ready);
    if (!entry.second.empty()) subset["ports"] = std::move(entry.second);
    subsets.push_back(std::move(subset));
  }
  std::sort(subsets.begin(), subsets.end(),
            [](const json& a, const json& b) { return a.dump() < b.dump(); });
  return subsets;
}

size_t count(const json& subset, const char* field) {
  auto it = subset.find(field);
  return it != subset.end() && it->is_array() ? it->size() : 0;
}

// kube's truncateEndpoints: keeps kMaxCapacity addresses, ready ones first,
// each subset its proportional share. True when something was dropped.
bool truncate(json& subsets) {
  size_t ready = 0, not_ready = 0;
  for (const json& s : subsets) {
    ready += count(s, "addresses");
    not_ready += count(s, "notReadyAddresses");
  }
  if (ready + not_ready <= kMaxCapacity) return false;
  const bool truncate_ready = ready > kMaxCapacity;
  const size_t max = truncate_ready ? kMaxCapacity : kMaxCapacity - ready;
  const size_t total = truncate_ready ? ready : not_ready;
  size_t room = max;
  for (json& s : subsets) {
    const char* field = truncate_ready ? "addresses" : "notReadyAddresses";
    size_t n = count(s, field);
    auto share = static_cast<size_t>(
        std::ceil(static_cast<double>(n) / static_cast<double>(total) * static_cast<double>(max)));
    share = std::min(share, room);
    if (n > share)
      s[field].erase(s[field].begin() + static_cast<std::ptrdiff_t>(share), s[field].end());
    if (truncate_ready) s.erase("notReadyAddresses");
    if (s.contains(field) && s[field].empty()) s.erase(field);
    room -= std::min(room, count(s, field));
  }
  return true;
}

class EndpointsController final : public Controller {
 public:
  explicit EndpointsController(Context& ctx)
      : Controller(ctx, kComponent),
        services_(ctx.informers.cache({"core", "services"})),
        pods_(ctx.informers.cache({"core", "pods"})),
        endpoints_(ctx.informers.cache({"core", "endpoints"})) {
    ctx.informers.on_event({"core", "services"},
                           [this](const ObjectEvent& e) { queue().add(e.key); });
    ctx.informers.on_event({"core", "pods"}, [this](const ObjectEvent& e) {
      for (const std::string& key : services_for_pod_event(services_, e)) queue().add(key);
    });
    // A deleted Endpoints comes back while its Service selects pods.
    ctx.informers.on_event({"core", "endpoints"}, [this](const ObjectEvent& e) {
      if (e.type == EventType::kDeleted) queue().add(e.key);
    });
    queue().add(kLeftoversKey);
  }

 protected:
  Status reconcile(const std::string& key) override;

 private:
  Status sweep_leftovers();
  json desired_subsets(const json& svc, const std::vector<ObjectPtr>& pods) const;
  Status write(const json& svc, const ObjectPtr& current, json subsets, bool truncated,
               const std::optional<TimePoint>& trigger);

  const Lister& services_;
  const Lister& pods_;
  const Lister& endpoints_;
  TriggerTimeTracker tracker_;
};

// kube's checkLeftoverEndpoints: at start, Endpoints whose Service is gone
// are deleted (later, only a Service's deletion deletes its Endpoints).
Status EndpointsController::sweep_leftovers() {
  for (const ObjectPtr& ep : endpoints_.list()) {
    std::string key = object_key(*ep);
    if (section(section(*ep, "metadata"), "annotations").contains(kLeaderAnnotation)) continue;
    if (!is_master_service(key) && services_.get(key) == nullptr) queue().add(key);
  }
  return Status::ok();
}

json EndpointsController::desired_subsets(const json& svc,
                                          const std::vector<ObjectPtr>& pods) const {
  const json& spec = section(svc, "spec");
  const bool publish_not_ready = spec.value("publishNotReadyAddresses", false);
  const json ports = spec.value("ports", json::array());
  // The address family: the service's first, else its cluster IP's.
  bool v6 = false;
  const json families = spec.value("ipFamilies", json::array());
  if (!families.empty() && families[0].is_string()) {
    v6 = families[0] == "IPv6";
  } else if (!service_is_headless(svc)) {
    v6 = is_ipv6(spec.value("clusterIP", ""));
  }
  std::map<std::string, AddressSet> by_port;  // port JSON ("" for none) -> addresses
  for (const ObjectPtr& p : pods) {
    const json& pod = *p;
    if (!should_pod_be_in_endpoints(pod, publish_not_ready)) continue;
    std::vector<std::string> ips = pod_ips(pod);
    if (families.empty() && service_is_headless(svc)) v6 = is_ipv6(ips.front());
    auto ip = std::find_if(ips.begin(), ips.end(),
                           [&](const std::string& i) { return is_ipv6(i) == v6; });
    if (ip == ips.end()) continue;
    json address = {{"ip", *ip}, {"targetRef", pod_reference(pod)}};
    std::string node = section(pod, "spec").value("nodeName", "");
    if (!node.empty()) address["nodeName"] = node;
    if (should_set_hostname(pod, svc)) address["hostname"] = pod["spec"]["hostname"];
    const bool ready = publish_not_ready || pod_ready(pod);
    std::string address_key = *ip + "/" + meta(pod, "uid");
    auto add = [&](const std::string& port) {
      auto& slot = by_port[port].addresses[address_key];
      slot.first = address;
      slot.second = slot.second || ready;  // ready wins
    };
    if (ports.empty()) {
      if (service_is_headless(svc)) add("");  // a headless service may have no ports
      continue;
    }
    for (const json& sp : ports) {
      auto number = find_port(pod, sp);
      if (!number) continue;
      json port = {{"port", *number}, {"protocol", sp.value("protocol", "TCP")}};
      if (!sp.value("name", "").empty()) port["name"] = sp["name"];
      if (sp.contains("appProtocol") && sp["appProtocol"].is_string())
        port["appProtocol"] = sp["appProtocol"];
      add(port.dump());
    }
  }
  return repack(by_port);
}

Status EndpointsController::reconcile(const std::string& key) {
  if (key == kLeftoversKey) return sweep_leftovers();
  if (is_master_service(key)) return Status::ok();
  auto [ns, name] = split_key(key);
  ObjectPtr svc = services_.get(key);
  if (svc == nullptr) {
    tracker_.forget(key);
    if (endpoints_.get(key) == nullptr) return Status::ok();
    // A 404 is retried: the cache says it exists, so the API server's reads
    // may not include it yet.
    ApiResult r = ctx_.client.call("DELETE", api_path("v1", "endpoints", ns, name));
    if (!r.ok()) return answer_status(r, "delete endpoints " + key);
    ctx_.informers.sync();
    return Status::ok();
  }
  if (!service_has_selector(*svc)) return Status::ok();  // managed by its user

  std::vector<ObjectPtr> pods;
  for (const ObjectPtr& p : pods_.list(ns))
    if (selector_matches(*svc, labels_of(*p))) pods.push_back(p);
  std::optional<TimePoint> trigger = tracker_.compute(key, *svc, pods);
  json subsets = desired_subsets(*svc, pods);
  bool truncated = truncate(subsets);
  return write(*svc, endpoints_.get(key), std::move(subsets), truncated, trigger);
}

Status EndpointsController::write(const json& svc, const ObjectPtr& current, json subsets,
                                  bool truncated, const std::optional<TimePoint>& trigger) {
  const std::string ns = meta(svc, "namespace"), name = meta(svc, "name");
  json labels = section(section(svc, "metadata"), "labels");
  if (service_is_headless(svc))
    labels[kHeadlessLabel] = "";
  else
    labels.erase(kHeadlessLabel);
  if (current != nullptr) {
    const json& cur = *current;
    json cur_labels = section(section(cur, "metadata"), "labels");
    json want_labels = labels;
    cur_labels.erase(kHeadlessLabel);
    want_labels.erase(kHeadlessLabel);
    json cur_subsets = cur.value("subsets", json::array());
    if (cur_subsets.is_null()) cur_subsets = json::array();
    bool capacity_noted = section(section(cur, "metadata"), "annotations").contains(kOverCapacity);
    if (cur_subsets == subsets && cur_labels == want_labels && capacity_noted == truncated)
      return Status::ok();
  }

  json next =
      current != nullptr ? *current : json{{"metadata", {{"name", name}, {"namespace", ns}}}};
  next["apiVersion"] = "v1";
  next["kind"] = "Endpoints";
  json& m = next["metadata"];
  json annotations = section(m, "annotations");
  if (trigger)
    annotations[kLastChangeTriggerTime] = rfc3339(*trigger);
  else
    annotations.erase(kLastChangeTriggerTime);
  if (truncated)
    annotations[kOverCapacity] = "truncated";
  else
    annotations.erase(kOverCapacity);
  for (auto [field, value] :
       {std::pair{"labels", &labels}, std::pair{"annotations", &annotations}}) {
    if (value->empty())
      m.erase(field);
    else
      m[field] = *value;
  }
  if (subsets.empty())
    next.erase("subsets");
  else
    next["subsets"] = std::move(subsets);

  const bool create = current == nullptr;
  ApiResult r = create ? ctx_.client.call("POST", api_path("v1", "endpoints", ns), next)
                       : ctx_.client.call("PUT", api_path("v1", "endpoints", ns, name), next);
  if (!r.ok()) {
    if (create && refused_for_terminating_namespace(r)) return Status::ok();
    std::string message = r.body.is_object() ? r.body.value("message", "") : "";
    if (create)
      ctx_.events.record(
          next, kComponent, "Warning", "FailedToCreateEndpoint",
          "Failed to create endpoint for service " + ns + "/" + name + ": " + message);
    else
      ctx_.events.record(next, kComponent, "Warning", "FailedToUpdateEndpoint",
                         "Failed to update endpoint " + ns + "/" + name + ": " + message);
    return answer_status(r, (create ? "create endpoints " : "update endpoints ") + ns + "/" + name);
  }
  ctx_.informers.sync();
  return Status::ok();
}

}  // namespace

std::unique_ptr<Controller> make_endpoints_controller(Context& ctx) {
  return std::make_unique<EndpointsController>(ctx);
}

}  // namespace vkube::controllers
