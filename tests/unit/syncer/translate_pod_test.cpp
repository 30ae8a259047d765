// Tenant pod in, host pod out: golden files under golden/ (set
// VKUBE_UPDATE_GOLDEN=1 to rewrite them after a deliberate change, then
// review the diff).
#include <catch2/catch.hpp>

#include <algorithm>

#include "support/golden.h"
#include "vkube/syncer/translate_pod.h"

using json = nlohmann::json;
using vkube::syncer::HostPolicy;
using vkube::syncer::NameMapper;
using vkube::syncer::PodContext;
using vkube::testing::check_golden;
using vkube::testing::golden_path;
using vkube::testing::read_json;

namespace {

// The operator's: its scheduler, queue label and priority class.
const HostPolicy& operator_policy() {
  static const HostPolicy policy = [] {
    HostPolicy p;
    p.scheduler_name = "vkube-scheduler";
    p.labels = {{"kueue.x-k8s.io/queue-name", "team-a"}};
    p.priority_class = "vkube-tenant-team-a";
    return p;
  }();
  return policy;
}

PodContext context(const NameMapper& names) {
  PodContext ctx;
  ctx.names = &names;
  ctx.host_namespace = "vkube-team-a";
  ctx.owner = {
      {"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "vkube-anchor"}, {"uid", "anchor-uid"}};
  ctx.gpu.fractions = vkube::gpu::FractionMode::kMilli;
  ctx.policy = &operator_policy();
  ctx.services = {{"redis", "10.96.0.20", {{"", {{"port", 6379}, {"protocol", "TCP"}}}}},
                  {"headless", "None", {{"", {{"port", 80}}}}}};
  ctx.dns_ip = "10.96.0.10";
  ctx.api_access_secret = "trainer-x-ml-x-team-a.sa-token";
  ctx.api_host = "10.244.9.7";
  ctx.api_port = 6443;
  ctx.token_secret = "trainer-token-x-ml-x-team-a";
  return ctx;
}

}  // namespace

TEST_CASE("a tenant GPU pod becomes its host pod (golden)", "[syncer]") {
  NameMapper names("team-a");
  auto host = vkube::syncer::translate_pod(read_json(golden_path(__FILE__, "pod_gpu_app.in.json")),
                                           context(names));
  REQUIRE(host.is_ok());
  check_golden(golden_path(__FILE__, "pod_gpu_app.out.json"), *host);
}

TEST_CASE("pod translation refuses what the host cannot run and leaves tokens out", "[syncer]") {
  NameMapper names("team-a");
  PodContext ctx = context(names);
  ctx.gpu.mig = vkube::gpu::MigMode::kSmallestFit;
  ctx.gpu.host_mig_profiles = {"1g.10gb"};
  json pod = read_json(golden_path(__FILE__, "pod_gpu_app.in.json"));
  pod["metadata"]["annotations"].erase("gpu-fraction");
  pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/mig-3g.40gb", "1"}}}};
  auto refused = vkube::syncer::translate_pod(pod, ctx);
  REQUIRE_FALSE(refused.is_ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("3g.40gb"));

  // Without a token Secret, no projected token reaches the host at all.
  ctx = context(names);
  ctx.token_secret.clear();
  auto host =
      vkube::syncer::translate_pod(read_json(golden_path(__FILE__, "pod_gpu_app.in.json")), ctx);
  REQUIRE(host.is_ok());
  const json& sources = (*host)["spec"]["volumes"][2]["projected"]["sources"];
  REQUIRE(sources.size() == 2);
  for (const json& s : sources) CHECK_FALSE(s.contains("serviceAccountToken"));
  CHECK_FALSE(host->dump().find("\"secret\":{\"items\"") != std::string::npos);
}

TEST_CASE("the tenant's API credentials are mounted where kube mounts them", "[syncer]") {
  NameMapper names("team-a");
  PodContext ctx = context(names);
  json pod = {{"metadata", {{"name", "web"}, {"namespace", "shop"}, {"uid", "u1"}}},
              {"spec",
               {{"priorityClassName", "tenant-critical"},
                {"priority", 2000000000},
                {"containers",
                 {{{"name", "app"}, {"image", "nginx"}},
                  {{"name", "own"},
                   {"image", "nginx"},
                   {"volumeMounts",
                    {{{"name", "mine"},
                      {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"}}}}}}}}}};
  auto host = vkube::syncer::translate_pod(pod, ctx);
  REQUIRE(host.is_ok());
  const json& spec = (*host)["spec"];
  // The tenant cannot pick its host priority: the operator's class replaces it.
  CHECK(spec["priorityClassName"] == "vkube-tenant-team-a");
  CHECK_FALSE(spec.contains("priority"));
  // The first container gets the credentials; the second keeps its own mount.
  REQUIRE(spec["containers"][0]["volumeMounts"].size() == 1);
  CHECK(spec["containers"][0]["volumeMounts"][0]["name"] == "vkube-api-access");
  CHECK(spec["containers"][1]["volumeMounts"].size() == 1);
  REQUIRE(spec["volumes"].size() == 1);
  CHECK(spec["volumes"][0]["secret"]["secretName"] == "trainer-x-ml-x-team-a.sa-token");
  const json& env = spec["containers"][0]["env"];
  CHECK(std::find(env.begin(), env.end(),
                  json({{"name", "KUBERNETES_SERVICE_HOST"}, {"value", "10.244.9.7"}})) !=
        env.end());

  // Without credentials (no --api-advertise), nothing is added.
  ctx.api_access_secret.clear();
  ctx.api_host.clear();
  HostPolicy no_priority = operator_policy();
  no_priority.priority_class.clear();
  ctx.policy = &no_priority;
  host = vkube::syncer::translate_pod(pod, ctx);
  REQUIRE(host.is_ok());
  CHECK_FALSE((*host)["spec"].contains("volumes"));
  CHECK_FALSE((*host)["spec"].contains("priorityClassName"));
  CHECK_FALSE((*host)["spec"]["containers"][0].contains("volumeMounts"));
}
