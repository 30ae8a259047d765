// Lookup: from a question to the records at its name. Each name is turned
// into a Node (does it exist, which records does it hold, of every type);
// answer() then picks the asked type, follows CNAMEs and adds the SOA or glue.
#include "vkube/dns/lookup.h"

#include <algorithm>
#include <chrono>

#include "lookup_node.h"
#include "names.h"
#include "objects.h"

namespace vkube::dns {

using controllers::json;
using controllers::ObjectPtr;

namespace {

// CNAME chains inside the zone are short (ExternalName to a service); a
// longer one is a loop.
constexpr int kMaxCnameChain = 8;

bool matches(uint16_t qtype, uint16_t rtype) {
  return qtype == rtype || qtype == type::kAny;
}

}  // namespace

Lookup::Lookup(const controllers::Lister& services, const controllers::Lister& endpoint_slices,
               const controllers::Lister& pods, std::string cluster_domain, uint32_t ttl)
    : services_(services),
      slices_(endpoint_slices),
      pods_(pods),
      domain_(canonical(cluster_domain)),
      ttl_(ttl),
      // Caches see a new serial after a restart; nothing transfers the zone.
      serial_(static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count())) {}

bool Lookup::relative_labels(std::string_view name, std::vector<std::string>* out) const {
  std::string n = canonical(name);
  std::string rest;
  if (n == domain_) {
    rest.clear();
  } else if (n.size() > domain_.size() + 1 && n.ends_with(domain_) &&
             n[n.size() - domain_.size() - 1] == '.' &&
             // "a\.cluster.local" is one label "a.cluster" then "local"
             (n.size() < domain_.size() + 2 || n[n.size() - domain_.size() - 2] != '\\')) {
    rest = n.substr(0, n.size() - domain_.size() - 1);
  } else {
    return false;
  }
  auto labels = split_name(rest);
  if (!labels.is_ok()) return false;
  out->assign(labels->rbegin(), labels->rend());
  return true;
}

bool Lookup::in_zone(std::string_view name) const {
  std::vector<std::string> labels;
  return relative_labels(name, &labels);
}

Record Lookup::soa() const {
  Record r;
  r.name = domain_;
  r.type = type::kSoa;
  r.ttl = ttl_;
  r.soa.mname = "ns.dns." + domain_;
  r.soa.rname = "hostmaster." + domain_;
  r.soa.serial = serial_;
  r.soa.refresh = 7200;
  r.soa.retry = 1800;
  r.soa.expire = 86400;
  r.soa.minimum = ttl_;
  return r;
}

Lookup::Node Lookup::node(const std::string& owner, const std::vector<std::string>& labels) const {
  Node n;
  if (labels.empty()) {  // the apex
    n.exists = true;
    Record r = soa();
    r.name = owner;
    n.records.push_back(std::move(r));
    return n;
  }
  if (labels[0] == "svc") return service_node(owner, labels);
  if (labels[0] == "pod") return pod_node(owner, labels);
  return n;
}

void Lookup::answer(const Question& q, Message* reply) const {
  reply->header.aa = true;
  std::string name = q.name;
  for (int depth = 0;; ++depth) {
    std::vector<std::string> labels;
    // A CNAME out of the zone: the server resolves its target upstream.
    if (!relative_labels(name, &labels)) return;
    Node n = node(name, labels);
    if (!n.exists) {
      // RFC 6604: the rcode speaks of the last name of a chain.
      reply->header.rcode = Rcode::kNxDomain;
      reply->authority.push_back(soa());
      return;
    }
    const Record* cname = nullptr;
    for (const Record& r : n.records)
      if (r.type == type::kCname) cname = &r;
    if (cname != nullptr && q.type != type::kCname && q.type != type::kAny) {
      reply->answers.push_back(*cname);
      if (depth + 1 >= kMaxCnameChain) {
        reply->header.rcode = Rcode::kServFail;
        return;
      }
      name = cname->text;
      continue;
    }
    size_t before = reply->answers.size();
    for (Record& r : n.records)
      if (matches(q.type, r.type)) reply->answers.push_back(std::move(r));
    if (reply->answers.size() == before) {
      reply->authority.push_back(soa());  // NODATA
      return;
    }
    add_glue(std::vector<Record>(reply->answers.begin() + static_cast<ptrdiff_t>(before),
                                 reply->answers.end()),
             reply);
    return;
  }
}

// SRV targets in the zone come with their addresses, so that clients need
// no second query.
void Lookup::add_glue(const std::vector<Record>& answers, Message* reply) const {
  std::vector<std::string> done;
  for (const Record& srv : answers) {
    if (srv.type != type::kSrv) continue;
    std::string key = lower(srv.srv.target);
    if (std::find(done.begin(), done.end(), key) != done.end()) continue;
    done.push_back(key);
    std::vector<std::string> labels;
    if (!relative_labels(srv.srv.target, &labels)) continue;
    for (Record& r : node(srv.srv.target, labels).records)
      if (r.type == type::kA || r.type == type::kAaaa) reply->additional.push_back(std::move(r));
  }
}

std::string external_target(const Lookup& lookup, const Question& q, const Message& reply) {
  if (q.type == type::kCname || q.type == type::kAny || reply.answers.empty()) return {};
  const Record& last = reply.answers.back();
  if (last.type != type::kCname || lookup.in_zone(last.text)) return {};
  return last.text;
}

}  // namespace vkube::dns
