// Gang admission seen from a tenant (issue 38): `vkube host` with one node
// of 8 GPUs and a tenant (`vkube serve --host-kubeconfig`), real kubectl on
// both. An Indexed Job that runs every index at once reaches the host as one
// pod group (the host's annotations, checked with kubectl on the host), runs,
// and its pods say in the tenant that they borrow (the operator gives the
// tenant a share of no GPUs); a gang that does not fit waits whole; a malformed gang size is
// refused with a SyncError event and never reaches the host.
#include <set>
#include <thread>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

// An Indexed Job of `n` one-GPU pods that run for an hour.
std::string gang_job(const std::string& name, int n) {
  const std::string count = std::to_string(n);
  return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name +
         "}\nspec:\n  completionMode: Indexed\n  completions: " + count +
         "\n  parallelism: " + count +
         "\n  template:\n    metadata:\n      annotations: {sim.vkube.io/duration: 1h}\n"
         "    spec:\n      restartPolicy: Never\n      containers:\n      - name: rank\n"
         "        image: example.com/train:1\n        resources: {limits: {nvidia.com/gpu: 1}}\n";
}

constexpr const char* kBadPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: odd
  annotations: {vkube.io/pod-group: odd, vkube.io/pod-group-size: "0"}
spec:
  containers:
  - {name: main, image: busybox:1.36}
)";

json items(Cluster& c, std::vector<std::string> args) {
  return c.get_json(std::move(args))["items"];
}

std::string annotation(const json& obj, const std::string& key) {
  return obj["metadata"].value("annotations", json::object()).value(key, "");
}

// The host pods of tenant team-g's Job `job` (by the label its pods carry).
json host_job_pods(Cluster& host, const std::string& job) {
  return items(host, {"pods", "-n", "vkube-team-g", "-l", "batch.kubernetes.io/job-name=" + job});
}

json condition(const json& pod, const std::string& type) {
  for (const json& c : pod["status"].value("conditions", json::array()))
    if (c.value("type", "") == type) return c;
  return nullptr;
}

}  // namespace

TEST_CASE("a tenant's Indexed Job reaches the host as one gang; borrowing shows in the tenant",
          "[e2e][gang-sync]") {
  Cluster host(Cluster::Host{{"--nodes", "1"}, {}});
  Cluster tenant(Cluster::Serve{{"--name", "team-g", "--host-kubeconfig", host.kubeconfig()}});

  // The operator gives team-g a share of none: whatever it holds, it borrows.
  REQUIRE(eventually(
      [&] {
        return host.kubectl({"annotate", "namespace", "vkube-team-g",
                             "vkube.io/gpu-share=deserved=0", "--overwrite"})
                   .exit_code == 0;
      },
      seconds(20)));

  tenant.setup(gang_job("train", 3));
  json hpods;
  REQUIRE(eventually(
      [&] {
        hpods = host_job_pods(host, "train");
        return hpods.size() == 3;
      },
      seconds(30)));
  // The host's gang annotations, the group named in the tenant's namespace.
  for (const json& p : hpods) {
    INFO(p["metadata"].dump());
    CHECK(annotation(p, "vkube.io/pod-group") == "train-x-default-x-team-g");
    CHECK(annotation(p, "vkube.io/pod-group-size") == "3");
  }
  for (const json& p : items(tenant, {"pods", "-l", "batch.kubernetes.io/job-name=train"})) {
    CHECK(annotation(p, "vkube.io/pod-group") == "train");
    CHECK(annotation(p, "vkube.io/pod-group-size") == "3");
  }

  // All three run; the tenant deserves no GPUs, so each borrows one, and says so.
  json tpods;
  bool borrowing = eventually(
      [&] {
        tpods = items(tenant, {"pods", "-l", "batch.kubernetes.io/job-name=train"});
        int n = 0;
        for (const json& p : tpods) {
          json c = condition(p, "vkube.io/GPUBorrowing");
          n += p["status"].value("phase", "") == "Running" && !c.is_null() &&
               c.value("status", "") == "True";
        }
        return n == 3;
      },
      seconds(40));
  INFO(tpods.dump(1) << host.server_log());
  REQUIRE(borrowing);
  json c = condition(tpods[0], "vkube.io/GPUBorrowing");
  CHECK(c["reason"] == "BorrowingIdleGPUs");
  CHECK(c["message"] == "holds 1 GPU beyond the tenant's deserved share; it may be reclaimed");
  for (const json& p : host_job_pods(host, "train"))
    CHECK(annotation(p, "gpu.vkube.io/borrowing") == "1000");

  // Six more ranks need 6 GPUs and 5 are idle: none of them is placed.
  tenant.setup(gang_job("big", 6));
  REQUIRE(eventually([&] { return host_job_pods(host, "big").size() == 6; }, seconds(30)));
  std::this_thread::sleep_for(seconds(3));  // time for a scheduler that placed some
  std::set<std::string> pending_messages;
  for (const json& p : host_job_pods(host, "big")) {
    CHECK(p["spec"].value("nodeName", "") == "");
    json s = condition(p, "PodScheduled");
    if (!s.is_null()) pending_messages.insert(s.value("message", ""));
  }
  INFO(json(pending_messages).dump());
  CHECK(eventually(
      [&] {
        for (const json& p : items(tenant, {"pods", "-l", "batch.kubernetes.io/job-name=big"})) {
          json s = condition(p, "PodScheduled");
          // The group as the tenant knows it (Job big), not its host name.
          if (s.is_null() || s.value("status", "") != "False" ||
              s.value("message", "").find("pod group big: ") == std::string::npos)
            return false;
        }
        return true;
      },
      seconds(30)));  // the status copy waits behind the syncer's queue on a loaded machine

  // A malformed gang size: the pod stays in the tenant, which is told why.
  tenant.setup(kBadPod);
  CHECK(eventually(
      [&] {
        for (const json& e :
             items(tenant, {"events", "--field-selector", "involvedObject.name=odd"}))
          if (e.value("reason", "") == "SyncError" &&
              e.value("message", "")
                      .find("vkube.io/pod-group-size=\"0\" must be a whole number "
                            "from 1 to 10000") != std::string::npos)
            return true;
        return false;
      },
      seconds(20)));
  for (const json& p : items(host, {"pods", "-n", "vkube-team-g"}))
    CHECK(annotation(p, "vkube.io/tenant-name") != "odd");
}

}  // namespace vkube::e2e
