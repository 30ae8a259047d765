// The DNS server end to end: a real resolver client (dig) against a server
// attached to an in-process control plane, plus raw packets that no resolver
// would send.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "support/control_plane.h"
#include "support/run.h"
#include "support/temp_dir.h"
#include "vkube/dns/dns.h"
#include "vkube/dns/message.h"

namespace vkube::dns {
namespace {

using testing::ControlPlane;
using json = nlohmann::json;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  // dig's own remarks (";; Truncated, retrying in TCP mode.") are not answers.
  while (std::getline(in, line))
    if (!line.empty() && line[0] != ';') out.push_back(line);
  std::sort(out.begin(), out.end());
  return out;
}

// `text` with each run of blanks (dig aligns columns with tabs) as one space.
std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text) {
    bool blank = c == ' ' || c == '\t';
    if (blank && !out.empty() && out.back() == ' ') continue;
    out.push_back(blank ? ' ' : c);
  }
  return out;
}

// Runs dig against the server on `port`; one try, so that a failure shows at once.
std::string dig(uint16_t port, const std::string& args) {
  REQUIRE(::access("/usr/bin/dig", X_OK) == 0);  // tools/setup.sh installs dnsutils
  return testing::run("/usr/bin/dig @127.0.0.1 -p " + std::to_string(port) + " +time=3 +tries=1 " +
                      args)
      .output;
}

// A UDP port free at the moment (the kernel's pick, released).
uint16_t free_udp_port() {
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
  socklen_t len = sizeof at;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &len) == 0);
  ::close(fd);
  return ntohs(at.sin_port);
}

void set_timeout(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>(timeout.count() % 1000 * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

sockaddr_in loopback(uint16_t port) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return to;
}

// Sends one datagram; the answer, or nullopt when none came in time.
std::optional<std::string> udp_ask(uint16_t port, const std::string& packet,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(1)) {
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  set_timeout(fd, timeout);
  sockaddr_in to = loopback(port);
  ::sendto(fd, packet.data(), packet.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  std::string buf(65536, '\0');
  ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
  ::close(fd);
  if (n < 0) return std::nullopt;
  buf.resize(static_cast<size_t>(n));
  return buf;
}

bool read_all(int fd, char* out, size_t n) {
  while (n > 0) {
    ssize_t got = ::recv(fd, out, n, 0);
    if (got <= 0) return false;
    out += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// Sends the packets framed on one connection; the answers (nullopt for
// each one missing when the server closed or went quiet).
std::vector<std::optional<std::string>> tcp_ask(uint16_t port,
                                                const std::vector<std::string>& packets) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  set_timeout(fd, std::chrono::seconds(2));
  sockaddr_in to = loopback(port);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
  std::string framed;
  for (const std::string& p : packets) {
    framed.push_back(static_cast<char>(p.size() >> 8));
    framed.push_back(static_cast<char>(p.size() & 0xFF));
    framed += p;
  }
  REQUIRE(::send(fd, framed.data(), framed.size(), 0) == static_cast<ssize_t>(framed.size()));
  std::vector<std::optional<std::string>> out;
  for (size_t i = 0; i < packets.size(); ++i) {
    unsigned char len[2];
    std::string body;
    if (read_all(fd, reinterpret_cast<char*>(len), 2)) {
      body.resize(static_cast<size_t>(len[0] << 8 | len[1]));
      if (read_all(fd, body.data(), body.size())) {
        out.push_back(body);
        continue;
      }
    }
    out.push_back(std::nullopt);
  }
  ::close(fd);
  return out;
}

// A DNS server attached to a control plane running the EndpointSlice
// controller; the server stops before the informers it reads go away.
struct Cluster {
  std::vector<std::unique_ptr<Server>> servers;
  ControlPlane cp;

  explicit Cluster(std::vector<Options> options, bool start = true)
      : servers(create_all(options)),
        cp({"endpointslice"}, {}, {[this](controllers::Informers& informers) {
             for (auto& s : servers) s->attach(informers);
           }}) {
    if (start)
      for (auto& s : servers) REQUIRE(s->start().is_ok());
  }
  ~Cluster() {
    for (auto& s : servers) s->stop();
  }
  static std::vector<std::unique_ptr<Server>> create_all(std::vector<Options>& options) {
    std::vector<std::unique_ptr<Server>> out;
    for (Options& o : options) out.push_back(Server::create(o));
    return out;
  }
  uint16_t port(size_t i = 0) const { return servers[i]->port(); }

  // Creates a pod labelled app=`app` and makes it Running and Ready; its IP.
  std::string ready_pod(const std::string& name, const std::string& app,
                        const std::string& subdomain = "") {
    json spec = {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}};
    if (!subdomain.empty()) {
      spec["hostname"] = name;
      spec["subdomain"] = subdomain;
    }
    cp.create("/api/v1/namespaces/default/pods",
              {{"metadata", {{"name", name}, {"labels", {{"app", app}}}}}, {"spec", spec}});
    cp.set_pod_status("default", name, "Running", true);
    return cp.get("/api/v1/namespaces/default/pods/" + name)["status"]["podIP"];
  }
};

Options local(std::vector<std::string> upstream = {"127.0.0.1:1"}) {
  Options o;
  o.upstream = std::move(upstream);
  o.upstream_timeout = std::chrono::milliseconds(300);
  return o;
}

TEST_CASE("dig resolves services, headless endpoints, SRV and pods over UDP and TCP", "[dns]") {
  Cluster c({local()});
  uint16_t port = c.port();
  json web = c.cp.create(
      "/api/v1/namespaces/default/services",
      {{"metadata", {{"name", "web"}}},
       {"spec", {{"selector", {{"app", "web"}}}, {"ports", {{{"name", "http"}, {"port", 80}}}}}}});
  std::string cluster_ip = web["spec"]["clusterIP"];
  REQUIRE(!cluster_ip.empty());
  c.cp.create("/api/v1/namespaces/default/services",
              {{"metadata", {{"name", "db"}}},
               {"spec",
                {{"clusterIP", "None"},
                 {"selector", {{"app", "db"}}},
                 {"ports", {{{"name", "pg"}, {"port", 5432}}}}}}});
  std::string db0 = c.ready_pod("db-0", "db", "db");
  std::string db1 = c.ready_pod("db-1", "db", "db");

  // The caches follow the API server: wait until the slices are there.
  std::vector<std::string> headless = lines(db0 + "\n" + db1);
  REQUIRE(ControlPlane::eventually(
      [&] { return lines(dig(port, "+short db.default.svc.cluster.local")) == headless; }));

  CHECK(lines(dig(port, "+short web.default.svc.cluster.local")) ==
        std::vector<std::string>{cluster_ip});
  CHECK(lines(dig(port, "+tcp +short web.default.svc.cluster.local")) ==
        std::vector<std::string>{cluster_ip});
  CHECK(lines(dig(port, "+tcp +short db.default.svc.cluster.local")) == headless);
  CHECK(lines(dig(port, "+short db-1.db.default.svc.cluster.local")) ==
        std::vector<std::string>{db1});
  CHECK(lines(dig(port, "+short SRV _http._tcp.web.default.svc.cluster.local")) ==
        std::vector<std::string>{"0 100 80 web.default.svc.cluster.local."});
  CHECK(lines(dig(port, "+short SRV _pg._tcp.db.default.svc.cluster.local")) ==
        std::vector<std::string>{"0 50 5432 db-0.db.default.svc.cluster.local.",
                                 "0 50 5432 db-1.db.default.svc.cluster.local."});
  // The SRV answer carries the targets' addresses.
  std::string additional =
      squeeze(dig(port, "+noall +additional SRV _pg._tcp.db.default.svc.cluster.local"));
  CHECK_THAT(additional, Catch::Contains("db-0.db.default.svc.cluster.local. 5 IN A " + db0));
  CHECK_THAT(additional, Catch::Contains("db-1.db.default.svc.cluster.local. 5 IN A " + db1));

  std::string pod_name = db0;
  std::replace(pod_name.begin(), pod_name.end(), '.', '-');
  CHECK(lines(dig(port, "+short " + pod_name + ".default.pod.cluster.local")) ==
        std::vector<std::string>{db0});
  // Names are case-insensitive.
  CHECK(lines(dig(port, "+short WEB.Default.SVC.cluster.LOCAL")) ==
        std::vector<std::string>{cluster_ip});
}

TEST_CASE("dig sees NXDOMAIN and NODATA with the SOA, and our EDNS answers", "[dns]") {
  Cluster c({local()});
  uint16_t port = c.port();
  c.cp.create("/api/v1/namespaces/default/services",
              {{"metadata", {{"name", "web"}}},
               {"spec", {{"selector", {{"app", "web"}}}, {"ports", {{{"port", 80}}}}}}});
  REQUIRE(ControlPlane::eventually(
      [&] { return !dig(port, "+short web.default.svc.cluster.local").empty(); }));

  std::string missing = squeeze(dig(port, "nope.default.svc.cluster.local"));
  CHECK_THAT(missing, Catch::Contains("status: NXDOMAIN"));
  CHECK_THAT(
      missing,
      Catch::Contains("cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local."));
  CHECK_THAT(missing, Catch::Contains("flags: qr aa rd ra"));
  std::string nodata = dig(port, "TXT web.default.svc.cluster.local");
  CHECK_THAT(nodata, Catch::Contains("status: NOERROR"));
  CHECK_THAT(nodata, Catch::Contains("ANSWER: 0, AUTHORITY: 1"));
  // dig sends EDNS0: the answer carries our OPT.
  CHECK_THAT(nodata, Catch::Contains("EDNS: version: 0, flags:; udp: 1232"));
  // dig reports the BADVERS it got before it falls back to version 0.
  CHECK_THAT(dig(port, "+edns=1 web.default.svc.cluster.local"),
             Catch::Contains(";; BADVERS, retrying with EDNS version 0."));
}

TEST_CASE("a UDP answer too big for the client is truncated and dig retries over TCP", "[dns]") {
  Cluster c({local()});
  uint16_t port = c.port();
  json ports = json::array();
  for (int i = 0; i < 40; ++i)
    ports.push_back({{"name", "port-" + std::to_string(i)}, {"port", 1000 + i}});
  c.cp.create("/api/v1/namespaces/default/services",
              {{"metadata", {{"name", "many"}}},
               {"spec", {{"selector", {{"app", "many"}}}, {"ports", ports}}}});
  REQUIRE(ControlPlane::eventually(
      [&] { return !dig(port, "+short many.default.svc.cluster.local").empty(); }));

  // Without EDNS the limit is 512 bytes: 40 SRV records do not fit.
  std::string truncated = dig(port, "+noedns +ignore SRV many.default.svc.cluster.local");
  CHECK_THAT(truncated, Catch::Contains("flags: qr aa tc rd ra"));
  CHECK_THAT(truncated, Catch::Contains("ANSWER: 0,"));
  // dig retries a truncated answer over TCP and gets them all.
  CHECK(lines(dig(port, "+noedns +short SRV many.default.svc.cluster.local")).size() == 40);
}

TEST_CASE("names outside the zone are forwarded upstream, SERVFAIL when none answers", "[dns]") {
  // Server 1 serves the zone "example.test" from the same caches and is an
  // upstream of server 0, listed in its resolv.conf after server 0 itself
  // (to be skipped, not looped to) and a dead port (refused at once).
  testing::TempDir dir;
  uint16_t own = free_udp_port();
  std::vector<Options> options(2);
  options[0].listen = "127.0.0.1:" + std::to_string(own);
  options[0].resolv_conf = dir.sub("resolv.conf");
  options[0].upstream_timeout = std::chrono::milliseconds(500);
  options[1] = local();
  options[1].cluster_domain = "example.test";
  Cluster c(std::move(options), /*start=*/false);
  REQUIRE(c.servers[1]->start().is_ok());
  std::string upstream = "127.0.0.1:" + std::to_string(c.port(1));
  std::ofstream(dir.sub("resolv.conf"))
      << "search default.svc.cluster.local\nnameserver 127.0.0.1:" << own
      << "\nnameserver 127.0.0.1:1\nnameserver " << upstream << "\noptions ndots:5\n";
  REQUIRE(c.servers[0]->start().is_ok());
  REQUIRE(c.port(0) == own);
  CHECK(c.servers[0]->upstreams() == std::vector<std::string>{"127.0.0.1:1", upstream});

  json web = c.cp.create("/api/v1/namespaces/default/services",
                         {{"metadata", {{"name", "web"}}},
                          {"spec", {{"selector", {{"app", "web"}}}, {"ports", {{{"port", 80}}}}}}});
  std::string cluster_ip = web["spec"]["clusterIP"];
  c.cp.create(
      "/api/v1/namespaces/default/services",
      {{"metadata", {{"name", "ext"}}},
       {"spec", {{"type", "ExternalName"}, {"externalName", "web.default.svc.example.test"}}}});
  REQUIRE(ControlPlane::eventually([&] {
    return lines(dig(c.port(1), "+short web.default.svc.example.test")) ==
           std::vector<std::string>{cluster_ip};
  }));

  // Relayed from the upstream, over UDP and TCP.
  CHECK(lines(dig(own, "+short web.default.svc.example.test")) ==
        std::vector<std::string>{cluster_ip});
  CHECK(lines(dig(own, "+tcp +short web.default.svc.example.test")) ==
        std::vector<std::string>{cluster_ip});
  CHECK_THAT(dig(own, "nope.default.svc.example.test"), Catch::Contains("status: NXDOMAIN"));
  // An ExternalName leaving the zone: the CNAME, and its target's address
  // from upstream.
  CHECK(lines(dig(own, "+short ext.default.svc.cluster.local")) ==
        std::vector<std::string>{cluster_ip, "web.default.svc.example.test."});
  // No upstream answers: server 1's only upstream refuses.
  CHECK_THAT(dig(c.port(1), "www.example.invalid"), Catch::Contains("status: SERVFAIL"));
}

TEST_CASE("an upstream that never answers gives SERVFAIL after its timeout", "[dns]") {
  int silent = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(silent, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
  socklen_t len = sizeof at;
  REQUIRE(::getsockname(silent, reinterpret_cast<sockaddr*>(&at), &len) == 0);
  Options o = local({"127.0.0.1:" + std::to_string(ntohs(at.sin_port))});
  o.upstream_timeout = std::chrono::milliseconds(200);
  Cluster c({o});
  auto start = std::chrono::steady_clock::now();
  CHECK_THAT(dig(c.port(), "www.example.invalid"), Catch::Contains("status: SERVFAIL"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  ::close(silent);
}

TEST_CASE("malformed packets get FORMERR or nothing, and the server keeps serving", "[dns]") {
  Cluster c({local()});
  uint16_t port = c.port();
  Message q;
  q.header.id = 0xBEEF;
  q.header.rd = true;
  q.questions.push_back({"nope.default.svc.cluster.local", type::kA, kClassIn});
  std::string good = serialize(q).value();

  auto formerr = [](const std::optional<std::string>& answer, uint16_t id) {
    REQUIRE(answer.has_value());
    Header h;
    REQUIRE(parse_header(*answer, &h));
    CHECK(h.qr);
    CHECK(h.id == id);
    CHECK(h.rcode == Rcode::kFormErr);
  };
  // Shorter than a header, or a response: dropped.
  CHECK_FALSE(udp_ask(port, "\x01\x02\x03").has_value());
  std::string response = good;
  response[2] = static_cast<char>(response[2] | 0x80);
  CHECK_FALSE(udp_ask(port, response).has_value());
  // A compression loop, a truncated question, two questions: FORMERR.
  std::string loop = good.substr(0, 12) + std::string("\xC0\x0C\x00\x01\x00\x01", 6);
  formerr(udp_ask(port, loop), 0xBEEF);
  formerr(udp_ask(port, good.substr(0, good.size() - 3)), 0xBEEF);
  Message two = q;
  two.questions.push_back(q.questions[0]);
  formerr(udp_ask(port, serialize(two).value()), 0xBEEF);
  // Over TCP, framed, and the connection goes on to the next query.
  std::vector<std::optional<std::string>> both = tcp_ask(port, {loop, good});
  REQUIRE(both.size() == 2);
  formerr(both[0], 0xBEEF);
  REQUIRE(both[1].has_value());
  auto m = parse(*both[1]);
  REQUIRE(m.is_ok());
  CHECK(m->header.rcode == Rcode::kNxDomain);
  // Random garbage after a valid header, many times: still answering.
  uint32_t seed = 7;
  for (int i = 0; i < 100; ++i) {
    std::string p = good;
    for (int k = 0; k < 4; ++k) {
      seed = seed * 1103515245 + 12345;
      p[12 + (seed >> 8) % (p.size() - 12)] = static_cast<char>(seed >> 24);
    }
    (void)udp_ask(port, p, std::chrono::milliseconds(20));
  }
  CHECK_THAT(dig(port, "nope.default.svc.cluster.local"), Catch::Contains("status: NXDOMAIN"));
}

}  // namespace
}  // namespace vkube::dns
