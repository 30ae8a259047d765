// The tenant's DNS server: vkube answers its pods' DNS itself instead of a
// CoreDNS pod per tenant. Over UDP and TCP on one port it serves the cluster
// zone from the informers' caches (see lookup.h for the names: services,
// headless endpoints, SRV, pods; NXDOMAIN/NODATA with the zone's SOA) and
// forwards every other name to upstream resolvers, relaying their answers.
//
//   auto dns = dns::Server::create({.listen = "0.0.0.0:53"});
//   dns->attach(informers);            // before the informers start
//   VKUBE_RETURN_IF_ERROR(dns->start());
//
// Nothing here includes Asio: the transport stays inside src/dns.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"
#include "vkube/controllers/informers.h"

namespace vkube::dns {

struct Options {
  // HOST:PORT ("[::1]:53" for IPv6), for UDP and TCP alike. Port 0 picks a
  // port free for both protocols (see Server::port).
  std::string listen = "127.0.0.1:0";
  std::string cluster_domain = "cluster.local";
  // Resolvers for names outside the cluster domain, "ip" or "ip:port"
  // ("[v6]:port"). Empty: the nameservers of `resolv_conf`. Any that is this
  // server's own address is skipped, so that queries never loop back to us.
  std::vector<std::string> upstream;
  std::string resolv_conf = "/etc/resolv.conf";
  // How long one upstream has to answer before the next is tried; when none
  // answers, the client gets SERVFAIL.
  std::chrono::milliseconds upstream_timeout{2000};
  uint32_t ttl = 5;  // of every record in the zone, and the SOA's negative TTL
  // Concurrent TCP connections (more are closed at once) and how long one
  // may stay idle between queries (RFC 7766).
  size_t max_tcp_connections = 256;
  std::chrono::milliseconds tcp_idle_timeout{10000};
};

class Server {
 public:
  // A server that serves nothing yet: attach(), then start().
  static std::unique_ptr<Server> create(Options options);
  // Stops it (see stop()).
  virtual ~Server() = default;

  // Registers the caches it reads (services, endpointslices, pods) on
  // `informers`, which must not have started and must outlive the server.
  virtual void attach(controllers::Informers& informers) = 0;
  // Binds UDP and TCP and serves on its own thread. kInvalid for a bad
  // listen address or cluster domain, or when attach() was not called;
  // kUnavailable when the port is taken. Call at most once.
  virtual Status start() = 0;
  // Closes the sockets and joins the thread; queries in flight go
  // unanswered. Idempotent; not from the server's own thread.
  virtual void stop() = 0;
  // The bound port once started (0 before).
  virtual uint16_t port() const = 0;
  // The upstream resolvers in use once started, as "ip:port".
  virtual std::vector<std::string> upstreams() const = 0;
};

// The "nameserver" addresses of resolv.conf text, in order.
std::vector<std::string> resolv_conf_nameservers(std::string_view text);

}  // namespace vkube::dns
