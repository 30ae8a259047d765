#include <catch2/catch.hpp>

#include <map>
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
  CHECK(h.starts_with(std::string(42, 'p')));
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

TEST_CASE("host names never meet for two (namespace, name) pairs, short ones included", "[syncer]") {
  NameMapper m("t");
  // Pod a-x-b of namespace c and pod a of namespace b-x-c once both became
  // a-x-b-x-c-x-t: a user of c could delete or take over b-x-c's pod.
  CHECK(m.host_name("c", "a-x-b") != m.host_name("b-x-c", "a"));
  CHECK(m.host_name("c", "s-x-b") != m.host_name("b-x-c", "s"));
  // A name ending in -x and a namespace starting with x- meet without any -x- in either.
  CHECK(m.host_name("x-b", "a") != m.host_name("b", "a-x"));
  CHECK(m.host_name("c", "a") == "a-x-c-x-t");  // the readable form where it is unambiguous
  // Every split of short names made of a, b, x and '-' stays distinct.
  const std::vector<std::string> parts = {"a",     "b",     "x",   "a-x",   "x-a",   "a-x-b",
                                          "x-x",   "a-x-x", "b-x", "x-b",   "x-x-b", "a--x",
                                          "a-x-a", "ax",    "xa",  "x-x-x", "a-xx",  "b-x-c"};
  std::map<std::string, std::pair<std::string, std::string>> seen;
  for (const auto& ns : parts)
    for (const auto& name : parts) {
      std::string h = m.host_name(ns, name);
      CHECK(h.size() <= 63);
      auto [it, fresh] = seen.emplace(h, std::make_pair(ns, name));
      INFO(h << " for " << ns << "/" << name << " and " << it->second.first << "/"
             << it->second.second);
      CHECK(fresh);
    }
}

TEST_CASE("a host object recording another tenant object is not the expected one's", "[syncer]") {
  NameMapper m("t");
  json victim = {{"metadata", {{"name", "a"}, {"namespace", "b-x-c"}, {"uid", "u-victim"}}}};
  json host = {{"metadata", {{"name", "a-x-b-x-c-x-t"}}}};
  m.mark(host, victim);
  CHECK(m.stands_for(host, "b-x-c", "a"));
  CHECK_FALSE(m.stands_for(host, "c", "a-x-b"));
  CHECK_FALSE(m.stands_for(host, "b-x-c", "b"));
  CHECK_FALSE(NameMapper("u").stands_for(host, "b-x-c", "a"));
}
