#include "objects.h"

#include <arpa/inet.h>

#include <algorithm>

#include "vkube/dns/message.h"

namespace vkube::dns::objects {

namespace {

constexpr const char* kServiceNameLabel = "kubernetes.io/service-name";

const json& empty_object() {
  static const json empty = json::object();
  return empty;
}

const json& array_at(const json& obj, const char* key) {
  static const json empty = json::array();
  if (!obj.is_object()) return empty;
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? *it : empty;
}

uint16_t port_number(const json& p) {
  auto it = p.find("port");
  if (it == p.end() || !it->is_number_integer()) return 0;
  int64_t v = it->get<int64_t>();
  return v > 0 && v <= 0xFFFF ? static_cast<uint16_t>(v) : 0;
}

Port read_port(const json& p) {
  std::string protocol = str(p, "protocol");
  return Port{lower(str(p, "name")), protocol.empty() ? "tcp" : lower(protocol), port_number(p)};
}

// EndpointConditions.ready: nil means ready (discovery/v1).
bool is_ready(const json& ep) {
  auto it = sub(ep, "conditions").find("ready");
  return it == sub(ep, "conditions").end() || !it->is_boolean() || it->get<bool>();
}

}  // namespace

std::string str(const json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& sub(const json& obj, const char* key) {
  if (!obj.is_object()) return empty_object();
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty_object();
}

bool is_external_name(const json& svc) {
  return str(sub(svc, "spec"), "type") == "ExternalName";
}

bool is_headless(const json& svc) {
  if (is_external_name(svc)) return false;
  std::string ip = str(sub(svc, "spec"), "clusterIP");
  return ip.empty() || ip == "None";
}

std::vector<std::string> cluster_ips(const json& svc) {
  std::vector<std::string> out;
  const json& spec = sub(svc, "spec");
  for (const json& ip : array_at(spec, "clusterIPs"))
    if (ip.is_string() && ip != "None" && ip != "") out.push_back(ip.get<std::string>());
  std::string ip = str(spec, "clusterIP");
  if (out.empty() && !ip.empty() && ip != "None") out.push_back(ip);
  return out;
}

std::vector<Port> service_ports(const json& svc) {
  std::vector<Port> out;
  for (const json& p : array_at(sub(svc, "spec"), "ports"))
    if (p.is_object()) out.push_back(read_port(p));
  return out;
}

std::vector<EndpointSet> endpoint_sets(const controllers::Lister& slices, const json& svc) {
  const json& meta = sub(svc, "metadata");
  std::string name = str(meta, "name");
  auto publish_not_ready = sub(svc, "spec").find("publishNotReadyAddresses");
  bool all = publish_not_ready != sub(svc, "spec").end() && publish_not_ready->is_boolean() &&
             publish_not_ready->get<bool>();
  std::vector<EndpointSet> out;
  for (const controllers::ObjectPtr& slice : slices.list(str(meta, "namespace"))) {
    if (str(sub(sub(*slice, "metadata"), "labels"), kServiceNameLabel) != name) continue;
    std::string type = str(*slice, "addressType");
    if (type != "IPv4" && type != "IPv6") continue;  // FQDN slices name no address
    EndpointSet set;
    for (const json& p : array_at(*slice, "ports"))
      if (p.is_object()) set.ports.push_back(read_port(p));
    for (const json& ep : array_at(*slice, "endpoints")) {
      if (!all && !is_ready(ep)) continue;
      std::string hostname = lower(str(ep, "hostname"));
      for (const json& a : array_at(ep, "addresses"))
        if (a.is_string()) set.endpoints.push_back({a.get<std::string>(), hostname});
    }
    out.push_back(std::move(set));
  }
  return out;
}

std::string dashed(const std::string& address) {
  std::string out = address;
  std::replace(out.begin(), out.end(), is_ipv6(address) ? ':' : '.', '-');
  return out;
}

std::string undashed(const std::string& label) {
  unsigned char buf[16];
  std::string v4 = label;
  std::replace(v4.begin(), v4.end(), '-', '.');
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_pton(AF_INET, v4.c_str(), buf) == 1 && inet_ntop(AF_INET, buf, text, sizeof text))
    return text;
  std::string v6 = label;
  std::replace(v6.begin(), v6.end(), '-', ':');
  if (inet_pton(AF_INET6, v6.c_str(), buf) == 1 && inet_ntop(AF_INET6, buf, text, sizeof text))
    return text;
  return {};
}

bool is_ipv6(const std::string& address) {
  return address.find(':') != std::string::npos;
}

bool pod_has_ip(const json& pod, const std::string& address) {
  const json& status = sub(pod, "status");
  // Compare canonical forms: the pod may spell an IPv6 address differently.
  auto same = [&](const std::string& ip) { return !ip.empty() && undashed(dashed(ip)) == address; };
  for (const json& ip : array_at(status, "podIPs"))
    if (same(str(ip, "ip"))) return true;
  return same(str(status, "podIP"));
}

}  // namespace vkube::dns::objects
