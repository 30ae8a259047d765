// The operator's node selector (`vkube create --node-selector`, serve's
// --host-node-selector): the tenant's slice of host nodes. Every host pod
// requires it; the tenant's own selector and affinity can only narrow it; a
// tenant's nodeName never reaches the host.
#include <catch2/catch.hpp>

#include "vkube/syncer/host_policy.h"
#include "vkube/syncer/translate_pod.h"

using json = nlohmann::json;
using vkube::syncer::HostPolicy;
using vkube::syncer::NameMapper;
using vkube::syncer::PodContext;

namespace {

HostPolicy team_a() {
  HostPolicy p;
  p.node_selector = {{"vkube.io/team", "a"}, {"vkube.io/pool", "gpu"}};
  return p;
}

json pod(json spec) {
  spec["containers"] = {{{"name", "app"}, {"image", "nginx"}}};
  return {{"metadata", {{"name", "web"}, {"namespace", "shop"}, {"uid", "u1"}}},
          {"spec", std::move(spec)}};
}

vkube::Result<json> host_pod(const HostPolicy& policy, json spec) {
  NameMapper names("team-a");
  PodContext ctx;
  ctx.names = &names;
  ctx.host_namespace = "vkube-team-a";
  ctx.policy = &policy;
  return vkube::syncer::translate_pod(pod(std::move(spec)), ctx);
}

std::string refused(const HostPolicy& policy, const json& spec) {
  return vkube::syncer::join_violations(vkube::syncer::pod_violations(policy, spec), "spec.");
}

}  // namespace

TEST_CASE("every host pod of a dedicated tenant requires its slice", "[syncer][node-selector]") {
  const HostPolicy policy = team_a();
  auto plain = host_pod(policy, json::object());
  REQUIRE(plain.is_ok());
  CHECK((*plain)["spec"]["nodeSelector"] ==
        json({{"vkube.io/team", "a"}, {"vkube.io/pool", "gpu"}}));

  // The tenant narrows with keys it may select: they stay beside the slice.
  auto narrowed = host_pod(policy, {{"nodeSelector", {{"nvidia.com/gpu.product", "H100"}}},
                                    {"affinity",
                                     {{"nodeAffinity",
                                       {{"requiredDuringSchedulingIgnoredDuringExecution",
                                         {{"nodeSelectorTerms",
                                           {{{"matchExpressions",
                                              {{{"key", "topology.kubernetes.io/zone"},
                                                {"operator", "In"},
                                                {"values", {"z1"}}}}}}}}}}}}}}});
  REQUIRE(narrowed.is_ok());
  const json& spec = (*narrowed)["spec"];
  CHECK(
      spec["nodeSelector"] ==
      json({{"vkube.io/team", "a"}, {"vkube.io/pool", "gpu"}, {"nvidia.com/gpu.product", "H100"}}));
  CHECK(spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] ==
        "topology.kubernetes.io/zone");

  // Asking for the slice's own value is no conflict, whatever the allowed keys.
  CHECK(refused(policy, {{"nodeSelector", {{"vkube.io/team", "a"}}}}).empty());
  // Affinity on the slice's keys only narrows it (the host pod requires both).
  json expr = {{"key", "vkube.io/team"}, {"operator", "In"}, {"values", {"a", "b"}}};
  json terms = json::array({{{"matchExpressions", json::array({expr})}}});
  json affinity = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
  CHECK(refused(policy, {{"affinity", affinity}}).empty());
}

TEST_CASE("a tenant cannot leave its slice", "[syncer][node-selector]") {
  const HostPolicy policy = team_a();
  // Another team's nodes: refused at the tenant's admission, as kube's
  // PodNodeSelector refuses a conflict with the namespace's selector...
  const json other = {{"nodeSelector", {{"vkube.io/team", "b"}}}};
  CHECK(refused(policy, other) ==
        "spec.nodeSelector[vkube.io/team]: \"b\" conflicts with the tenant's node selector: its "
        "pods run only on its own nodes (allowed: vkube.io/pool=gpu,vkube.io/team=a)");
  // ...and should such a pod exist (made before the operator set the slice),
  // its host copy gets the operator's value.
  auto host = host_pod(policy, other);
  REQUIRE(host.is_ok());
  CHECK((*host)["spec"]["nodeSelector"]["vkube.io/team"] == "a");

  // A node name would bypass the host's scheduler, and the slice with it.
  host = host_pod(policy, {{"nodeName", "node-of-team-b"}});
  REQUIRE(host.is_ok());
  CHECK_FALSE((*host)["spec"].contains("nodeName"));
  CHECK((*host)["spec"]["nodeSelector"]["vkube.io/team"] == "a");
  // Selecting one node by name stays refused: matchFields, kubernetes.io/hostname.
  CHECK_THAT(refused(policy, {{"nodeSelector", {{"kubernetes.io/hostname", "node-of-team-b"}}}}),
             Catch::Contains("names one host node"));

  // Without a slice, the tenant's value of a key it may not select is refused as before.
  CHECK_THAT(refused(HostPolicy{}, other), Catch::Contains("node label \"vkube.io/team\" is not "
                                                           "allowed"));
  auto free = host_pod(HostPolicy{}, json::object());
  REQUIRE(free.is_ok());
  CHECK_FALSE((*free)["spec"].contains("nodeSelector"));
}

TEST_CASE("the tenant's virtual nodes are its slice's nodes", "[syncer][node-selector]") {
  auto node = [](json labels) { return json{{"metadata", {{"labels", std::move(labels)}}}}; };
  const HostPolicy policy = team_a();
  CHECK(vkube::syncer::node_in_slice(
      policy, node({{"vkube.io/team", "a"}, {"vkube.io/pool", "gpu"}, {"zone", "z1"}})));
  CHECK_FALSE(vkube::syncer::node_in_slice(policy, node({{"vkube.io/team", "a"}})));
  CHECK_FALSE(vkube::syncer::node_in_slice(
      policy, node({{"vkube.io/team", "b"}, {"vkube.io/pool", "gpu"}})));
  // No slice: no node is shown for it (only those the tenant's pods use).
  CHECK_FALSE(vkube::syncer::node_in_slice(HostPolicy{}, node({{"vkube.io/team", "a"}})));
}

TEST_CASE("the node selector's flag and file forms are checked as label keys and values",
          "[syncer][node-selector]") {
  auto ok = vkube::syncer::parse_node_selector("vkube.io/team=a,zone=z1");
  REQUIRE(ok.is_ok());
  CHECK(*ok == std::map<std::string, std::string>{{"vkube.io/team", "a"}, {"zone", "z1"}});
  CHECK(vkube::syncer::node_selector_text(*ok) == "vkube.io/team=a,zone=z1");
  CHECK(vkube::syncer::parse_node_selector("")->empty());

  struct Bad {
    const char* text;
    const char* message;
  };
  for (const Bad& b : {
           Bad{"vkube.io/team", "node selector entry \"vkube.io/team\": expected key=value"},
           Bad{"=a", "node selector key \"\": name part must be non-empty"},
           Bad{"Team A=a", "node selector key \"Team A\": name part must consist of"},
           Bad{"vkube.io/team=a b", "node selector value \"a b\" of vkube.io/team: a valid label"},
           Bad{"vkube.io/team=a,vkube.io/team=b",
               "node selector key \"vkube.io/team\" is given twice (a, b)"},
       }) {
    auto r = vkube::syncer::parse_node_selector(b.text);
    INFO(b.text);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::StartsWith(b.message));
  }

  HostPolicy p;
  REQUIRE(
      vkube::syncer::merge_policy_file({{"nodeSelector", {{"vkube.io/team", "a"}}}}, p).is_ok());
  CHECK(p.node_selector == std::map<std::string, std::string>{{"vkube.io/team", "a"}});
  CHECK(vkube::syncer::merge_policy_file({{"nodeSelector", {{"vkube.io/team", 1}}}}, p).message() ==
        "nodeSelector: the value of vkube.io/team must be a string (quote it)");
  CHECK_THAT(vkube::syncer::merge_policy_file({{"nodeSelector", {"a"}}}, p).message(),
             Catch::StartsWith("nodeSelector: must be a mapping"));
}
