// A Service's cluster IP and node ports follow its type and ports on update
// (kube's allocateUpdate): a new type gets what it needs, what a change
// drops goes back to the pools, a dry run or failed update reserves nothing.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "apiserver/service_ips.h"
#include "support/admin_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

constexpr const char* kSvcs = "/api/v1/namespaces/s/services";
constexpr const char* kSmp = "application/strategic-merge-patch+json";

struct Server : testing::AdminApiServer {
  Server() { make_namespace("s"); }

  http::Response send(const std::string& method, const std::string& target, const json& body,
                      const std::string& content_type = "application/json") {
    return call(method, target, body, content_type);
  }
  json ok(const std::string& method, const std::string& target, const json& body, int want = 200,
          const std::string& content_type = "application/json") {
    auto r = send(method, target, body, content_type);
    INFO(method << " " << target << ": " << r.body);
    REQUIRE(r.status == want);
    return json::parse(r.body);
  }
  json create(const std::string& name, const std::string& type, json ports = nullptr) {
    if (ports.is_null()) ports = json::array({{{"name", "http"}, {"port", 80}}});
    return ok("POST", kSvcs,
              {{"metadata", {{"name", name}}},
               {"spec", {{"type", type}, {"selector", {{"app", name}}}, {"ports", ports}}}},
              201);
  }
  json patch(const std::string& name, const json& p, int want = 200,
             const std::string& query = "") {
    return ok("PATCH", std::string(kSvcs) + "/" + name + query, p, want, kSmp);
  }
};

int node_port(const json& svc, size_t i = 0) {
  return svc["spec"]["ports"][i].value("nodePort", 0);
}

TEST_CASE("a ClusterIP Service patched to NodePort or LoadBalancer gets node ports",
          "[apiserver][svc-type]") {
  Server s;
  s.create("np", "ClusterIP");
  json out = s.patch("np", {{"spec", {{"type", "NodePort"}}}});
  CHECK(node_port(out) >= 30000);
  CHECK(node_port(out) <= 32767);

  s.create("lb", "ClusterIP");
  out = s.patch("lb", {{"spec", {{"type", "LoadBalancer"}, {"externalTrafficPolicy", "Local"}}}});
  CHECK(node_port(out) >= 30000);
  CHECK(out["spec"].value("healthCheckNodePort", 0) >= 30000);
  CHECK(out["spec"]["healthCheckNodePort"] != out["spec"]["ports"][0]["nodePort"]);
}

TEST_CASE("a node port a type change dropped can be taken by another Service",
          "[apiserver][svc-type]") {
  Server s;
  json first = s.create("a", "NodePort");
  const int port = node_port(first);
  s.patch("a", {{"spec", {{"type", "ClusterIP"}}}});
  json ports = json::array({{{"name", "http"}, {"port", 80}, {"nodePort", port}}});
  json second = s.create("b", "NodePort", ports);
  CHECK(node_port(second) == port);
}

TEST_CASE("a requested node port on update is checked for range and collision",
          "[apiserver][svc-type]") {
  Server s;
  json taken = s.create("a", "NodePort");
  const int port = node_port(taken);
  s.create("b", "ClusterIP");
  auto r = s.send(
      "PATCH", std::string(kSvcs) + "/b",
      {{"spec",
        {{"type", "NodePort"}, {"ports", json::array({{{"port", 80}, {"nodePort", port}}})}}}},
      kSmp);
  REQUIRE(r.status == 422);
  CHECK(testing::message(r).find("spec.ports[0].nodePort: Invalid value: " + std::to_string(port) +
                                 ": provided port is already allocated") != std::string::npos);
  r = s.send("PATCH", std::string(kSvcs) + "/b",
             {{"spec",
               {{"type", "NodePort"}, {"ports", json::array({{{"port", 80}, {"nodePort", 80}}})}}}},
             kSmp);
  REQUIRE(r.status == 422);
  CHECK(testing::message(r).find("provided port is not in the valid range") != std::string::npos);
}

TEST_CASE("a dry-run type change reserves nothing", "[apiserver][svc-type]") {
  Server s;
  s.create("a", "ClusterIP");
  json dry = s.patch("a", {{"spec", {{"type", "NodePort"}}}}, 200, "?dryRun=All");
  const int port = node_port(dry);
  REQUIRE(port >= 30000);
  CHECK(s.get(std::string(kSvcs) + "/a")["spec"].value("type", "") == "ClusterIP");
  json ports = json::array({{{"name", "http"}, {"port", 80}, {"nodePort", port}}});
  CHECK(node_port(s.create("b", "NodePort", ports)) == port);
}

TEST_CASE("an update's allocation is reverted when it fails and freed when it commits",
          "[apiserver][svc-type]") {
  ServiceIpAllocator alloc("10.96.0.0/12");
  const json old = {{"metadata", {{"name", "a"}}},
                    {"spec",
                     {{"type", "NodePort"},
                      {"clusterIP", "10.96.0.10"},
                      {"ports", json::array({{{"port", 80}, {"nodePort", 30100}}})}}}};
  json created = old;
  REQUIRE_FALSE(alloc.assign(created, false));
  json next = old;
  next["spec"]["ports"] = json::array({{{"port", 80}, {"nodePort", 30200}}});
  ServiceAllocation a;
  REQUIRE_FALSE(alloc.assign_update(old, next, false, a));
  CHECK(a.reserved_ports == std::vector<int>{30200});
  CHECK(a.freed_ports == std::vector<int>{30100});
  json other = {
      {"metadata", {{"name", "b"}}},
      {"spec",
       {{"type", "NodePort"}, {"ports", json::array({{{"port", 80}, {"nodePort", 30200}}})}}}};
  json probe = other;
  CHECK(alloc.assign(probe, true));  // reserved by the update in flight
  alloc.finish(a, false);            // the write failed: 30200 is free, 30100 still held
  probe = other;
  CHECK_FALSE(alloc.assign(probe, true));
  probe = other;
  probe["spec"]["ports"][0]["nodePort"] = 30100;
  CHECK(alloc.assign(probe, true));

  REQUIRE_FALSE(alloc.assign_update(old, next, false, a));
  alloc.finish(a, true);  // committed: 30100 is free, 30200 held
  probe = other;
  probe["spec"]["ports"][0]["nodePort"] = 30100;
  CHECK_FALSE(alloc.assign(probe, true));
  probe = other;
  CHECK(alloc.assign(probe, true));
}

TEST_CASE("ExternalName frees the cluster IP and ClusterIP takes one again",
          "[apiserver][svc-type]") {
  Server s;
  json a = s.create("a", "ClusterIP");
  const std::string ip = a["spec"]["clusterIP"];
  json ext = s.patch("a", {{"spec", {{"type", "ExternalName"}, {"externalName", "x.example"}}}});
  CHECK_FALSE(ext["spec"].contains("clusterIP"));
  // The freed address can be asked for by another Service.
  json b = s.ok("POST", kSvcs,
                {{"metadata", {{"name", "b"}}},
                 {"spec", {{"clusterIP", ip}, {"ports", json::array({{{"port", 80}}})}}}},
                201);
  CHECK(b["spec"]["clusterIP"] == ip);
  json back = s.patch("a", {{"spec", {{"type", "ClusterIP"}, {"externalName", nullptr}}}});
  const std::string again = back["spec"].value("clusterIP", "");
  CHECK_FALSE(again.empty());
  CHECK(again != ip);
}

TEST_CASE("ports added to a NodePort Service get node ports, removed ones free theirs",
          "[apiserver][svc-type]") {
  Server s;
  json a = s.create("a", "NodePort");
  const int first = node_port(a);
  json two = json::array(
      {{{"name", "http"}, {"port", 80}, {"nodePort", first}}, {{"name", "https"}, {"port", 443}}});
  json out = s.ok("PUT", std::string(kSvcs) + "/a",
                  {{"metadata", {{"name", "a"}}},
                   {"spec", {{"type", "NodePort"}, {"selector", {{"app", "a"}}}, {"ports", two}}}});
  CHECK(node_port(out, 0) == first);
  const int second = node_port(out, 1);
  CHECK(second >= 30000);
  CHECK(second != first);
  // A replacement that leaves the node ports out keeps them (kube's patchAllocatedValues).
  json same = s.ok("PUT", std::string(kSvcs) + "/a",
                   {{"metadata", {{"name", "a"}}},
                    {"spec",
                     {{"type", "NodePort"},
                      {"selector", {{"app", "a"}}},
                      {"ports", json::array({{{"name", "http"}, {"port", 80}},
                                             {{"name", "https"}, {"port", 443}}})}}}});
  CHECK(node_port(same, 0) == first);
  CHECK(node_port(same, 1) == second);
  CHECK_FALSE(same["spec"].value("clusterIP", "").empty());
  // Dropping the https port frees its node port.
  s.ok("PUT", std::string(kSvcs) + "/a",
       {{"metadata", {{"name", "a"}}},
        {"spec",
         {{"type", "NodePort"},
          {"selector", {{"app", "a"}}},
          {"ports", json::array({{{"name", "http"}, {"port", 80}}})}}}});
  json ports = json::array({{{"port", 80}, {"nodePort", second}}});
  CHECK(node_port(s.create("b", "NodePort", ports)) == second);
}

}  // namespace
}  // namespace vkube::apiserver
