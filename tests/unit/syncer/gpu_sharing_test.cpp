// Gang markers reach the host scheduler in its own words; borrowing comes
// back to the tenant as a pod condition (issue 38).
#include <catch2/catch.hpp>

#include "vkube/syncer/gpu_sharing.h"
#include "vkube/syncer/translate_back.h"
#include "vkube/syncer/translate_pod.h"

using json = nlohmann::json;
using vkube::syncer::NameMapper;
using vkube::syncer::PodContext;

namespace {

json tenant_pod(const json& labels, const json& annotations, const std::string& ns = "ml") {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "worker-0"}, {"namespace", ns}, {"uid", "u-1"}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "trainer"}}}}}}};
  if (!labels.empty()) pod["metadata"]["labels"] = labels;
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  return pod;
}

vkube::Result<json> to_host(const json& pod, const NameMapper& names) {
  PodContext ctx;
  ctx.names = &names;
  ctx.host_namespace = "vkube-a";
  return vkube::syncer::translate_pod(pod, ctx);
}

json host_annotations(const json& pod) {
  NameMapper names("a");
  auto host = to_host(pod, names);
  REQUIRE(host.is_ok());
  return (*host)["metadata"]["annotations"];
}

}  // namespace

TEST_CASE("each gang marker users write becomes the host scheduler's pod group", "[gang-sync]") {
  NameMapper names("a");
  const std::string group = names.host_name("ml", "llama");
  struct Row {
    const char* what;
    json labels, annotations;
    std::string size;
  };
  const Row rows[] = {
      {"vkube's own annotations",
       json::object(),
       {{"vkube.io/pod-group", "llama"}, {"vkube.io/pod-group-size", "4"}},
       "4"},
      {"coscheduling's label, size from vkube",
       {{"scheduling.x-k8s.io/pod-group", "llama"}},
       {{"vkube.io/pod-group-size", "8"}},
       "8"},
      {"lightweight coscheduling's labels",
       {{"pod-group.scheduling.sigs.k8s.io/name", "llama"},
        {"pod-group.scheduling.sigs.k8s.io/min-available", "3"}},
       json::object(),
       "3"},
      {"Kueue's plain pod group",
       {{"kueue.x-k8s.io/pod-group-name", "llama"}},
       {{"kueue.x-k8s.io/pod-group-total-count", "2"}},
       "2"},
      {"KAI's annotation, size from vkube",
       json::object(),
       {{"pod-group-name", "llama"}, {"vkube.io/pod-group-size", "16"}},
       "16"},
      {"Volcano's annotation, size from vkube",
       json::object(),
       {{"scheduling.k8s.io/group-name", "llama"}, {"vkube.io/pod-group-size", "10000"}},
       "10000"},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    json a = host_annotations(tenant_pod(r.labels, r.annotations));
    CHECK(a["vkube.io/pod-group"] == group);
    CHECK(a["vkube.io/pod-group-size"] == r.size);
    // The tenant's own markers do not travel: a scheduler on the host would
    // read them as a group of the whole host namespace.
    CHECK_FALSE(a.contains("pod-group-name"));
    CHECK_FALSE(a.contains("kueue.x-k8s.io/pod-group-total-count"));
  }
}

TEST_CASE("pod groups of one name in two tenant namespaces stay two groups", "[gang-sync]") {
  json a = host_annotations(
      tenant_pod({}, {{"vkube.io/pod-group", "g"}, {"vkube.io/pod-group-size", "2"}}, "ml"));
  json b = host_annotations(
      tenant_pod({}, {{"vkube.io/pod-group", "g"}, {"vkube.io/pod-group-size", "2"}}, "web"));
  CHECK(a["vkube.io/pod-group"] != b["vkube.io/pod-group"]);
}

TEST_CASE("a group named without a size is no gang; a pod without markers gets none",
          "[gang-sync]") {
  json a = host_annotations(tenant_pod({{"scheduling.x-k8s.io/pod-group", "llama"}}, {}));
  CHECK_FALSE(a.contains("vkube.io/pod-group"));
  CHECK_FALSE(a.contains("vkube.io/pod-group-size"));
  a = host_annotations(tenant_pod({}, {{"vkube.io/pod-group", "llama"}}));
  CHECK_FALSE(a.contains("vkube.io/pod-group"));
  a = host_annotations(tenant_pod({{"app", "web"}}, {{"note", "x"}}));
  CHECK_FALSE(a.contains("vkube.io/pod-group"));
}

TEST_CASE("a malformed gang size or name keeps the pod off the host with the reason",
          "[gang-sync]") {
  NameMapper names("a");
  for (const char* size : {"0", "-1", "10001", "abc", "", "2.5", " 4", "+4", "99999999999"}) {
    INFO(size);
    auto host = to_host(
        tenant_pod({}, {{"vkube.io/pod-group", "llama"}, {"vkube.io/pod-group-size", size}}),
        names);
    REQUIRE_FALSE(host.is_ok());
    CHECK(host.status().code() == vkube::Code::kInvalid);
    CHECK_THAT(host.status().message(),
               Catch::Contains("vkube.io/pod-group-size=\"") &&
                   Catch::Contains("must be a whole number from 1 to 10000"));
  }
  auto host = to_host(
      tenant_pod({}, {{"pod-group-name", "-bad name"}, {"vkube.io/pod-group-size", "2"}}), names);
  REQUIRE_FALSE(host.is_ok());
  CHECK_THAT(host.status().message(), Catch::Contains("pod group pod-group-name=\"-bad name\""));
}

TEST_CASE("a tenant cannot claim the host scheduler's borrowing mark", "[borrowing-sync]") {
  json a = host_annotations(tenant_pod({}, {{"gpu.vkube.io/borrowing", "1000"}}));
  CHECK_FALSE(a.contains("gpu.vkube.io/borrowing"));
}

TEST_CASE("a borrowing host pod shows the tenant a GPUBorrowing condition", "[borrowing-sync]") {
  json host = {
      {"metadata", {{"name", "w-x-ml-x-a"}, {"annotations", {{"gpu.vkube.io/borrowing", "2000"}}}}},
      {"status",
       {{"phase", "Running"},
        {"conditions",
         {{{"type", "PodScheduled"},
           {"status", "True"},
           {"lastTransitionTime", "2026-12-07T10:00:00Z"}},
          {{"type", "Ready"}, {"status", "True"}}}}}}};
  json s = vkube::syncer::tenant_pod_status(host);
  REQUIRE(s["conditions"].size() == 3);
  const json& c = s["conditions"][2];
  CHECK(c["type"] == "vkube.io/GPUBorrowing");
  CHECK(c["status"] == "True");
  CHECK(c["reason"] == "BorrowingIdleGPUs");
  CHECK(c["message"] == "holds 2 GPUs beyond the tenant's deserved share; they may be reclaimed");
  CHECK(c["lastTransitionTime"] == "2026-12-07T10:00:00Z");
  // The same host pod gives the same status: no rewrite on every pass.
  CHECK(vkube::syncer::tenant_pod_status(host) == s);

  host["metadata"]["annotations"]["gpu.vkube.io/borrowing"] = "500";
  CHECK(vkube::syncer::tenant_pod_status(host)["conditions"][2]["message"] ==
        "holds 0.5 GPUs beyond the tenant's deserved share; they may be reclaimed");
  host["metadata"]["annotations"]["gpu.vkube.io/borrowing"] = "1000";
  CHECK(vkube::syncer::tenant_pod_status(host)["conditions"][2]["message"] ==
        "holds 1 GPU beyond the tenant's deserved share; it may be reclaimed");

  // Reclaimed or no longer borrowing: the condition goes with the annotation;
  // the scheduler's DisruptionTarget comes through as it is.
  host["metadata"].erase("annotations");
  host["status"]["conditions"].push_back(
      {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "PreemptionByScheduler"}});
  s = vkube::syncer::tenant_pod_status(host);
  REQUIRE(s["conditions"].size() == 3);
  CHECK(s["conditions"][2]["type"] == "DisruptionTarget");
  for (const char* bad : {"0", "x", "-5", ""}) {
    host["metadata"]["annotations"]["gpu.vkube.io/borrowing"] = bad;
    CHECK(vkube::syncer::tenant_pod_status(host)["conditions"].size() == 3);
  }
}

TEST_CASE("the host scheduler's messages name the tenant's group as the tenant wrote it",
          "[gang-sync]") {
  NameMapper names("a");
  json pod = tenant_pod({}, {{"vkube.io/pod-group", "llama"}, {"vkube.io/pod-group-size", "4"}});
  const std::string host_group = names.host_name("ml", "llama");
  CHECK(vkube::syncer::tenant_view_of_group(
            "pod group " + host_group + ": 3 of 4 pods exist; they are placed together", pod,
            names) == "pod group llama: 3 of 4 pods exist; they are placed together");
  // A pod of no group, or of another namespace's group of that name, keeps the text.
  const std::string other = "pod group " + names.host_name("web", "llama") + ": waiting";
  CHECK(vkube::syncer::tenant_view_of_group(other, pod, names) == other);
  CHECK(vkube::syncer::tenant_view_of_group("pod group " + host_group, tenant_pod({}, {}), names) ==
        "pod group " + host_group);
}
