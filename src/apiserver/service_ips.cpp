#include "service_ips.h"

#include <arpa/inet.h>

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
    for (const json& p : spec.value("ports", json::array()))
      if (p.is_object() && p.contains("nodePort") && p["nodePort"].is_number_integer())
        ports_.insert(p["nodePort"].get<int>());
  }
  loaded_ = true;
}

std::optional<ApiError> ServiceIpAllocator::assign(json& svc, bool dry_run) {
  std::lock_guard lock(mu_);
  load_locked();
  json& spec = svc["spec"];
  if (!spec.is_object()) return std::nullopt;  // validation reports it
  std::string type = spec.value("type", "ClusterIP");
  const std::string name = name_of(svc);
  auto fail = [&](const std::string& field, const json& value, const std::string& why) {
    return invalid(services_resource(), name,
                   {FieldError{FieldError::Type::kInvalid, field, why, value}});
  };
  std::vector<uint32_t> new_ips;
  std::vector<int> new_ports;
  if (type != "ExternalName") {
    std::string requested = spec.value("clusterIP", "");
    if (requested == "None") {
      spec["clusterIPs"] = json::array({"None"});
    } else if (!requested.empty()) {
      auto ip = parse_ipv4(requested);
      if (!ip || *ip < base_ || *ip >= base_ + size_)
        return fail(
            "spec.clusterIPs", requested,
            "failed to allocate IP " + requested + ": provided IP is not in the valid range");
      if (ips_.count(*ip))
        return fail("spec.clusterIPs", requested,
                    "failed to allocate IP " + requested + ": provided IP is already allocated");
      new_ips.push_back(*ip);
      spec["clusterIPs"] = json::array({requested});
    } else {
      for (uint32_t n = 0; n + 2 < size_ && new_ips.empty(); ++n) {
        uint32_t candidate = base_ + 1 + (next_ + n) % (size_ - 2);
        if (!ips_.count(candidate)) new_ips.push_back(candidate);
      }
      if (new_ips.empty())
        return ApiError(Status(Code::kInternal, "failed to allocate a serviceIP: range is full"));
      spec["clusterIP"] = format_ipv4(new_ips[0]);
      spec["clusterIPs"] = json::array({spec["clusterIP"]});
    }
  }
  if (type == "NodePort" || type == "LoadBalancer") {
    json& ports = spec["ports"];
    if (ports.is_array()) {
      for (size_t i = 0; i < ports.size(); ++i) {
        json& p = ports[i];
        if (!p.is_object()) continue;
        if (p.contains("nodePort") && p["nodePort"].is_number_integer()) {
          int np = p["nodePort"].get<int>();
          std::string field = "spec.ports[" + std::to_string(i) + "].nodePort";
          if (np < kPortMin || np > kPortMax)
            return fail(
                field, np,
                "provided port is not in the valid range. The range of valid ports is 30000-32767");
          if (ports_.count(np)) return fail(field, np, "provided port is already allocated");
          new_ports.push_back(np);
          continue;
        }
        int np = 0;
        for (int n = 0; n <= kPortMax - kPortMin && np == 0; ++n) {
          int candidate = kPortMin + (next_port_ - kPortMin + n) % (kPortMax - kPortMin + 1);
          if (!ports_.count(candidate) &&
              std::find(new_ports.begin(), new_ports.end(), candidate) == new_ports.end())
            np = candidate;
        }
        if (np == 0)
          return ApiError(Status::internal("failed to allocate a nodePort: range is full"));
        p["nodePort"] = np;
        new_ports.push_back(np);
      }
    }
  }
  if (!dry_run) {
    for (uint32_t ip : new_ips) {
      ips_.insert(ip);
      next_ = ip - base_;
    }
    for (int p : new_ports) {
      ports_.insert(p);
      next_port_ = p + 1;
    }
  }
  return std::nullopt;
}

void ServiceIpAllocator::release(const json& svc) {
  std::lock_guard lock(mu_);
  auto spec = svc.value("spec", json::object());
  if (auto ip = parse_ipv4(spec.value("clusterIP", ""))) ips_.erase(*ip);
  for (const json& p : spec.value("ports", json::array()))
    if (p.is_object() && p.contains("nodePort") && p["nodePort"].is_number_integer())
      ports_.erase(p["nodePort"].get<int>());
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
