// A tenant's PodDisruptionBudget on the host (issue 37): the syncer copies it
// into the tenant's host namespace, selecting the tenant's host pods, so a
// host operator's `kubectl drain` (pods/eviction) is refused as the tenant's
// budget asks; the host copy goes with the tenant's budget. Before, host
// drains evicted tenant pods whatever their budgets said.
#include <algorithm>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

constexpr const char* kWeb = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27"}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
)";

TEST_CASE("a tenant's disruption budget holds a host drain and goes with the tenant's",
          "[e2e][pdb-sync]") {
  Cluster host(Cluster::Host{});
  const std::string name = "budget", host_ns = "vkube-budget";
  const std::string kubeconfig = host.dir() + "/" + name + ".kubeconfig";
  REQUIRE_THAT(host.run({VKUBE_BINARY, "create", name, "--kubeconfig", host.kubeconfig(), "--out",
                         kubeconfig},
                        seconds(90)),
               Succeeded());
  auto tenant = [&](std::vector<std::string> args, seconds timeout = seconds(30)) {
    args.insert(args.begin(), {kubectl_path(), "--kubeconfig", kubeconfig});
    return host.run(args, timeout);
  };
  REQUIRE_THAT(tenant({"apply", "-f", host.file("web.yaml", kWeb)}), Succeeded());
  Result rollout = tenant({"rollout", "status", "deployment/web", "--timeout=60s"}, seconds(70));
  INFO(rollout);
  REQUIRE_THAT(rollout, Succeeded());

  // The host copy: the tenant's budget, its selector narrowed to this
  // tenant namespace's host pods.
  const std::string host_pdb = "web-x-default-x-budget";
  json pdb;
  const bool copied = eventually(
      [&] {
        Result r = host.kubectl({"get", "pdb", host_pdb, "-n", host_ns, "-o", "json"});
        if (r.exit_code != 0) return false;
        pdb = json::parse(r.out, nullptr, false);
        return pdb.is_object() && pdb["status"].value("currentHealthy", 0) == 2;
      },
      seconds(30));
  INFO(pdb.dump(2) << host.kubectl({"get", "pdb", "-A"}));
  REQUIRE(copied);
  CHECK(pdb["spec"]["minAvailable"] == 2);
  const json labels = pdb["spec"]["selector"]["matchLabels"];
  CHECK(labels["app"] == "web");
  CHECK(labels["vkube.io/tenant"] == name);
  CHECK(labels["vkube.io/tenant-namespace"] == "default");
  CHECK(pdb["metadata"]["labels"]["vkube.io/tenant"] == name);
  CHECK(pdb["status"].value("disruptionsAllowed", -1) == 0);

  // The host operator drains a node a tenant pod runs on: every eviction of
  // the tenant's pods is refused until kubectl gives up. (Only the web pods:
  // the tenant's own API server pod has no budget and must stay up. Host
  // pods of a tenant declare no host controller: --force lets drain evict
  // them, still through pods/eviction.)
  Result where = host.kubectl(
      {"get", "pods", "-n", host_ns, "-l", "app=web", "-o", "jsonpath={.items[0].spec.nodeName}"});
  REQUIRE_THAT(where, Succeeded());
  const std::string node = where.out;
  REQUIRE_FALSE(node.empty());
  Result held = host.kubectl(
      {"drain", node, "--ignore-daemonsets", "--pod-selector=app=web", "--force", "--timeout=10s"},
      seconds(40));
  INFO(held);
  CHECK(held.exit_code != 0);
  CHECK(held.output().find("Cannot evict pod as it would violate the pod's disruption budget") !=
        std::string::npos);
  Result count = tenant({"get", "pods", "-l", "app=web", "-o", "name"});
  CHECK(std::count(count.out.begin(), count.out.end(), '\n') == 2);
  REQUIRE_THAT(host.kubectl({"uncordon", node}), Succeeded());

  // The tenant's budget deleted: the host's goes too.
  REQUIRE_THAT(tenant({"delete", "pdb", "web"}), Succeeded());
  Result left;
  const bool gone = eventually(
      [&] {
        left = host.kubectl({"get", "pdb", "-n", host_ns, "-o", "name"});
        return left.exit_code == 0 && left.out.find(host_pdb) == std::string::npos;
      },
      seconds(30));
  INFO(left);
  CHECK(gone);
}

}  // namespace
}  // namespace vkube::e2e
