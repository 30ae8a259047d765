// The cluster zone's answers over in-memory listers: the names and record
// types of the Kubernetes DNS specification, NXDOMAIN versus NODATA.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "fake_lister.h"
#include "vkube/dns/lookup.h"

namespace vkube::dns {
namespace {

using controllers::json;
using controllers::ObjectPtr;

using testing::FakeLister;

json service(const std::string& name, json spec) {
  return {{"metadata", {{"name", name}, {"namespace", "default"}}}, {"spec", std::move(spec)}};
}

json slice(const std::string& name, const std::string& svc, const std::string& type, json ports,
           json endpoints) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"labels", {{"kubernetes.io/service-name", svc}}}}},
          {"addressType", type},
          {"ports", std::move(ports)},
          {"endpoints", std::move(endpoints)}};
}

json endpoint(const std::string& ip, const std::string& hostname = "", bool ready = true) {
  json ep = {{"addresses", {ip}}, {"conditions", {{"ready", ready}}}};
  if (!hostname.empty()) ep["hostname"] = hostname;
  return ep;
}

struct Zone {
  FakeLister services, slices, pods;
  Lookup lookup{services, slices, pods, "cluster.local", 5};

  Zone() {
    services.add(service("web", {{"clusterIP", "10.96.0.10"},
                                 {"clusterIPs", {"10.96.0.10", "fd00::10"}},
                                 {"ports",
                                  {{{"name", "http"}, {"port", 80}, {"protocol", "TCP"}},
                                   {{"name", "dns"}, {"port", 53}, {"protocol", "UDP"}}}}}));
    services.add(
        service("db", {{"clusterIP", "None"}, {"ports", {{{"name", "pg"}, {"port", 5432}}}}}));
    services.add(service("ext", {{"type", "ExternalName"}, {"externalName", "example.com"}}));
    services.add(service(
        "alias", {{"type", "ExternalName"}, {"externalName", "web.default.svc.cluster.local"}}));
    slices.add(slice("db-abc", "db", "IPv4",
                     {{{"name", "pg"}, {"port", 5432}, {"protocol", "TCP"}}},
                     {endpoint("10.244.0.5", "db-0"), endpoint("10.244.0.6", "db-1"),
                      endpoint("10.244.0.7", "", false), endpoint("10.244.0.8")}));
    slices.add(slice("other", "web2", "IPv4", json::array(), {endpoint("10.244.9.9")}));
    pods.add(
        {{"metadata", {{"name", "p"}, {"namespace", "default"}}},
         {"status",
          {{"podIP", "10.244.1.2"}, {"podIPs", {{{"ip", "10.244.1.2"}}, {{"ip", "fd00::1:2"}}}}}}});
  }

  Message ask(const std::string& name, uint16_t qtype) const {
    Message reply;
    lookup.answer({name, qtype, kClassIn}, &reply);
    return reply;
  }
};

std::vector<std::string> texts(const std::vector<Record>& records, uint16_t type) {
  std::vector<std::string> out;
  for (const Record& r : records)
    if (r.type == type)
      out.push_back(type == type::kSrv ? r.srv.target + ":" + std::to_string(r.srv.port) : r.text);
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("a service's name gives its cluster IPs, per family", "[dns]") {
  Zone z;
  Message a = z.ask("web.default.svc.cluster.local", type::kA);
  CHECK(a.header.rcode == Rcode::kNoError);
  CHECK(a.header.aa);
  CHECK(texts(a.answers, type::kA) == std::vector<std::string>{"10.96.0.10"});
  CHECK(a.answers.size() == 1);
  CHECK(a.answers[0].ttl == 5);
  Message aaaa = z.ask("WEB.Default.svc.Cluster.Local.", type::kAaaa);
  CHECK(texts(aaaa.answers, type::kAaaa) == std::vector<std::string>{"fd00::10"});
  // The owner name is the name as asked.
  CHECK(aaaa.answers[0].name == "WEB.Default.svc.Cluster.Local.");
}

TEST_CASE("a headless service's name gives its ready endpoints", "[dns]") {
  Zone z;
  Message a = z.ask("db.default.svc.cluster.local", type::kA);
  CHECK(texts(a.answers, type::kA) ==
        std::vector<std::string>{"10.244.0.5", "10.244.0.6", "10.244.0.8"});
  CHECK(texts(z.ask("db-1.db.default.svc.cluster.local", type::kA).answers, type::kA) ==
        std::vector<std::string>{"10.244.0.6"});
  // An endpoint without a hostname is named by its address.
  CHECK(texts(z.ask("10-244-0-8.db.default.svc.cluster.local", type::kA).answers, type::kA) ==
        std::vector<std::string>{"10.244.0.8"});
  CHECK(z.ask("db-9.db.default.svc.cluster.local", type::kA).header.rcode == Rcode::kNxDomain);
  // Not-ready endpoints are not published.
  CHECK(z.ask("10-244-0-7.db.default.svc.cluster.local", type::kA).header.rcode ==
        Rcode::kNxDomain);
}

TEST_CASE("SRV records for named ports, with the targets' addresses as glue", "[dns]") {
  Zone z;
  Message web = z.ask("_http._tcp.web.default.svc.cluster.local", type::kSrv);
  CHECK(texts(web.answers, type::kSrv) ==
        std::vector<std::string>{"web.default.svc.cluster.local:80"});
  CHECK(texts(web.additional, type::kA) == std::vector<std::string>{"10.96.0.10"});
  CHECK(texts(web.additional, type::kAaaa) == std::vector<std::string>{"fd00::10"});
  // The protocol must match too.
  CHECK(z.ask("_http._udp.web.default.svc.cluster.local", type::kSrv).header.rcode ==
        Rcode::kNxDomain);
  CHECK(texts(z.ask("_dns._udp.web.default.svc.cluster.local", type::kSrv).answers, type::kSrv) ==
        std::vector<std::string>{"web.default.svc.cluster.local:53"});

  Message db = z.ask("_pg._tcp.db.default.svc.cluster.local", type::kSrv);
  CHECK(texts(db.answers, type::kSrv) ==
        std::vector<std::string>{"10-244-0-8.db.default.svc.cluster.local:5432",
                                 "db-0.db.default.svc.cluster.local:5432",
                                 "db-1.db.default.svc.cluster.local:5432"});
  CHECK(texts(db.additional, type::kA) ==
        std::vector<std::string>{"10.244.0.5", "10.244.0.6", "10.244.0.8"});
  // An existing SRV name asked for A: NODATA.
  Message nodata = z.ask("_pg._tcp.db.default.svc.cluster.local", type::kA);
  CHECK(nodata.header.rcode == Rcode::kNoError);
  CHECK(nodata.answers.empty());
  CHECK(nodata.authority.size() == 1);
  CHECK(z.ask("_nope._tcp.db.default.svc.cluster.local", type::kSrv).header.rcode ==
        Rcode::kNxDomain);
}

TEST_CASE("ExternalName services are CNAMEs, followed inside the zone", "[dns]") {
  Zone z;
  Message ext = z.ask("ext.default.svc.cluster.local", type::kA);
  REQUIRE(ext.answers.size() == 1);
  CHECK(ext.answers[0].type == type::kCname);
  CHECK(ext.answers[0].text == "example.com");
  CHECK(external_target(z.lookup, {"ext.default.svc.cluster.local", type::kA, kClassIn}, ext) ==
        "example.com");
  // Asked for the CNAME itself: nothing to resolve upstream.
  Message cname = z.ask("ext.default.svc.cluster.local", type::kCname);
  CHECK(external_target(z.lookup, {"ext.default.svc.cluster.local", type::kCname, kClassIn},
                        cname) == "");

  Message alias = z.ask("alias.default.svc.cluster.local", type::kA);
  REQUIRE(alias.answers.size() == 2);
  CHECK(alias.answers[0].type == type::kCname);
  CHECK(alias.answers[1].text == "10.96.0.10");
  CHECK(alias.answers[1].name == "web.default.svc.cluster.local");
}

TEST_CASE("pod names resolve only to the IPs of existing pods", "[dns]") {
  Zone z;
  CHECK(texts(z.ask("10-244-1-2.default.pod.cluster.local", type::kA).answers, type::kA) ==
        std::vector<std::string>{"10.244.1.2"});
  CHECK(texts(z.ask("fd00--1-2.default.pod.cluster.local", type::kAaaa).answers, type::kAaaa) ==
        std::vector<std::string>{"fd00::1:2"});
  CHECK(z.ask("10-244-1-3.default.pod.cluster.local", type::kA).header.rcode == Rcode::kNxDomain);
  CHECK(z.ask("10-244-1-2.other.pod.cluster.local", type::kA).header.rcode == Rcode::kNxDomain);
  CHECK(z.ask("not-an-ip.default.pod.cluster.local", type::kA).header.rcode == Rcode::kNxDomain);
}

TEST_CASE("missing names are NXDOMAIN, existing ones without the type NODATA, with the SOA",
          "[dns]") {
  Zone z;
  for (const char* name : {"nope.default.svc.cluster.local", "web.nope.svc.cluster.local",
                           "a.b.c.web.default.svc.cluster.local", "foo.cluster.local",
                           "www.google.com.default.svc.cluster.local"}) {
    INFO(name);
    Message m = z.ask(name, type::kA);
    CHECK(m.header.rcode == Rcode::kNxDomain);
    CHECK(m.answers.empty());
    REQUIRE(m.authority.size() == 1);
    CHECK(m.authority[0].type == type::kSoa);
    CHECK(m.authority[0].name == "cluster.local");
    CHECK(m.authority[0].soa.minimum == 5);
  }
  for (auto [name, qtype] : std::vector<std::pair<const char*, uint16_t>>{
           {"web.default.svc.cluster.local", type::kTxt},
           {"db.default.svc.cluster.local", type::kAaaa},
           {"default.svc.cluster.local", type::kA},
           {"svc.cluster.local", type::kA},
           {"cluster.local", type::kA},
           {"_tcp.web.default.svc.cluster.local", type::kA}}) {
    INFO(name);
    Message m = z.ask(name, qtype);
    CHECK(m.header.rcode == Rcode::kNoError);
    CHECK(m.answers.empty());
    CHECK(m.authority.size() == 1);
  }
  CHECK(z.ask("cluster.local", type::kSoa).answers.size() == 1);
}

TEST_CASE("only names in the cluster domain are ours", "[dns]") {
  Zone z;
  CHECK(z.lookup.in_zone("cluster.local"));
  CHECK(z.lookup.in_zone("Web.Default.Svc.Cluster.Local."));
  CHECK_FALSE(z.lookup.in_zone("example.com"));
  CHECK_FALSE(z.lookup.in_zone("notcluster.local"));
  CHECK_FALSE(z.lookup.in_zone("local"));
  CHECK_FALSE(z.lookup.in_zone("a\\.cluster.local"));
}

}  // namespace
}  // namespace vkube::dns
