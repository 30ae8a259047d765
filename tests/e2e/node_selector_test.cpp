// A dedicated tenant (`vkube create --node-selector`, the benchmark's
// "dedicated" configuration): `vkube host` with two teams' nodes, labelled
// vkube.io/team a and b; tenant t gets team a's. Its pods land only on team
// a's nodes, whatever they ask; asking for team b is refused with the reason;
// `kubectl get nodes` in the tenant shows its slice. Real kubectl throughout.
#include <algorithm>
#include <map>
#include <set>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

constexpr const char* kNodes = R"(nodes:
- name: a
  count: 2
  gpus: 2
  model: T4
  labels: {vkube.io/team: a}
- name: b
  count: 2
  gpus: 2
  model: T4
  labels: {vkube.io/team: b}
)";

const std::set<std::string> kTeamA = {"a-0", "a-1"};

std::string pod(const std::string& name, const std::string& extra_spec) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n" + extra_spec +
         "  containers:\n  - name: main\n    image: example.com/app:1\n"
         "    resources: {requests: {cpu: 100m}}\n";
}

Result tenant_kubectl(Cluster& host, const std::string& kubeconfig, std::vector<std::string> args) {
  args.insert(args.begin(), {kubectl_path(), "--kubeconfig", kubeconfig});
  return host.run(args, seconds(30));
}

// Host node of each placed host pod of tenant t, by its tenant pod name.
std::map<std::string, std::string> host_nodes(Cluster& host) {
  std::map<std::string, std::string> out;
  const json pods = host.get_json({"pods", "-n", "vkube-t"});
  for (const json& p : pods["items"]) {
    const std::string tenant_name =
        p["metadata"].value("annotations", json::object()).value("vkube.io/tenant-name", "");
    const std::string node = p["spec"].value("nodeName", "");
    if (!tenant_name.empty() && !node.empty()) out[tenant_name] = node;
  }
  return out;
}

}  // namespace

TEST_CASE("a dedicated tenant's pods run only on its slice of nodes, which it sees",
          "[e2e][node-selector]") {
  Cluster host(Cluster::Host{{"--node-config", "{dir}/nodes.yaml"}, {{"nodes.yaml", kNodes}}});
  const std::string kubeconfig = host.dir() + "/t.kubeconfig";

  // A bad selector is refused before anything is made.
  Result bad =
      vkube_at(host, {"create", "t", "--node-selector", "vkube.io/team", "--out", kubeconfig});
  INFO(bad);
  CHECK_THAT(bad, FailedWith("--node-selector: node selector entry \"vkube.io/team\": expected "
                             "key=value"));
  CHECK_THAT(host.kubectl({"get", "namespace", "vkube-t"}), FailedWith("NotFound"));

  Result made =
      vkube_at(host, {"create", "t", "--node-selector", "vkube.io/team=a", "--out", kubeconfig});
  INFO(made);
  REQUIRE_THAT(made, Succeeded());
  const json sts = host.get_json({"statefulset", "vkube", "-n", "vkube-t"});
  const json args = sts["spec"]["template"]["spec"]["containers"][0]["args"];
  CHECK(std::count(args.begin(), args.end(), json("--host-node-selector=vkube.io/team=a")) == 1);
  auto kubectl = [&](std::vector<std::string> a) {
    return tenant_kubectl(host, kubeconfig, std::move(a));
  };

  // The tenant's view of nodes is its slice, before any pod runs.
  auto tenant_nodes = [&] {
    std::set<std::string> names;
    Result r = kubectl({"get", "nodes", "-o", "name"});
    for (const std::string& line : lines(r.out)) names.insert(line.substr(line.find('/') + 1));
    return names;
  };
  CHECK(eventually([&] { return tenant_nodes() == kTeamA; }));
  INFO(kubectl({"get", "nodes"}));
  CHECK(tenant_nodes() == kTeamA);

  // Six pods on four nodes: all on team a's two; one names team b's node
  // itself (spec.nodeName), which would bypass the host's scheduler.
  std::string yaml;
  for (int i = 0; i < 5; ++i) yaml += pod("p" + std::to_string(i), "") + "---\n";
  yaml += pod("pinned", "  nodeName: b-0\n");
  Result created = kubectl({"create", "-f", host.file("pods.yaml", yaml)});
  INFO(created);
  REQUIRE_THAT(created, Succeeded());
  std::map<std::string, std::string> placed;
  CHECK(eventually([&] { return (placed = host_nodes(host)).size() == 6; }, seconds(30)));
  INFO(host.kubectl({"get", "pods", "-n", "vkube-t", "-o", "wide"}));
  for (const auto& [name, node] : placed) {
    INFO(name << " on " << node);
    CHECK(kTeamA.count(node) == 1);
  }
  const json host_pods = host.get_json({"pods", "-n", "vkube-t"});
  for (const json& p : host_pods["items"])
    if (p["metadata"].value("annotations", json::object()).contains("vkube.io/tenant-name"))
      CHECK(p["spec"]["nodeSelector"].value("vkube.io/team", "") == "a");

  // Asking for team b's nodes is refused at once, with the reason (kube's
  // PodNodeSelector does the same), rather than left Pending forever.
  Result other = kubectl({"create", "-f",
                          host.file("b.yaml", pod("to-b",
                                                  "  nodeSelector: "
                                                  "{vkube.io/team: b}\n"))});
  INFO(other);
  CHECK_THAT(other, FailedWith("spec.nodeSelector[vkube.io/team]: \"b\" conflicts with the "
                               "tenant's node selector"));
  // Its own value is fine; so is narrowing by node affinity to one of its nodes' labels.
  Result own =
      kubectl({"create", "-f",
               host.file("a.yaml", pod("to-a",
                                       "  nodeSelector: {vkube.io/team: a}\n  affinity:\n"
                                       "    nodeAffinity:\n"
                                       "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                                       "        nodeSelectorTerms:\n"
                                       "        - matchExpressions:\n"
                                       "          - {key: vkube.io/team, operator: In, values: "
                                       "[a, b]}\n"))});
  INFO(own);
  REQUIRE_THAT(own, Succeeded());
  CHECK(eventually([&] { return kTeamA.count(host_nodes(host)["to-a"]) == 1; }, seconds(30)));

  // Still only its slice: pods ran on both of its nodes, none on team b's.
  CHECK(tenant_nodes() == kTeamA);
}

TEST_CASE("the tenant chart renders hostPolicy.nodeSelector as --host-node-selector",
          "[e2e][node-selector][helm]") {
  Cluster c(Cluster::Serve{});
  const std::string chart = std::string(VKUBE_SOURCE_DIR) + "/manifests/vkube-tenant";
  Result r = helm(c, {"template", "x", chart, "--set", "hostPolicy.nodeSelector.vkube\\.io/team=a",
                      "--set", "hostPolicy.nodeSelector.zone=z1"});
  INFO(r);
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out.find("- \"--host-node-selector=vkube.io/team=a,zone=z1\"") != std::string::npos);
  // A value no node label can have is refused by the chart's schema.
  CHECK_THAT(helm(c, {"template", "x", chart, "--set", "hostPolicy.nodeSelector.zone=a b"}),
             FailedWith("hostPolicy.nodeSelector.zone"));
  // No selector: no flag (every node).
  Result plain = helm(c, {"template", "x", chart});
  CHECK(plain.out.find("--host-node-selector") == std::string::npos);
}

}  // namespace vkube::e2e
