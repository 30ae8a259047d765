// `kubectl top` in a plain tenant (`vkube create` on `vkube host`, pods on
// simulated nodes, no --unsandboxed-local-pods): a running simulated pod
// shows a simulated usage (half its requests, or its sim.vkube.io/*-usage
// annotations), its node the sum plus a base, and the metrics say they are
// simulated. Before, `kubectl top pods` said "metrics not available yet".
#include <sstream>

#include "fixture.h"

namespace vkube::e2e {
namespace {

constexpr const char* kDeployments = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx
        resources: {requests: {cpu: 200m, memory: 128Mi}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pinned
spec:
  replicas: 1
  selector: {matchLabels: {app: pinned}}
  template:
    metadata:
      labels: {app: pinned}
      annotations: {sim.vkube.io/cpu-usage: 250m, sim.vkube.io/memory-usage: 300Mi}
    spec:
      containers:
      - name: nginx
        image: nginx
        resources: {requests: {cpu: 100m, memory: 64Mi}}
)";

// The columns of the first row of `table` whose name starts with `prefix`.
std::vector<std::string> row(const std::string& table, const std::string& prefix) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream words(line);
    std::vector<std::string> cols;
    for (std::string w; words >> w;) cols.push_back(w);
    return cols;
  }
  return {};
}

bool nonzero(const std::string& quantity) {
  return !quantity.empty() && quantity[0] >= '1' && quantity[0] <= '9';
}

TEST_CASE("kubectl top shows simulated usage of simulated pods in a plain tenant", "[e2e][top]") {
  Cluster host(Cluster::Host{});
  const std::string kubeconfig = host.dir() + "/plain.kubeconfig";
  REQUIRE_THAT(host.run({VKUBE_BINARY, "create", "plain", "--kubeconfig", host.kubeconfig(),
                         "--out", kubeconfig},
                        seconds(90)),
               Succeeded());
  auto kubectl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {kubectl_path(), "--kubeconfig", kubeconfig});
    return host.run(args, seconds(30));
  };
  REQUIRE_THAT(kubectl({"apply", "-f", host.file("deploy.yaml", kDeployments)}), Succeeded());
  for (const char* app : {"app=web", "app=pinned"}) {
    Result running;
    const bool up = eventually(
        [&] {
          running = kubectl({"get", "pods", "-l", app, "-o", "jsonpath={.items[*].status.phase}"});
          return running.out == "Running";
        },
        seconds(60));
    INFO(app << ": " << running);
    REQUIRE(up);
  }

  Result pods;
  const bool listed = eventually(
      [&] {
        pods = kubectl({"top", "pods"});
        return pods.exit_code == 0 && !row(pods.out, "web-").empty() &&
               !row(pods.out, "pinned-").empty();
      },
      seconds(30));
  INFO(pods);
  REQUIRE(listed);
  // Half of the requests (200m, 128Mi), as documented in docs/tenants.md.
  const std::vector<std::string> web = row(pods.out, "web-");
  REQUIRE(web.size() == 3);
  CHECK(nonzero(web[1]));
  CHECK(nonzero(web[2]));
  CHECK(web[1] == "100m");
  CHECK(web[2] == "64Mi");
  // The annotations win over the requests.
  const std::vector<std::string> pinned = row(pods.out, "pinned-");
  REQUIRE(pinned.size() == 3);
  CHECK(pinned[1] == "250m");
  CHECK(pinned[2] == "300Mi");

  // Marked as simulated, as the nodes are.
  Result raw = kubectl({"get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods"});
  INFO(raw);
  CHECK(raw.out.find("vkube.io/simulated") != std::string::npos);

  const std::string node =
      kubectl({"get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].spec.nodeName}"}).out;
  REQUIRE_FALSE(node.empty());
  Result nodes;
  const bool shown = eventually(
      [&] {
        nodes = kubectl({"top", "nodes"});
        return nodes.exit_code == 0 && !row(nodes.out, node).empty();
      },
      seconds(30));
  INFO(nodes);
  REQUIRE(shown);
  // NAME CPU(cores) CPU(%) MEMORY(bytes) MEMORY(%): at least the web pod's
  // usage plus the node's base.
  const std::vector<std::string> n = row(nodes.out, node);
  REQUIRE(n.size() >= 5);
  CHECK(nonzero(n[1]));
  CHECK(nonzero(n[3]));
  CHECK(n[1] != "<unknown>");
}

}  // namespace
}  // namespace vkube::e2e
