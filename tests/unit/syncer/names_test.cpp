#include <catch2/catch.hpp>

#include <regex>
#include <set>

#include "vkube/syncer/names.h"

using json = nlohmann::json;
using vkube::syncer::NameMapper;

TEST_CASE("host names are <name>-x-<namespace>-x-<tenant>, at most 63 characters", "[syncer]") {
  NameMapper m("team-a");
  CHECK(m.host_name("default", "web-0") == "web-0-x-default-x-team-a");
  CHECK(m.host_name("ml", "cfg.v1") == "cfg.v1-x-ml-x-team-a");

  const std::string long_name(60, 'p');
  std::string h = m.host_name("default", long_name);
  CHECK(h.size() <= 63);
  CHECK(std::regex_match(h, std::regex("[a-z0-9]([-a-z0-9]*[a-z0-9])?")));
  CHECK(h.starts_with(std::string(46, 'p')));
  CHECK(h == m.host_name("default", long_name));  // stable across restarts
  // Names that share the kept prefix stay distinct.
  std::set<std::string> seen;
  for (const char* ns : {"a", "b", "default"})
    for (int i = 0; i < 50; ++i) seen.insert(m.host_name(ns, long_name + std::to_string(i)));
  CHECK(seen.size() == 150);
  // The separator cannot make two triples meet.
  NameMapper n("c");
  CHECK(n.host_name("b", "a-x-b-x-c-" + long_name) !=
        NameMapper("b-x-c").host_name("b", "a-" + long_name));
  CHECK(NameMapper("x").host_name("ns", std::string(63, 'q')).size() == 63);
}

TEST_CASE("host objects carry their tenant object and are recognised by it", "[syncer]") {
  NameMapper m("team-a");
  json tenant_pod = {{"metadata", {{"name", "web-0"}, {"namespace", "default"}, {"uid", "u-1"}}}};
  json host = {
      {"metadata", {{"name", m.host_name("default", "web-0")}, {"labels", {{"app", "web"}}}}}};
  m.mark(host, tenant_pod);
  CHECK(host["metadata"]["labels"]["app"] == "web");
  CHECK(host["metadata"]["labels"]["vkube.io/tenant"] == "team-a");
  CHECK(host["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "vkube");
  CHECK(host["metadata"]["labels"]["vkube.io/tenant-namespace"] == "default");
  auto o = m.origin(host);
  REQUIRE(o);
  CHECK(o->ns == "default");
  CHECK(o->name == "web-0");
  CHECK(o->uid == "u-1");
  CHECK_FALSE(m.stale(host, tenant_pod));
  // A new tenant object of the same name: the host object is an orphan of the old one.
  json recreated = tenant_pod;
  recreated["metadata"]["uid"] = "u-2";
  CHECK(m.stale(host, recreated));
  // Another tenant's object, or one vkube did not make, is not ours.
  CHECK_FALSE(NameMapper("team-b").origin(host));
  CHECK_FALSE(m.origin(json{{"metadata", {{"name", "x"}}}}));
}
