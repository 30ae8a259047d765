// A Service's PrepareForUpdate: a Service is a union discriminated by
// spec.type, and some fields only make sense for some types. When an update
// changes the type, kube wipes the fields the new type cannot use if the
// request left them as they were (it may have allocated them itself), so
// `helm upgrade --set service.type=ClusterIP`, a three-way merge that keeps
// the allocated nodePorts, is accepted. A field the request changed as well
// is left for validation to refuse.
#include <map>
#include <set>
#include <string>

#include "kind_util.h"
#include "strategy.h"

namespace vkube::apiserver::builtin {

namespace {

using util::get_array;
using util::get_object;
using util::get_string;

std::string type_of(const json& spec) {
  std::string t = get_string(spec, "type");
  return t.empty() ? "ClusterIP" : t;
}

json field(const json& spec, const char* key) {
  const json* v = util::get(spec, key);
  return v == nullptr ? json() : *v;
}

bool same(const json& old_spec, const json& spec, const char* key) {
  return field(old_spec, key) == field(spec, key);
}

bool needs_cluster_ip(const json& spec) {
  return type_of(spec) != "ExternalName";
}

bool needs_node_port(const json& spec) {
  const std::string t = type_of(spec);
  return t == "NodePort" || t == "LoadBalancer";
}

bool needs_health_check_node_port(const json& spec) {
  return type_of(spec) == "LoadBalancer" && get_string(spec, "externalTrafficPolicy") == "Local";
}

bool externally_accessible(const json& spec) {
  const json* ips = get_array(spec, "externalIPs");
  return needs_node_port(spec) || (type_of(spec) == "ClusterIP" && ips && !ips->empty());
}

std::set<int64_t> node_ports(const json& spec) {
  std::set<int64_t> out;
  if (const json* ports = get_array(spec, "ports"))
    for (const json& p : *ports)
      if (p.is_object())
        if (auto n = util::get_int(p, "nodePort"); n && *n != 0) out.insert(*n);
  return out;
}

// The request may add, remove or change ports, but no nodePort the
// object did not have already.
bool same_node_ports(const json& old_spec, const json& spec) {
  std::set<int64_t> before = node_ports(old_spec);
  for (int64_t p : node_ports(spec))
    if (!before.contains(p)) return false;
  return true;
}

}  // namespace

void drop_service_type_dependent_fields(const json& old, json& obj) {
  const json* old_spec = get_object(old, "spec");
  json* spec = get_object(obj, "spec");
  if (old_spec == nullptr || spec == nullptr) return;
  if (needs_cluster_ip(*old_spec) && !needs_cluster_ip(*spec)) {
    if (same(*old_spec, *spec, "clusterIP") && same(*old_spec, *spec, "clusterIPs")) {
      spec->erase("clusterIP");
      spec->erase("clusterIPs");
    }
    if (same(*old_spec, *spec, "ipFamilies")) spec->erase("ipFamilies");
    if (same(*old_spec, *spec, "ipFamilyPolicy")) spec->erase("ipFamilyPolicy");
    // Only types with cluster IPs route inside the cluster.
    if (same(*old_spec, *spec, "internalTrafficPolicy")) spec->erase("internalTrafficPolicy");
  }
  if (needs_node_port(*old_spec) && !needs_node_port(*spec) && same_node_ports(*old_spec, *spec)) {
    if (json* ports = get_array(*spec, "ports"))
      for (json& p : *ports)
        if (p.is_object()) p.erase("nodePort");
  }
  if (needs_health_check_node_port(*old_spec) && !needs_health_check_node_port(*spec) &&
      same(*old_spec, *spec, "healthCheckNodePort"))
    spec->erase("healthCheckNodePort");
  const bool was_lb = type_of(*old_spec) == "LoadBalancer";
  const bool is_lb = type_of(*spec) == "LoadBalancer";
  if (was_lb && !is_lb) {
    const json before = field(*old_spec, "allocateLoadBalancerNodePorts");
    if (!before.is_null() && before == field(*spec, "allocateLoadBalancerNodePorts"))
      spec->erase("allocateLoadBalancerNodePorts");
    if (same(*old_spec, *spec, "loadBalancerClass")) spec->erase("loadBalancerClass");
  }
  if (externally_accessible(*old_spec) && !externally_accessible(*spec) &&
      same(*old_spec, *spec, "externalTrafficPolicy"))
    spec->erase("externalTrafficPolicy");
  // The load balancer's address goes with the type that asked for it.
  if (!is_lb && obj.contains("status") && obj["status"].is_object())
    obj["status"]["loadBalancer"] = json::object();
}

void keep_service_allocated_values(const json& old, json& obj) {
  const json* old_spec = get_object(old, "spec");
  json* spec = get_object(obj, "spec");
  if (old_spec == nullptr || spec == nullptr) return;
  if (needs_cluster_ip(*old_spec) && needs_cluster_ip(*spec)) {
    if (get_string(*spec, "clusterIP").empty() && !get_string(*old_spec, "clusterIP").empty())
      (*spec)["clusterIP"] = (*old_spec)["clusterIP"];
    const json* ips = get_array(*spec, "clusterIPs");
    if ((ips == nullptr || ips->empty()) && get_array(*old_spec, "clusterIPs"))
      (*spec)["clusterIPs"] = (*old_spec)["clusterIPs"];
  }
  if (needs_node_port(*old_spec) && needs_node_port(*spec)) {
    // A port the request names keeps the node port its namesake had, unless
    // the request gave that node port to another port.
    const std::set<int64_t> used = node_ports(*spec);
    std::map<std::string, int64_t> by_name;
    if (const json* ports = get_array(*old_spec, "ports"))
      for (const json& p : *ports)
        if (p.is_object())
          if (auto n = util::get_int(p, "nodePort")) by_name[get_string(p, "name")] = *n;
    if (json* ports = get_array(*spec, "ports"))
      for (json& p : *ports) {
        if (!p.is_object() || util::get_int(p, "nodePort").value_or(0) != 0) continue;
        auto it = by_name.find(get_string(p, "name"));
        if (it != by_name.end() && it->second != 0 && !used.contains(it->second))
          p["nodePort"] = it->second;
      }
  }
  if (needs_health_check_node_port(*old_spec) && needs_health_check_node_port(*spec) &&
      util::get_int(*spec, "healthCheckNodePort").value_or(0) == 0 &&
      util::get_int(*old_spec, "healthCheckNodePort"))
    (*spec)["healthCheckNodePort"] = (*old_spec)["healthCheckNodePort"];
}

void prepare_service_update(const json& old, json& obj) {
  drop_service_type_dependent_fields(old, obj);
  keep_service_allocated_values(old, obj);
}

}  // namespace vkube::apiserver::builtin
