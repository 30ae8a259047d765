#include "service_ips.h"

#include <arpa/inet.h>

#include <algorithm>
#include <string_view>

#include "object.h"
#include "vkube/apiserver/apiserver.h"

namespace vkube::apiserver {

namespace {

std::optional<uint32_t> parse_ipv4(const std::string& s) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return std::nullopt;
  return ntohl(a.s_addr);
}

std::string format_ipv4(uint32_t ip) {
  in_addr a{htonl(ip)};
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

constexpr int kPortMin = 30000, kPortMax = 32767;

api::Resource services_resource() {
  api::Resource r;
  r.gv = {"", "v1"};
  r.kind = "Service";
  r.plural = "services";
  return r;
}

// spec[key] when it is a string ("" otherwise: validation judged it).
std::string text(const json& spec, const char* key) {
  auto it = spec.find(key);
  return it != spec.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string type_of(const json& spec) {
  std::string t = text(spec, "type");
  return t.empty() ? "ClusterIP" : t;
}

bool needs_cluster_ip(const json& spec) {
  return type_of(spec) != "ExternalName";
}

std::optional<int> port_at(const json& holder, const char* key) {
  auto it = holder.find(key);
  if (it == holder.end() || !it->is_number_integer() || it->get<int64_t>() == 0)
    return std::nullopt;
  return static_cast<int>(it->get<int64_t>());
}

// The node ports a Service's spec holds: its ports' and its health check's.
std::set<int> held_ports(const json& spec) {
  std::set<int> out;
  if (!spec.is_object()) return out;
  if (auto it = spec.find("ports"); it != spec.end() && it->is_array())
    for (const json& p : *it)
      if (p.is_object())
        if (auto n = port_at(p, "nodePort")) out.insert(*n);
  if (auto n = port_at(spec, "healthCheckNodePort")) out.insert(*n);
  return out;
}

ApiError field_invalid(const std::string& name, const std::string& field, const json& value,
                       const std::string& why) {
  return invalid(services_resource(), name,
                 {FieldError{FieldError::Type::kInvalid, field, why, value}});
}

struct Range {
  uint32_t base = 0, size = 0;
};

// kube-apiserver's checks of --service-cluster-ip-range (ParseCIDR, then
// validateMaxCIDRRange with 20 bits); the upper mask bound keeps at least
// two usable addresses (the first is the kubernetes Service's).
Result<Range> parse_range(const std::string& cidr) {
  const std::string flag = "--service-cluster-ip-range";
  auto slash = cidr.find('/');
  if (cidr.empty()) return Status::invalid(flag + " must be set");
  auto ip = slash == std::string::npos ? std::nullopt : parse_ipv4(cidr.substr(0, slash));
  const std::string mask = slash == std::string::npos ? "" : cidr.substr(slash + 1);
  const bool digits = !mask.empty() && mask.size() <= 2 &&
                      mask.find_first_not_of("0123456789") == std::string::npos;
  if (!ip || !digits || std::stoi(mask) > 32) {
    if (cidr.find(':') != std::string::npos)
      return Status::invalid(flag + " " + cidr +
                             ": only IPv4 ranges are supported (IPv6 and dual-stack are not)");
    return Status::invalid(flag + ": invalid CIDR address: " + cidr +
                           " (want an IPv4 range such as 10.96.0.0/12)");
  }
  const int bits = std::stoi(mask);
  if (bits < 12)
    return Status::invalid("specified " + flag + " " + cidr +
                           " is too large; for 32-bit addresses, the mask must be >= 12");
  if (bits > 30)
    return Status::invalid("specified " + flag + " " + cidr +
                           " is too small; for 32-bit addresses, the mask must be <= 30");
  Range r;
  r.size = 1u << (32 - bits);
  r.base = *ip & ~(r.size - 1);
  return r;
}

}  // namespace

Result<std::string> parse_service_cidr(const std::string& cidr) {
  auto r = parse_range(cidr);
  if (!r.is_ok()) return r.status();
  return format_ipv4(r->base + 1);
}

ServiceIpAllocator::ServiceIpAllocator(const std::string& cidr) {
  // The flag was checked where it was read; a range that still does not
  // parse (an embedding that skipped the check) falls back to kube's default.
  auto r = parse_range(cidr);
  if (!r.is_ok()) r = parse_range("10.96.0.0/12");
  base_ = r->base;
  size_ = r->size;
}

void ServiceIpAllocator::load_locked() {
  if (loaded_ || backend_ == nullptr) return;
  storage::ListOptions o;
  o.prefix = "/registry/core/services/";
  auto list = backend_->list(o);
  if (!list.is_ok()) return;
  for (const auto& kv : list->items) {
    json svc = json::parse(kv.value, nullptr, false);
    if (!svc.is_object()) continue;
    auto spec = svc.value("spec", json::object());
    if (auto ip = parse_ipv4(spec.value("clusterIP", ""))) ips_.insert(*ip);
    for (int p : held_ports(spec)) ports_.insert(p);
  }
  loaded_ = true;
}

std::optional<ApiError> ServiceIpAllocator::take_cluster_ip_locked(json& spec,
                                                                   const std::string& name,
                                                                   std::vector<uint32_t>& taken) {
  std::string requested = text(spec, "clusterIP");
  if (requested == "None") {
    spec["clusterIPs"] = json::array({"None"});
    return std::nullopt;
  }
  if (!requested.empty()) {
    auto ip = parse_ipv4(requested);
    if (!ip || *ip < base_ || *ip >= base_ + size_)
      return field_invalid(
          name, "spec.clusterIPs", requested,
          "failed to allocate IP " + requested + ": provided IP is not in the valid range");
    if (ips_.count(*ip))
      return field_invalid(
          name, "spec.clusterIPs", requested,
          "failed to allocate IP " + requested + ": provided IP is already allocated");
    taken.push_back(*ip);
    spec["clusterIPs"] = json::array({requested});
    return std::nullopt;
  }
  for (uint32_t n = 0; n + 2 < size_; ++n) {
    uint32_t candidate = base_ + 1 + (next_ + n) % (size_ - 2);
    if (ips_.count(candidate)) continue;
    taken.push_back(candidate);
    spec["clusterIP"] = format_ipv4(candidate);
    spec["clusterIPs"] = json::array({spec["clusterIP"]});
    return std::nullopt;
  }
  return ApiError(Status(Code::kInternal, "failed to allocate a serviceIP: range is full"));
}

// One node port held in holder[key]: kept when the object had it already,
// else the requested one is checked or (with `allocate`) the next free one
// taken; no port and no `allocate` leaves it unset.
std::optional<ApiError> ServiceIpAllocator::take_node_port_locked(
    json& holder, const char* key, const std::string& field, bool allocate,
    const std::set<int>& kept, const std::string& name, std::vector<int>& taken) {
  if (auto np = port_at(holder, key)) {
    if (kept.count(*np)) return std::nullopt;
    const bool health = std::string_view(key) == "healthCheckNodePort";
    const std::string prefix =
        health ? "failed to allocate requested HealthCheck NodePort " + std::to_string(*np) + ": "
               : "";
    if (*np < kPortMin || *np > kPortMax)
      return field_invalid(
          name, field, *np,
          prefix +
              "provided port is not in the valid range. The range of valid ports is 30000-32767");
    if (ports_.count(*np) || (health && std::find(taken.begin(), taken.end(), *np) != taken.end()))
      return field_invalid(name, field, *np, prefix + "provided port is already allocated");
    taken.push_back(*np);
    return std::nullopt;
  }
  if (!allocate) return std::nullopt;
  for (int n = 0; n <= kPortMax - kPortMin; ++n) {
    int candidate = kPortMin + (next_port_ - kPortMin + n) % (kPortMax - kPortMin + 1);
    if (ports_.count(candidate) || kept.count(candidate) ||
        std::find(taken.begin(), taken.end(), candidate) != taken.end())
      continue;
    holder[key] = candidate;
    taken.push_back(candidate);
    return std::nullopt;
  }
  return ApiError(Status::internal("failed to allocate a nodePort: range is full"));
}

std::optional<ApiError> ServiceIpAllocator::assign(json& svc, bool dry_run) {
  ServiceAllocation unused;
  return assign_update(json(), svc, dry_run, unused);
}

std::optional<ApiError> ServiceIpAllocator::assign_update(const json& old, json& next, bool dry_run,
                                                          ServiceAllocation& out) {
  std::lock_guard lock(mu_);
  load_locked();
  out = ServiceAllocation{};
  json& spec = next["spec"];
  if (!spec.is_object()) return std::nullopt;  // validation reports it
  const json old_spec = old.is_object() ? old.value("spec", json::object()) : json::object();
  const bool created = !old.is_object();
  const std::string name = name_of(next);
  ServiceAllocation a;
  // The cluster IP: taken when the type starts needing one, freed when it
  // stops; any other change of it is validation's (or the syncer's adoption).
  if (needs_cluster_ip(spec) && (created || !needs_cluster_ip(old_spec))) {
    if (auto err = take_cluster_ip_locked(spec, name, a.reserved_ips)) return err;
  } else if (!created && needs_cluster_ip(old_spec) && !needs_cluster_ip(spec)) {
    if (auto ip = parse_ipv4(text(old_spec, "clusterIP")))
      if (!parse_ipv4(text(spec, "clusterIP"))) a.freed_ips.push_back(*ip);
  }
  // Node ports: each port of a type that routes from the nodes has one; a
  // load balancer may opt out of them (allocateLoadBalancerNodePorts).
  const std::set<int> kept = held_ports(old_spec);
  const std::string type = type_of(spec);
  if (type == "NodePort" || type == "LoadBalancer") {
    auto opt = spec.find("allocateLoadBalancerNodePorts");
    const bool allocate =
        type == "NodePort" || opt == spec.end() || !opt->is_boolean() || opt->get<bool>();
    auto ports = spec.find("ports");
    if (ports != spec.end() && ports->is_array())
      for (size_t i = 0; i < ports->size(); ++i)
        if ((*ports)[i].is_object())
          if (auto err = take_node_port_locked((*ports)[i], "nodePort",
                                               "spec.ports[" + std::to_string(i) + "].nodePort",
                                               allocate, kept, name, a.reserved_ports))
            return err;
  }
  if (type == "LoadBalancer" && text(spec, "externalTrafficPolicy") == "Local") {
    if (auto err = take_node_port_locked(spec, "healthCheckNodePort", "spec.healthCheckNodePort",
                                         true, kept, name, a.reserved_ports))
      return err;
  }
  const std::set<int> now = held_ports(spec);
  for (int p : kept)
    if (!now.count(p)) a.freed_ports.push_back(p);
  if (dry_run) return std::nullopt;
  for (uint32_t ip : a.reserved_ips) {
    ips_.insert(ip);
    next_ = ip - base_;
  }
  for (int p : a.reserved_ports) {
    ports_.insert(p);
    next_port_ = p + 1;
  }
  out = std::move(a);
  return std::nullopt;
}

void ServiceIpAllocator::finish(const ServiceAllocation& a, bool committed) {
  std::lock_guard lock(mu_);
  for (uint32_t ip : committed ? a.freed_ips : a.reserved_ips) ips_.erase(ip);
  for (int p : committed ? a.freed_ports : a.reserved_ports) ports_.erase(p);
}

void ServiceIpAllocator::release(const json& svc) {
  std::lock_guard lock(mu_);
  auto spec = svc.value("spec", json::object());
  if (auto ip = parse_ipv4(spec.value("clusterIP", ""))) ips_.erase(*ip);
  for (int p : held_ports(spec)) ports_.erase(p);
}

void ServiceIpAllocator::adopt(const json& old, const json& next) {
  std::lock_guard lock(mu_);
  load_locked();
  if (auto ip = parse_ipv4(old.value("spec", json::object()).value("clusterIP", "")))
    ips_.erase(*ip);
  if (auto ip = parse_ipv4(next.value("spec", json::object()).value("clusterIP", "")))
    ips_.insert(*ip);
}

}  // namespace vkube::apiserver
