// The records of the names below svc.<zone> and pod.<zone>.
#include <algorithm>

#include "lookup_node.h"
#include "objects.h"

namespace vkube::dns {

using controllers::json;
using controllers::ObjectPtr;
using objects::EndpointSet;
using objects::Port;

namespace {

Record address_record(const std::string& owner, const std::string& address, uint32_t ttl) {
  Record r;
  r.name = owner;
  r.type = objects::is_ipv6(address) ? type::kAaaa : type::kA;
  r.ttl = ttl;
  r.text = address;
  return r;
}

Record srv_record(const std::string& owner, uint16_t port, std::string target, uint32_t ttl) {
  Record r;
  r.name = owner;
  r.type = type::kSrv;
  r.ttl = ttl;
  r.srv.port = port;
  r.srv.target = std::move(target);
  return r;
}

// Equal shares of 100 between the targets, as CoreDNS weighs them.
void set_weights(std::vector<Record>* records) {
  size_t srvs = std::count_if(records->begin(), records->end(),
                              [](const Record& r) { return r.type == type::kSrv; });
  for (Record& r : *records)
    if (r.type == type::kSrv) r.srv.weight = static_cast<uint16_t>(std::max<size_t>(1, 100 / srvs));
}

// The endpoint's name below its service: its hostname, else its address.
std::string endpoint_label(const objects::Endpoint& ep) {
  return ep.hostname.empty() ? lower(objects::dashed(ep.address)) : ep.hostname;
}

bool port_matches(const Port& p, const std::string& name, const std::string& protocol) {
  return !p.name.empty() && p.name == name && p.protocol == protocol;
}

void add_address(const std::string& owner, const std::string& address, uint32_t ttl,
                 std::vector<std::string>* seen, std::vector<Record>* out) {
  if (std::find(seen->begin(), seen->end(), address) != seen->end()) return;
  seen->push_back(address);
  out->push_back(address_record(owner, address, ttl));
}

}  // namespace

Lookup::Node Lookup::service_node(const std::string& owner,
                                  const std::vector<std::string>& labels) const {
  Node n;
  if (labels.size() == 1) {  // svc.<zone>
    n.exists = true;
    return n;
  }
  if (labels.size() == 2) {  // <ns>.svc.<zone>
    n.exists = !services_.list(labels[1]).empty();
    return n;
  }
  ObjectPtr svc = services_.get(labels[1], labels[2]);
  if (svc == nullptr || labels.size() > 5) return n;
  const std::string fqdn = labels[2] + "." + labels[1] + ".svc." + domain_;
  const json& spec = objects::sub(*svc, "spec");
  bool headless = objects::is_headless(*svc);
  bool external = objects::is_external_name(*svc);
  std::vector<Port> ports = objects::service_ports(*svc);
  std::vector<EndpointSet> sets;
  if (headless) sets = objects::endpoint_sets(slices_, *svc);
  std::vector<std::string> seen;

  if (labels.size() == 3) {  // <svc>.<ns>.svc.<zone>
    n.exists = true;
    if (external) {
      Record r;
      r.name = owner;
      r.type = type::kCname;
      r.ttl = ttl_;
      r.text = objects::str(spec, "externalName");
      if (!r.text.empty()) n.records.push_back(std::move(r));
      return n;
    }
    if (!headless) {
      for (const std::string& ip : objects::cluster_ips(*svc))
        add_address(owner, ip, ttl_, &seen, &n.records);
      for (const Port& p : ports)
        if (p.port != 0) n.records.push_back(srv_record(owner, p.port, fqdn, ttl_));
    } else {
      for (const EndpointSet& set : sets)
        for (const objects::Endpoint& ep : set.endpoints) {
          add_address(owner, ep.address, ttl_, &seen, &n.records);
          for (const Port& p : set.ports)
            if (p.port != 0)
              n.records.push_back(srv_record(owner, p.port, endpoint_label(ep) + "." + fqdn, ttl_));
        }
    }
    set_weights(&n.records);
    return n;
  }

  const std::string& label = labels[3];
  if (labels.size() == 4 && !label.starts_with("_")) {  // <host>.<svc>.<ns>.svc.<zone>
    for (const EndpointSet& set : sets)
      for (const objects::Endpoint& ep : set.endpoints)
        if (endpoint_label(ep) == label) add_address(owner, ep.address, ttl_, &seen, &n.records);
    n.exists = !n.records.empty();
    return n;
  }

  // _<port>._<proto>.<svc>.<ns>.svc.<zone>, and _<proto>.<svc>... above it.
  if (!label.starts_with("_")) return n;
  std::string protocol = label.substr(1);
  if (labels.size() == 4) {
    n.exists = std::any_of(ports.begin(), ports.end(), [&](const Port& p) {
      return !p.name.empty() && p.protocol == protocol;
    });
    return n;
  }
  if (!labels[4].starts_with("_")) return n;
  std::string name = labels[4].substr(1);
  for (const Port& p : ports) {
    if (!port_matches(p, name, protocol)) continue;
    n.exists = true;
    if (external) {
      std::string target = objects::str(spec, "externalName");
      if (!target.empty()) n.records.push_back(srv_record(owner, p.port, target, ttl_));
    } else if (!headless) {
      n.records.push_back(srv_record(owner, p.port, fqdn, ttl_));
    }
  }
  // A headless service's target port is the endpoints' (the slice's).
  for (const EndpointSet& set : sets)
    for (const Port& p : set.ports) {
      if (!port_matches(p, name, protocol) || p.port == 0) continue;
      for (const objects::Endpoint& ep : set.endpoints)
        n.records.push_back(srv_record(owner, p.port, endpoint_label(ep) + "." + fqdn, ttl_));
    }
  set_weights(&n.records);
  return n;
}

Lookup::Node Lookup::pod_node(const std::string& owner,
                              const std::vector<std::string>& labels) const {
  Node n;
  if (labels.size() == 1) {  // pod.<zone>
    n.exists = true;
    return n;
  }
  if (labels.size() == 2) {  // <ns>.pod.<zone>
    n.exists = !pods_.list(labels[1]).empty();
    return n;
  }
  if (labels.size() != 3) return n;
  // Only the addresses of pods that exist in the namespace ("pods verified"):
  // any dashed address would let anyone mint names in the zone.
  std::string address = objects::undashed(labels[2]);
  if (address.empty()) return n;
  for (const ObjectPtr& pod : pods_.list(labels[1])) {
    if (!objects::pod_has_ip(*pod, address)) continue;
    n.exists = true;
    n.records.push_back(address_record(owner, address, ttl_));
    break;
  }
  return n;
}

}  // namespace vkube::dns
