// What DNS reads from Services, EndpointSlices and Pods, defensively: the
// caches hold what the API server stored, but a missing or mistyped field
// must not throw on the query path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkube/controllers/informers.h"

namespace vkube::dns::objects {

using controllers::json;

// The string at obj[key], or "" when absent or not a string.
std::string str(const json& obj, const char* key);
// obj[key] when it is an object, else an empty object.
const json& sub(const json& obj, const char* key);

bool is_external_name(const json& svc);
// A selector-less "None" or an unset clusterIP (and not ExternalName).
bool is_headless(const json& svc);
// spec.clusterIPs, else spec.clusterIP; without "None" and "".
std::vector<std::string> cluster_ips(const json& svc);

struct Port {
  std::string name;      // lower-cased
  std::string protocol;  // lower-cased: "tcp", "udp", "sctp"
  uint16_t port = 0;
};
// spec.ports (protocol defaults to TCP).
std::vector<Port> service_ports(const json& svc);

struct Endpoint {
  std::string address;
  std::string hostname;  // lower-cased; "" when the endpoint has none
};
// One EndpointSlice's ready endpoints (all of them when the service
// publishes not-ready addresses) and its ports.
struct EndpointSet {
  std::vector<Port> ports;
  std::vector<Endpoint> endpoints;
};
// The IPv4 and IPv6 slices labelled kubernetes.io/service-name=<svc>.
std::vector<EndpointSet> endpoint_sets(const controllers::Lister& slices, const json& svc);

// The DNS label of an address: 10.0.0.1 -> 10-0-0-1, fd00::1 -> fd00--1.
std::string dashed(const std::string& address);
// The address of such a label (canonical text), or "" when it is none.
std::string undashed(const std::string& label);
bool is_ipv6(const std::string& address);
// The pod's status.podIPs (or status.podIP) hold `address`.
bool pod_has_ip(const json& pod, const std::string& address);

}  // namespace vkube::dns::objects
