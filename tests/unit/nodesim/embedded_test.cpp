// The simulation as a faithful stand-in: Job pods complete by default (the
// annotation wins, other pods run on), a missing Secret or ConfigMap volume
// holds a pod in ContainerCreating with a FailedMount event, LoadBalancer
// Services get an address of the pool, and each host claims its own
// loopback slot.
#include <catch2/catch.hpp>

#include <thread>

#include "sim_cluster.h"
#include "support/temp_dir.h"

namespace vkube::nodesim {
namespace {

using namespace sim_testing;

const std::string kServices = "/api/v1/namespaces/w/services";

Options pool(std::chrono::milliseconds job_duration, std::string lb_pool = {}) {
  Options o = small_pool(2);
  o.job_duration = job_duration;
  o.load_balancer_pool = std::move(lb_pool);
  return o;
}

json pod(const std::string& name, const std::string& restart_policy, json labels = json::object(),
         json annotations = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
          {"spec",
           {{"nodeName", "sim-0"},
            {"restartPolicy", restart_policy},
            {"containers", json::array({{{"name", "main"}, {"image", "busybox:1.36"}}})}}}};
}

std::string phase(const json& p) {
  return p["status"].value("phase", "");
}

TEST_CASE("nodesim: a Job's pods complete after the default duration; the annotation wins",
          "[nodesim][embedded]") {
  Cluster c(pool(300ms));
  // A tenant's Job pod reaches the host with the Job registry's labels only.
  c.cp.create(kPods, pod("tenant-job", "Never", {{"batch.kubernetes.io/job-name", "migrate"}}));
  c.cp.create(kPods, pod("slow-job", "OnFailure", {{"job-name", "slow"}},
                         {{"sim.vkube.io/duration", "1h"}}));
  // Labelled like a Job's but restarted Always: a Deployment's pod, never completed.
  c.cp.create(kPods, pod("web", "Always", {{"job-name", "not-really"}}));
  c.cp.create(kPods, pod("plain", "Never"));
  REQUIRE(ControlPlane::eventually([&] { return phase(c.pod("tenant-job")) == "Succeeded"; }, 5s));
  json done = c.pod("tenant-job");
  CHECK(done["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed");
  std::this_thread::sleep_for(500ms);
  CHECK(phase(c.pod("slow-job")) == "Running");
  CHECK(phase(c.pod("web")) == "Running");
  CHECK(phase(c.pod("plain")) == "Running");
}

TEST_CASE("nodesim: with no Job duration a Job's pod runs until deleted", "[nodesim][embedded]") {
  Cluster c(pool(0ms));
  c.cp.create(kPods, pod("job", "Never", {{"job-name", "j"}}));
  REQUIRE(ControlPlane::eventually([&] { return phase(c.pod("job")) == "Running"; }));
  std::this_thread::sleep_for(300ms);
  CHECK(phase(c.pod("job")) == "Running");
}

TEST_CASE("nodesim: a missing Secret volume holds the pod in ContainerCreating until it exists",
          "[nodesim][embedded]") {
  Cluster c(pool(0ms));
  json p = pod("mounts", "Always");
  p["spec"]["volumes"] = {{{"name", "creds"}, {"secret", {{"secretName", "db"}}}},
                          {{"name", "opt"}, {"configMap", {{"name", "nope"}, {"optional", true}}}}};
  c.cp.create(kPods, p);
  REQUIRE(ControlPlane::eventually([&] {
    json got = c.pod("mounts");
    return got["status"].value("containerStatuses", json::array()).size() == 1;
  }));
  json waiting = c.pod("mounts");
  CHECK(phase(waiting) == "Pending");
  CHECK(waiting["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] ==
        "ContainerCreating");
  CHECK_FALSE(waiting["status"].contains("podIP"));
  REQUIRE(ControlPlane::eventually([&] {
    for (const json& e : c.cp.items("/api/v1/namespaces/w/events"))
      if (e.value("reason", "") == "FailedMount" &&
          e.value("message", "") ==
              "MountVolume.SetUp failed for volume \"creds\" : secret \"db\" not found" &&
          e["involvedObject"].value("name", "") == "mounts" && e.value("type", "") == "Warning")
        return true;
    return false;
  }));
  c.cp.create("/api/v1/namespaces/w/secrets",
              {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", "db"}}}});
  CHECK(ControlPlane::eventually([&] { return phase(c.pod("mounts")) == "Running"; }, 5s));
}

json service(const std::string& name, const std::string& type) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", name}}},
          {"spec", {{"type", type}, {"ports", json::array({{{"port", 80}}})}}}};
}

std::string ingress_ip(const json& svc) {
  json ingress = svc["status"].value("loadBalancer", json::object()).value("ingress", json());
  return ingress.is_array() && !ingress.empty() ? ingress[0].value("ip", "") : "";
}

TEST_CASE("nodesim: LoadBalancer Services get addresses of the pool", "[nodesim][embedded]") {
  Cluster c(pool(0ms, "127.254.9.0/30"));  // two addresses: .1 and .2
  c.cp.create(kServices, service("a", "LoadBalancer"));
  c.cp.create(kServices, service("b", "LoadBalancer"));
  c.cp.create(kServices, service("inside", "ClusterIP"));
  json owned = service("theirs", "LoadBalancer");
  owned["spec"]["loadBalancerClass"] = "example.com/other";
  c.cp.create(kServices, owned);
  REQUIRE(ControlPlane::eventually([&] {
    return !ingress_ip(c.cp.get(kServices + "/a")).empty() &&
           !ingress_ip(c.cp.get(kServices + "/b")).empty();
  }));
  const std::string a = ingress_ip(c.cp.get(kServices + "/a"));
  const std::string b = ingress_ip(c.cp.get(kServices + "/b"));
  CHECK(a != b);
  CHECK((a == "127.254.9.1" || a == "127.254.9.2"));
  CHECK((b == "127.254.9.1" || b == "127.254.9.2"));
  REQUIRE(c.sim->wait_idle(5s));
  CHECK(ingress_ip(c.cp.get(kServices + "/inside")).empty());
  CHECK(ingress_ip(c.cp.get(kServices + "/theirs")).empty());
  // The pool is spent until one is deleted; then the next gets its address.
  c.cp.create(kServices, service("c", "LoadBalancer"));
  REQUIRE(c.sim->wait_idle(5s));
  CHECK(ingress_ip(c.cp.get(kServices + "/c")).empty());
  REQUIRE(c.cp.call("DELETE", kServices + "/a").code == 200);
  c.cp.create(kServices, service("d", "LoadBalancer"));
  CHECK(ControlPlane::eventually([&] { return ingress_ip(c.cp.get(kServices + "/d")) == a; }));
}

TEST_CASE("nodesim: each embedded host holds a loopback slot of its own", "[nodesim][embedded]") {
  testing::TempDir locks;
  auto one = claim_loopback_slot("/data/one", locks.path());
  auto again = claim_loopback_slot("/data/one", locks.path());  // a second host, same dir
  REQUIRE(one.is_ok());
  REQUIRE(again.is_ok());
  CHECK(*one != *again);
  CHECK(*one >= 1);
  CHECK(*one <= 253);
  CHECK(default_load_balancer_pool(7) == "127.254.7.0/24");
  std::vector<gpu::NodeSpec> nodes = pool(0ms).nodes;
  gpu::assign_addresses(nodes);
  CHECK(simulated_networks(nodes) == std::vector<std::string>{"10.244.0.0/16", "172.16.0.0/16"});
  CHECK(parse_sim_duration("2s") == std::chrono::milliseconds(2000));
  CHECK_FALSE(parse_sim_duration("soon").has_value());
}

}  // namespace
}  // namespace vkube::nodesim
