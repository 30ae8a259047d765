// The cluster zone's answers, read from the informers' caches on each query
// (the Kubernetes DNS specification, as CoreDNS's kubernetes plugin serves it):
//
//   <svc>.<ns>.svc.<zone>                A/AAAA: the clusterIPs; headless: the
//                                        ready endpoints; ExternalName: CNAME;
//                                        SRV: one per service port
//   <host>.<svc>.<ns>.svc.<zone>         headless endpoints by hostname (or
//                                        their dashed address, 10-0-0-1)
//   _<port>._<proto>.<svc>.<ns>.svc.<zone>  SRV for a named port, glue A/AAAA
//   <a-b-c-d>.<ns>.pod.<zone>            A (AAAA for fd00--1) of a pod that
//                                        has this IP
//
// Anything else in the zone is NXDOMAIN, an existing name without records of
// the asked type NOERROR/NODATA, both with the zone's SOA in authority. No I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/controllers/informers.h"
#include "vkube/dns/message.h"

namespace vkube::dns {

class Lookup {
 public:
  // The listers (services, discovery.k8s.io endpointslices, pods) must
  // outlive the Lookup. `cluster_domain` such as "cluster.local".
  Lookup(const controllers::Lister& services, const controllers::Lister& endpoint_slices,
         const controllers::Lister& pods, std::string cluster_domain, uint32_t ttl);

  // Whether `name` is the cluster domain or below it: ours to answer.
  bool in_zone(std::string_view name) const;

  // Answers `q` (a name in the zone) into `reply`: sets AA and the rcode and
  // appends to its answer, authority and additional sections. A CNAME to a
  // name in the zone is followed here; one leaving the zone is the last
  // answer (see external_target). Thread-safe.
  void answer(const Question& q, Message* reply) const;

  // The zone's SOA record (the authority of negative answers).
  Record soa() const;
  const std::string& domain() const { return domain_; }

 private:
  struct Node;  // every record at one name (lookup.cpp)
  Node node(const std::string& owner, const std::vector<std::string>& labels) const;
  Node service_node(const std::string& owner, const std::vector<std::string>& labels) const;
  Node pod_node(const std::string& owner, const std::vector<std::string>& labels) const;
  void add_glue(const std::vector<Record>& answers, Message* reply) const;
  // Labels of `name` below the zone, lower-cased, last first ("svc", ns,
  // ...); false when `name` is not in the zone or not a valid name.
  bool relative_labels(std::string_view name, std::vector<std::string>* out) const;

  const controllers::Lister& services_;
  const controllers::Lister& slices_;
  const controllers::Lister& pods_;
  std::string domain_;  // canonical, no trailing dot
  uint32_t ttl_;
  uint32_t serial_;
};

// When `reply` (to `q`) ends in a CNAME whose target is outside the zone and
// `q` asks for another type: that target, which the server resolves
// upstream. Otherwise "".
std::string external_target(const Lookup& lookup, const Question& q, const Message& reply);

}  // namespace vkube::dns
