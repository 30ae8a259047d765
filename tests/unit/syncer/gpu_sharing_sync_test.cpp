// What a tenant sees of the shared pool through the syncer (issue 38): its
// pod borrowing GPUs, then reclaimed: the host scheduler's DisruptionTarget
// while the host pod terminates, then the pod Failed and deleted, as a
// kubelet would leave it for the tenant's Job controller to count.
#include "syncer_harness.h"

namespace {

using namespace vkube::testing::syncer_harness;

const std::string kHostPods = "/api/v1/namespaces/vkube-t/pods";
const std::string kTenantPod = "/api/v1/namespaces/default/pods/w";

json tenant_condition(ApiServerOverStore& api, const std::string& type) {
  json pod = admin_call(*api.api, "GET", kTenantPod)["body"];
  for (const json& c : pod.value("status", json::object()).value("conditions", json::array()))
    if (c.value("type", "") == type) return c;
  return nullptr;
}

}  // namespace

TEST_CASE("a borrowing pod says so in its tenant; reclaimed, it fails and goes as kube's would",
          "[borrowing-sync]") {
  FlakyHost host;
  add_host_node(host, "n1");
  ApiServerOverStore tenant_api;
  make_default_namespace(tenant_api);
  Tenant tenant(tenant_api, host);
  // A finalizer (a Job's tracking one, say) keeps the tenant pod readable after its deletion.
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "w"}, {"finalizers", {"test.vkube.io/keep"}}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "trainer"}}}}}}};
  REQUIRE(admin_call(*tenant_api.api, "POST", "/api/v1/namespaces/default/pods", pod)["code"] ==
          201);
  REQUIRE(eventually([&] { return host.pods() == 1; }));
  json hpod = admin_call(*host.host.api, "GET", kHostPods)["body"]["items"][0];
  const std::string hpath = kHostPods + "/" + hpod["metadata"]["name"].get<std::string>();

  // The host scheduler binds it beyond the tenant's deserved share.
  REQUIRE(merge_patch(host.host, hpath,
                      {{"metadata", {{"annotations", {{"gpu.vkube.io/borrowing", "1000"}}}}}}) ==
          200);
  bind_host_pod(host, hpath, "n1");
  REQUIRE(merge_patch(host.host, hpath + "/status", {{"status", {{"phase", "Running"}}}}) == 200);
  CHECK(eventually([&] {
    json c = tenant_condition(tenant_api, "vkube.io/GPUBorrowing");
    return !c.is_null() && c["status"] == "True" &&
           c["message"] == "holds 1 GPU beyond the tenant's deserved share; it may be reclaimed";
  }));

  // Reclaimed: DisruptionTarget, then a graceful deletion the pod outlives a while.
  json disruption = {
      {"type", "DisruptionTarget"},
      {"status", "True"},
      {"reason", "PreemptionByScheduler"},
      {"message", "vkube-scheduler: reclaimed for another tenant's guaranteed share"}};
  json hstatus = admin_call(*host.host.api, "GET", hpath)["body"]["status"];
  hstatus["conditions"].push_back(disruption);
  REQUIRE(merge_patch(host.host, hpath + "/status", {{"status", hstatus}}) == 200);
  REQUIRE(admin_call(*host.host.api, "DELETE", hpath, {{"gracePeriodSeconds", 30}})["code"] == 200);
  CHECK(eventually([&] {
    json c = tenant_condition(tenant_api, "DisruptionTarget");
    return !c.is_null() && c["reason"] == "PreemptionByScheduler";
  }));
  json seen = admin_call(*tenant_api.api, "GET", kTenantPod)["body"];
  CHECK_FALSE(seen["metadata"].contains("deletionTimestamp"));  // still running out its grace
  CHECK(seen["status"]["phase"] == "Running");

  // The host pod is gone: the tenant pod ends Failed (not Running forever
  // under its finalizer), deleted, with the condition its Job reads.
  REQUIRE(admin_call(*host.host.api, "DELETE", hpath, {{"gracePeriodSeconds", 0}})["code"] == 200);
  CHECK(eventually([&] {
    json p = admin_call(*tenant_api.api, "GET", kTenantPod)["body"];
    return p["metadata"].contains("deletionTimestamp") && p["status"]["phase"] == "Failed";
  }));
  CHECK(tenant_condition(tenant_api, "DisruptionTarget")["status"] == "True");
  REQUIRE(merge_patch(tenant_api, kTenantPod, {{"metadata", {{"finalizers", nullptr}}}}) == 200);
  CHECK(eventually([&] { return admin_call(*tenant_api.api, "GET", kTenantPod)["code"] == 404; }));
}
