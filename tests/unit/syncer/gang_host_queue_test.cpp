// A tenant's gang on a real host (issue 38): on a Kueue host the host pods
// of a gang also carry Kueue's plain-pod group, which is what makes Kueue
// admit them all or nothing; on KAI nothing more (its gangs need a
// PodGroup object, docs/gpu-queues.md).
#include <catch2/catch.hpp>

#include "vkube/gpu/host_queues.h"
#include "vkube/syncer/gpu_sharing.h"
#include "vkube/syncer/host_policy.h"
#include "vkube/syncer/translate_pod.h"

using json = nlohmann::json;
using vkube::gpu::HostQueueMode;
using vkube::syncer::HostPolicy;
using vkube::syncer::NameMapper;

namespace {

json tenant_pod(const json& labels, const json& annotations) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "worker-0"}, {"namespace", "ml"}, {"uid", "u-1"}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "trainer"}}}}}}};
  if (!labels.empty()) pod["metadata"]["labels"] = labels;
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  return pod;
}

// The policy `vkube create --host-gpu-sharing <mode>` gives the tenant's syncer.
HostPolicy policy_for(HostQueueMode mode) {
  auto share = vkube::gpu::parse_gpu_share("deserved=4,limit=6");
  REQUIRE(share.is_ok());
  vkube::gpu::HostQueuePodPolicy p = vkube::gpu::host_queue_pod_policy(mode, *share, "a");
  HostPolicy policy;
  policy.scheduler_name = p.scheduler_name;
  policy.labels = p.labels;
  return policy;
}

vkube::Result<json> to_host(const json& pod, const HostPolicy& policy) {
  static const NameMapper names("a");
  vkube::syncer::PodContext ctx;
  ctx.names = &names;
  ctx.host_namespace = "vkube-a";
  ctx.policy = &policy;
  return vkube::syncer::translate_pod(pod, ctx);
}

std::string at(const json& pod, const char* map, const char* key) {
  const json m = pod["metadata"].value(map, json::object());
  return m.contains(key) ? m[key].get<std::string>() : "<none>";
}

}  // namespace

TEST_CASE("on a Kueue host a gang's pods carry Kueue's pod group as well", "[gang-sync]") {
  const NameMapper names("a");
  const std::string group = names.host_name("ml", "llama");
  const HostPolicy kueue = policy_for(HostQueueMode::kKueue);
  const HostPolicy kai = policy_for(HostQueueMode::kKai);
  const HostPolicy plain;  // vkube host
  struct Row {
    const char* what;
    const HostPolicy* policy;
    json labels, annotations;
    std::string kueue_group, kueue_count;  // "<none>": not carried
    bool gang;                             // the host's vkube.io/pod-group
  };
  const Row rows[] = {
      {"Kueue host, vkube's markers (a Job's gang)", &kueue, json::object(),
       json{{"vkube.io/pod-group", "llama"}, {"vkube.io/pod-group-size", "4"}}, group, "4", true},
      {"Kueue host, the tenant wrote Kueue's own markers", &kueue,
       json{{"kueue.x-k8s.io/pod-group-name", "llama"}},
       json{{"kueue.x-k8s.io/pod-group-total-count", "2"}}, group, "2", true},
      {"Kueue host, coscheduling's label", &kueue, json{{"scheduling.x-k8s.io/pod-group", "llama"}},
       json{{"vkube.io/pod-group-size", "8"}}, group, "8", true},
      {"Kueue host, a group without a size is no gang", &kueue, json::object(),
       json{{"vkube.io/pod-group", "llama"}}, "<none>", "<none>", false},
      {"Kueue host, no group", &kueue, json{{"app", "web"}}, json::object(), "<none>", "<none>",
       false},
      {"KAI host: no Kueue keys", &kai, json::object(),
       json{{"vkube.io/pod-group", "llama"}, {"vkube.io/pod-group-size", "4"}}, "<none>", "<none>",
       true},
      {"vkube host: the tenant's Kueue markers do not travel raw", &plain,
       json{{"kueue.x-k8s.io/pod-group-name", "llama"}},
       json{{"kueue.x-k8s.io/pod-group-total-count", "2"}}, "<none>", "<none>", true},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    auto host = to_host(tenant_pod(r.labels, r.annotations), *r.policy);
    REQUIRE(host.is_ok());
    CHECK(at(*host, "labels", "kueue.x-k8s.io/pod-group-name") == r.kueue_group);
    CHECK(at(*host, "annotations", "kueue.x-k8s.io/pod-group-total-count") == r.kueue_count);
    // The host's own gang annotations stay as on every host.
    CHECK(at(*host, "annotations", "vkube.io/pod-group") == (r.gang ? group : "<none>"));
    if (r.policy == &kueue) CHECK(at(*host, "labels", "kueue.x-k8s.io/queue-name") == "vkube");
  }
}

TEST_CASE("on a Kueue host a group Kueue cannot name a Workload after is refused", "[gang-sync]") {
  const HostPolicy kueue = policy_for(HostQueueMode::kKueue);
  for (const char* name : {"Llama", "llama_2", "a.-b"}) {
    INFO(name);
    json pod = tenant_pod({}, {{"vkube.io/pod-group", name}, {"vkube.io/pod-group-size", "2"}});
    auto host = to_host(pod, kueue);
    REQUIRE_FALSE(host.is_ok());
    CHECK(host.status().code() == vkube::Code::kInvalid);
    CHECK_THAT(host.status().message(),
               Catch::StartsWith("pod group \"" + std::string(name) + "\": ") &&
                   Catch::Contains("Kueue on the host names a Workload after the group"));
    // Elsewhere such a group is fine (vkube host's scheduler reads annotations).
    CHECK(to_host(pod, HostPolicy()).is_ok());
  }
  // A long name is shortened with a hash by the NameMapper: still a valid label value.
  const std::string long_name(60, 'g');
  auto host = to_host(
      tenant_pod({}, {{"vkube.io/pod-group", long_name}, {"vkube.io/pod-group-size", "3"}}), kueue);
  REQUIRE(host.is_ok());
  CHECK(at(*host, "labels", "kueue.x-k8s.io/pod-group-name").size() <= 63);
  CHECK(at(*host, "annotations", "kueue.x-k8s.io/pod-group-total-count") == "3");
}

TEST_CASE("apply_host_queue_gang reads the host's gang annotations only", "[gang-sync]") {
  std::map<std::string, std::string> labels = {{"kueue.x-k8s.io/queue-name", "vkube"}};
  json pod = {{"metadata",
               {{"annotations",
                 {{"vkube.io/pod-group", "g-x-ml-x-a"}, {"vkube.io/pod-group-size", "2"}}}}}};
  REQUIRE(vkube::syncer::apply_host_queue_gang(json::object(), labels, pod).is_ok());
  CHECK(pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == "g-x-ml-x-a");
  CHECK(pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == "2");
  json bare = {{"metadata", json::object()}};
  REQUIRE(vkube::syncer::apply_host_queue_gang(json::object(), labels, bare).is_ok());
  CHECK(bare == json{{"metadata", json::object()}});
}
