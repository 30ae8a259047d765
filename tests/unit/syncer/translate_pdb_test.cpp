// A tenant PodDisruptionBudget as the host keeps it (translate_pdb): the
// budget counts only the tenant namespace's host pods, never another's.
#include <catch2/catch.hpp>

#include "vkube/syncer/translate_objects.h"

using json = nlohmann::json;
using vkube::syncer::NameMapper;
using vkube::syncer::ObjectContext;

namespace {

json tenant_pdb(json spec) {
  return {{"apiVersion", "policy/v1"},
          {"kind", "PodDisruptionBudget"},
          {"metadata",
           {{"name", "web"},
            {"namespace", "shop"},
            {"uid", "pdb-uid"},
            {"resourceVersion", "7"},
            {"labels", {{"team", "a"}}},
            {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", "{}"}}}}},
          {"spec", std::move(spec)},
          {"status", {{"disruptionsAllowed", 1}}}};
}

}  // namespace

TEST_CASE("a tenant budget becomes a host budget over the tenant namespace's pods", "[syncer]") {
  NameMapper names("team-a");
  const json owner = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "a"}, {"uid", "u"}};
  ObjectContext ctx{&names, "vkube-team-a", owner};
  const json expressions = json::array({{{"key", "tier"}, {"operator", "In"}, {"values", {"db"}}}});
  auto host = vkube::syncer::translate_pdb(
      tenant_pdb(
          {{"minAvailable", "50%"},
           {"unhealthyPodEvictionPolicy", "AlwaysAllow"},
           {"selector", {{"matchLabels", {{"app", "web"}}}, {"matchExpressions", expressions}}},
           {"namespace", "other"}}),
      ctx);
  REQUIRE(host.is_ok());
  const json& h = *host;
  CHECK(h["apiVersion"] == "policy/v1");
  CHECK(h["kind"] == "PodDisruptionBudget");
  CHECK(h["metadata"]["name"] == names.host_name("shop", "web"));
  CHECK(h["metadata"]["namespace"] == "vkube-team-a");
  CHECK(h["metadata"]["ownerReferences"] == json::array({owner}));
  CHECK(h["metadata"]["labels"]["team"] == "a");
  CHECK_FALSE(h["metadata"].contains("resourceVersion"));
  CHECK_FALSE(
      h["metadata"]["annotations"].contains("kubectl.kubernetes.io/last-applied-configuration"));
  CHECK(names.stands_for(h, "shop", "web"));
  CHECK_FALSE(names.stands_for(h, "shop", "api"));
  CHECK_FALSE(h.contains("status"));
  // The budget itself, as the tenant wrote it; nothing but these fields.
  CHECK(h["spec"]["minAvailable"] == "50%");
  CHECK(h["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow");
  CHECK_FALSE(h["spec"].contains("maxUnavailable"));
  CHECK_FALSE(h["spec"].contains("namespace"));
  // Host pods carry the tenant pods' labels unchanged, plus the tenant's.
  const json sel = h["spec"]["selector"];
  CHECK(
      sel["matchLabels"] ==
      json({{"app", "web"}, {"vkube.io/tenant", "team-a"}, {"vkube.io/tenant-namespace", "shop"}}));
  CHECK(sel["matchExpressions"] == expressions);
}

TEST_CASE("a budget's empty selector is the tenant namespace's pods on the host; none is none",
          "[syncer]") {
  NameMapper names("team-a");
  ObjectContext ctx{&names, "vkube-team-a"};
  auto all = vkube::syncer::translate_pdb(
      tenant_pdb({{"maxUnavailable", 1}, {"selector", json::object()}}), ctx);
  REQUIRE(all.is_ok());
  CHECK((*all)["spec"]["maxUnavailable"] == 1);
  CHECK((*all)["spec"]["selector"] ==
        json({{"matchLabels",
               {{"vkube.io/tenant", "team-a"}, {"vkube.io/tenant-namespace", "shop"}}}}));
  // A tenant's own label cannot widen it to another namespace's pods.
  auto spoof = vkube::syncer::translate_pdb(
      tenant_pdb({{"selector", {{"matchLabels", {{"vkube.io/tenant-namespace", "prod"}}}}}}), ctx);
  REQUIRE(spoof.is_ok());
  CHECK((*spoof)["spec"]["selector"]["matchLabels"]["vkube.io/tenant-namespace"] == "shop");
  // policy/v1: no selector selects no pods, so the host's selects none either.
  auto none = vkube::syncer::translate_pdb(tenant_pdb({{"minAvailable", 1}}), ctx);
  REQUIRE(none.is_ok());
  CHECK_FALSE((*none)["spec"].contains("selector"));
  CHECK_FALSE(vkube::syncer::translate_pdb(tenant_pdb({}), ObjectContext{}).is_ok());
}
