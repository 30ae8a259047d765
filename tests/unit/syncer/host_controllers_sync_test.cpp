// The syncer lives beside the host's own controllers (issue 38): Kueue's
// webhook labels, gates and finalizes the pods it manages, KAI's pod grouper
// and binder annotate and label the pods they group and bind. The syncer
// keeps the host pod in step with the tenant's without ever taking those
// away or writing over them: it removes only what it set itself.
#include <set>

#include "syncer_harness.h"

namespace {

using namespace vkube::testing::syncer_harness;

const std::string kHostPods = "/api/v1/namespaces/vkube-t/pods";
const std::string kTenantPods = "/api/v1/namespaces/default/pods";

// Kueue's pod webhook (pkg/controller/jobs/pod/pod_webhook.go Default) on a
// host pod labelled for a LocalQueue, and every PATCH the syncer sends to a
// host pod, kept for inspection.
struct HostControllers {
  std::mutex mu;
  std::vector<json> patches;

  void install(FlakyHost& host) {
    std::lock_guard lock(host.mu);
    host.intercept = [this](vkube::http::Request& r) -> std::optional<vkube::http::Response> {
      if (!r.path.starts_with(kHostPods)) return std::nullopt;
      if (r.method == "PATCH") {
        std::lock_guard l(mu);
        patches.push_back(json::parse(r.body, nullptr, false));
      }
      if (r.method != "POST" || r.path != kHostPods) return std::nullopt;
      json pod = json::parse(r.body, nullptr, false);
      if (!pod.is_object() ||
          !pod["metadata"].value("labels", json::object()).contains("kueue.x-k8s.io/queue-name"))
        return std::nullopt;
      pod["metadata"]["labels"]["kueue.x-k8s.io/managed"] = "true";
      pod["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] = "a1b2c3d4";
      pod["metadata"]["finalizers"].push_back("kueue.x-k8s.io/managed");
      pod["spec"]["schedulingGates"].push_back({{"name", "kueue.x-k8s.io/admission"}});
      r.body = pod.dump();
      return std::nullopt;
    };
  }
  std::vector<json> sent() {
    std::lock_guard l(mu);
    return patches;
  }
};

json only_host_pod(FlakyHost& host) {
  json items = admin_call(*host.host.api, "GET", kHostPods)["body"]["items"];
  REQUIRE(items.size() == 1);
  return items[0];
}

// KAI's pod grouper (pod-group-name, subgroup label) and binder (GPU group
// label, received-resource-type) on a host pod.
void kai_marks(FlakyHost& host, const std::string& hpath) {
  REQUIRE(
      merge_patch(
          host.host, hpath,
          {{"metadata",
            {{"labels", {{"runai-gpu-group", "g-host-1"}, {"kai.scheduler/subgroup-name", "sg"}}},
             {"annotations",
              {{"pod-group-name", "pg-vkube-anchor-1234"},
               {"received-resource-type", "Fraction"}}}}}}) == 200);
}

}  // namespace

TEST_CASE("the syncer never takes away what Kueue and KAI add to a host pod",
          "[host-controllers]") {
  FlakyHost host;
  HostControllers controllers;
  controllers.install(host);
  ApiServerOverStore tenant_api;
  make_default_namespace(tenant_api);
  auto so = Tenant::defaults();
  so.host_policy.labels = {{"kueue.x-k8s.io/queue-name", "vkube"}};
  Tenant tenant(tenant_api, host, so);
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "w"}, {"labels", {{"app", "a"}}}, {"annotations", {{"note", "one"}}}}},
      {"spec", {{"containers", {{{"name", "c"}, {"image", "trainer:1"}}}}}}};
  REQUIRE(admin_call(*tenant_api.api, "POST", kTenantPods, pod)["code"] == 201);
  REQUIRE(eventually([&] { return host.pods() == 1; }));
  json hpod = only_host_pod(host);
  REQUIRE(hpod["spec"]["schedulingGates"][0]["name"] == "kueue.x-k8s.io/admission");
  const std::string hpath = kHostPods + "/" + hpod["metadata"]["name"].get<std::string>();
  kai_marks(host, hpath);

  // The tenant changes its labels, annotations and image: the syncer patches.
  REQUIRE(
      merge_patch(tenant_api, kTenantPods + "/w",
                  {{"metadata", {{"labels", {{"app", "b"}}}, {"annotations", {{"note", nullptr}}}}},
                   {"spec", {{"containers", {{{"name", "c"}, {"image", "trainer:2"}}}}}}}) == 200);
  REQUIRE(eventually([&] {
    json h = only_host_pod(host);
    return h["metadata"]["labels"].value("app", "") == "b" &&
           !h["metadata"]["annotations"].contains("note") &&
           h["spec"]["containers"][0]["image"] == "trainer:2";
  }));

  json h = only_host_pod(host);
  const json& labels = h["metadata"]["labels"];
  const json& annotations = h["metadata"]["annotations"];
  CHECK(labels.value("kueue.x-k8s.io/managed", "") == "true");
  CHECK(labels.value("kueue.x-k8s.io/queue-name", "") == "vkube");
  CHECK(labels.value("runai-gpu-group", "") == "g-host-1");
  CHECK(labels.value("kai.scheduler/subgroup-name", "") == "sg");
  CHECK(annotations.value("kueue.x-k8s.io/role-hash", "") == "a1b2c3d4");
  CHECK(annotations.value("pod-group-name", "") == "pg-vkube-anchor-1234");
  CHECK(annotations.value("received-resource-type", "") == "Fraction");
  CHECK(h["metadata"]["finalizers"] == json::array({"kueue.x-k8s.io/managed"}));
  CHECK(h["spec"]["schedulingGates"] == json::array({{{"name", "kueue.x-k8s.io/admission"}}}));

  // Kueue admits the pod: it lifts its gate. A later sync puts none back.
  REQUIRE(merge_patch(host.host, hpath, {{"spec", {{"schedulingGates", nullptr}}}}) == 200);
  REQUIRE(merge_patch(tenant_api, kTenantPods + "/w",
                      {{"metadata", {{"labels", {{"app", "c"}}}}}}) == 200);
  REQUIRE(eventually(
      [&] { return only_host_pod(host)["metadata"]["labels"].value("app", "") == "c"; }));
  CHECK_FALSE(only_host_pod(host)["spec"].contains("schedulingGates"));

  // No patch the syncer sent named a key of the host's controllers.
  const std::set<std::string> theirs = {"kueue.x-k8s.io/managed", "kueue.x-k8s.io/role-hash",
                                        "runai-gpu-group",        "kai.scheduler/subgroup-name",
                                        "pod-group-name",         "received-resource-type"};
  const std::vector<json> sent = controllers.sent();
  CHECK(sent.size() >= 2);
  for (const json& p : sent) {
    INFO(p.dump());
    const json meta = p.value("metadata", json::object());
    for (const char* map : {"labels", "annotations"}) {
      const json keys = meta.value(map, json::object());
      for (auto it = keys.begin(); it != keys.end(); ++it) CHECK_FALSE(theirs.count(it.key()));
    }
    CHECK_FALSE(meta.contains("finalizers"));
    CHECK_FALSE(p.value("spec", json::object()).contains("schedulingGates"));
  }
}

TEST_CASE("a tenant cannot write KAI's binder's marks onto its host pod", "[host-controllers]") {
  FlakyHost host;
  ApiServerOverStore tenant_api;
  make_default_namespace(tenant_api);
  auto so = Tenant::defaults();
  so.host_policy.scheduler_name = "kai-scheduler";
  so.host_policy.labels = {{"kai.scheduler/queue", "vkube-t"}};
  Tenant tenant(tenant_api, host, so);
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", "w"},
                {"labels", {{"app", "a"}, {"runai-gpu-group", "someone-elses"}}},
                {"annotations", {{"received-resource-type", "Regular"}}}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "trainer"}}}}}}};
  REQUIRE(admin_call(*tenant_api.api, "POST", kTenantPods, pod)["code"] == 201);
  REQUIRE(eventually([&] { return host.pods() == 1; }));
  json hpod = only_host_pod(host);
  CHECK_FALSE(hpod["metadata"]["labels"].contains("runai-gpu-group"));
  CHECK_FALSE(
      hpod["metadata"].value("annotations", json::object()).contains("received-resource-type"));
  const std::string hpath = kHostPods + "/" + hpod["metadata"]["name"].get<std::string>();

  // KAI binds it; the tenant's next change does not write its own value back.
  kai_marks(host, hpath);
  REQUIRE(merge_patch(tenant_api, kTenantPods + "/w",
                      {{"metadata", {{"labels", {{"app", "b"}}}}}}) == 200);
  REQUIRE(eventually(
      [&] { return only_host_pod(host)["metadata"]["labels"].value("app", "") == "b"; }));
  json h = only_host_pod(host);
  CHECK(h["metadata"]["labels"].value("runai-gpu-group", "") == "g-host-1");
  CHECK(h["metadata"]["annotations"].value("received-resource-type", "") == "Fraction");
}
