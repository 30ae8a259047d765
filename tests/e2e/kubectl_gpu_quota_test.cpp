// A tenant served with --gpu-quota: kubectl learns at create that a GPU pod
// past the quota is refused, in kube ResourceQuota's words, and a malformed
// quota stops `vkube serve` at start.
#include "fixture.h"

namespace vkube::e2e {
namespace {

std::string gpu_pod(const std::string& name, int gpus) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
         "\nspec:\n  containers:\n  - name: train\n    image: cuda\n    resources:\n"
         "      limits:\n        nvidia.com/gpu: " +
         std::to_string(gpus) + "\n";
}

}  // namespace

TEST_CASE("kubectl: a GPU pod past the tenant's GPU quota is refused", "[e2e]") {
  Cluster c(Cluster::Serve{{"--gpu-quota", "gpus=2"}});
  Result first = c.kubectl({"apply", "-f", c.file("big.yaml", gpu_pod("big", 2))});
  INFO(first);
  REQUIRE_THAT(first, Succeeded());

  const std::string train = c.file("train.yaml", gpu_pod("train", 1));
  Result refused = c.kubectl({"apply", "-f", train});
  INFO(refused);
  CHECK_THAT(refused, FailedWith("Error from server (Forbidden)"));
  CHECK_THAT(refused, FailedWith("pods \"train\" is forbidden: exceeded quota: vkube-gpu-quota, "
                                 "requested: requests.nvidia.com/gpu=1, used: "
                                 "requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2"));
  CHECK_THAT(c.kubectl({"get", "pod", "train"}), FailedWith("NotFound"));
  CHECK_THAT(c.server_log(), Catch::Contains("GPU quota enforced at pod create"));

  // Once the first pod is gone its GPUs are free again.
  REQUIRE_THAT(c.kubectl({"delete", "pod", "big"}), Succeeded());
  Result admitted = c.kubectl({"apply", "-f", train});
  INFO(admitted);
  CHECK_THAT(admitted, Succeeded());
}

TEST_CASE("vkube serve refuses a malformed --gpu-quota at start", "[e2e]") {
  CHECK_THROWS_WITH(Cluster(Cluster::Serve{{"--gpu-quota", "gpus=two"}}),
                    Catch::Contains("--gpu-quota: invalid GPU quota item \"gpus=two\": gpus must "
                                    "be a whole number, 0 or more, got \"two\""));
}

}  // namespace vkube::e2e
