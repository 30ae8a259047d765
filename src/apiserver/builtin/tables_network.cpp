// Table printers of services, endpoints, endpoint slices, ingresses,
// ingress classes and network policies.
#include <set>

#include "kinds.h"
#include "tables_util.h"

namespace vkube::apiserver::builtin::tables {

namespace {

// net.JoinHostPort: IPv6 addresses in brackets.
std::string host_port(const std::string& host, int64_t port) {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

// The load balancer's IPs (or host names), sorted and deduplicated. The
// server always prints wide, so the list is never clipped.
std::string load_balancer_addresses(const json& lb_ingress) {
  std::set<std::string> addrs;
  for (const json& i : lb_ingress) {
    if (std::string ip = str(i, {"ip"}); !ip.empty()) {
      addrs.insert(ip);
    } else if (std::string host = str(i, {"hostname"}); !host.empty()) {
      addrs.insert(host);
    }
  }
  return join({addrs.begin(), addrs.end()}, ",");
}

std::vector<std::string> strings(const json& arr) {
  std::vector<std::string> out;
  for (const json& v : arr) out.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

// --- services ------------------------------------------------------------------

std::string external_ip(const json& svc) {
  const std::string type = str(svc, {"spec", "type"});
  const std::vector<std::string> external = strings(array(svc, {"spec", "externalIPs"}));
  if (type == "ClusterIP" || type == "NodePort") {
    return external.empty() ? "<none>" : join(external, ",");
  }
  if (type == "LoadBalancer") {
    const std::string lb =
        load_balancer_addresses(array(svc, {"status", "loadBalancer", "ingress"}));
    if (!external.empty()) return lb.empty() ? join(external, ",") : lb + "," + join(external, ",");
    return lb.empty() ? "<pending>" : lb;
  }
  if (type == "ExternalName") return str(svc, {"spec", "externalName"});
  return "<unknown>";
}

// "80/TCP,443:30443/TCP", "<none>" without ports.
std::string service_ports(const json& svc) {
  std::vector<std::string> parts;
  for (const json& p : array(svc, {"spec", "ports"})) {
    std::string part = std::to_string(integer(p, {"port"}));
    if (int64_t node_port = integer(p, {"nodePort"}); node_port > 0) {
      part += ":" + std::to_string(node_port);
    }
    parts.push_back(part + "/" + str(p, {"protocol"}));
  }
  return parts.empty() ? "<none>" : join(parts, ",");
}

json service_cells(const json& svc, int64_t now) {
  std::string cluster_ip = "<none>";
  if (const json& ips = array(svc, {"spec", "clusterIPs"}); !ips.empty() && ips[0].is_string()) {
    cluster_ip = ips[0].get<std::string>();
  } else if (std::string ip = str(svc, {"spec", "clusterIP"}); !ip.empty()) {
    cluster_ip = ip;  // clusterIPs not filled in yet: it mirrors clusterIP
  }
  return json::array({str(svc, {"metadata", "name"}), str(svc, {"spec", "type"}), cluster_ip,
                      external_ip(svc), service_ports(svc), age(svc, now),
                      format_labels(find(svc, {"spec", "selector"}))});
}

// --- endpoints -----------------------------------------------------------------

// formatEndpoints: "10.0.0.1:80,10.0.0.2:80 + 3 more...", one entry per
// address and port; bare addresses for headless subsets without ports.
json endpoints_cells(const json& ep, int64_t now) {
  const json& subsets = array(ep, {"subsets"});
  std::string text = "<none>";
  if (!subsets.empty()) {
    std::vector<std::string> all;
    for (const json& ss : subsets) {
      const json& addresses = array(ss, {"addresses"});
      const json& ports = array(ss, {"ports"});
      if (ports.empty()) {
        for (const json& a : addresses) all.push_back(str(a, {"ip"}));
        continue;
      }
      for (const json& p : ports) {
        for (const json& a : addresses)
          all.push_back(host_port(str(a, {"ip"}), integer(p, {"port"})));
      }
    }
    text = list_with_more(all, 3, ",", "");
  }
  return json::array({str(ep, {"metadata", "name"}), text, age(ep, now)});
}

json endpointslice_cells(const json& es, int64_t now) {
  std::vector<std::string> ports, addresses;
  for (const json& p : array(es, {"ports"})) {
    if (std::optional<int64_t> port = opt_integer(p, {"port"})) {
      ports.push_back(std::to_string(*port));
    } else {
      ports.push_back(str(p, {"name"}, "*"));
    }
  }
  for (const json& e : array(es, {"endpoints"})) {
    for (std::string& a : strings(array(e, {"addresses"}))) addresses.push_back(std::move(a));
  }
  return json::array({str(es, {"metadata", "name"}), str(es, {"addressType"}),
                      list_with_more(ports, 3, ",", "<unset>"),
                      list_with_more(addresses, 3, ",", "<unset>"), age(es, now)});
}

// --- ingresses and network policies ------------------------------------------

// formatHosts: up to three hosts ("*" when none); the "more" count is of
// rules, not hosts, as in kube.
std::string ingress_hosts(const json& rules) {
  constexpr std::size_t kMax = 3;
  std::vector<std::string> hosts;
  bool more = false;
  for (const json& rule : rules) {
    if (hosts.size() == kMax) more = true;
    if (std::string host = str(rule, {"host"}); !more && !host.empty()) hosts.push_back(host);
  }
  if (hosts.empty()) return "*";
  std::string out = join(hosts, ",");
  if (more) out += " + " + std::to_string(rules.size() - kMax) + " more...";
  return out;
}

json ingress_cells(const json& ing, int64_t now) {
  return json::array({str(ing, {"metadata", "name"}),
                      str(ing, {"spec", "ingressClassName"}, "<none>"),
                      ingress_hosts(array(ing, {"spec", "rules"})),
                      load_balancer_addresses(array(ing, {"status", "loadBalancer", "ingress"})),
                      array(ing, {"spec", "tls"}).empty() ? "80" : "80, 443", age(ing, now)});
}

json ingressclass_cells(const json& ic, int64_t now) {
  std::string parameters = "<none>";
  if (const json* p = find(ic, {"spec", "parameters"}); p != nullptr && p->is_object()) {
    parameters = str(*p, {"kind"});
    if (const json* group = find(*p, {"apiGroup"}); group != nullptr && group->is_string()) {
      parameters += "." + group->get<std::string>();
    }
    parameters += "/" + str(*p, {"name"});
  }
  return json::array(
      {str(ic, {"metadata", "name"}), str(ic, {"spec", "controller"}), parameters, age(ic, now)});
}

json networkpolicy_cells(const json& np, int64_t now) {
  return json::array({str(np, {"metadata", "name"}),
                      format_label_selector(find(np, {"spec", "podSelector"})), age(np, now)});
}

}  // namespace

void add_network_printers(PrinterMap& m) {
  m["/services"] = {
      {name_column(), column("Type", "string", "How the service is exposed."),
       column("Cluster-IP", "string", "The service's cluster IP address."),
       column("External-IP", "string", "External or load balancer addresses of the service."),
       column("Port(s)", "string", "Ports of the service, with node ports."), age_column(),
       column("Selector", "string", "Labels of the pods the service routes to.", 1)},
      service_cells};
  m["/endpoints"] = {
      {name_column(), column("Endpoints", "string", "Addresses and ports of the endpoints."),
       age_column()},
      endpoints_cells};
  m["discovery.k8s.io/endpointslices"] = {
      {name_column(), column("AddressType", "string", "Type of the addresses in the slice."),
       column("Ports", "string", "Ports of the slice."),
       column("Endpoints", "string", "Addresses of the slice's endpoints."), age_column()},
      endpointslice_cells};
  m["networking.k8s.io/ingresses"] = {
      {name_column(), column("Class", "string", "The ingress class handling the ingress."),
       column("Hosts", "string", "Hosts the rules match."),
       column("Address", "string", "Addresses of the load balancer."),
       column("Ports", "string", "Ports the ingress serves."), age_column()},
      ingress_cells};
  m["networking.k8s.io/ingressclasses"] = {
      {name_column(), column("Controller", "string", "The controller implementing the class."),
       column("Parameters", "string", "The resource holding the class's parameters."),
       age_column()},
      ingressclass_cells};
  m["networking.k8s.io/networkpolicies"] = {
      {name_column(), column("Pod-Selector", "string", "The pods the policy applies to."),
       age_column()},
      networkpolicy_cells};
}

}  // namespace vkube::apiserver::builtin::tables
