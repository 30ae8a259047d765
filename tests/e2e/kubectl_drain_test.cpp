// kubectl drain on a `vkube host` node, through pods/eviction: a server-side
// dry run that returns and evicts nothing, a PodDisruptionBudget that holds
// the pods (429, retried until --timeout), then a drain the budget allows.
// And eviction through the raw API in a `vkube serve` tenant.
#include <set>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

constexpr const char* kNodes = R"(nodes:
- name: pool
  count: 2
  cpu: 16
  memory: 64Gi
  gpus: 1
  model: T4
)";

const char* kWorkloads = R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: "nginx:1.27"
        volumeMounts: [{name: scratch, mountPath: /scratch}]
      volumes:
      - {name: scratch, emptyDir: {}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      tolerations: [{operator: Exists}]
      containers:
      - {name: agent, image: "busybox:1.36"}
)";

const char* kBudget = R"(
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 2
  selector:
    matchLabels: {app: web}
)";

const std::string kEvicting = "Cannot evict pod as it would violate the pod's disruption budget.";

// The uids of the pods labelled app=web on `node` (all nodes when empty).
std::set<std::string> web_pods(Cluster& c, const std::string& node = "") {
  std::set<std::string> out;
  const json pods = c.get_json({"pods", "-l", "app=web"});
  for (const json& p : pods["items"])
    if (node.empty() || p["spec"].value("nodeName", "") == node)
      out.insert(p["metadata"]["uid"].get<std::string>());
  return out;
}

json budget_status(Cluster& c) {
  return c.get_json({"pdb", "web"}).value("status", json::object());
}

TEST_CASE("kubectl drain evicts through pods/eviction and honours the disruption budget",
          "[e2e][drain][host]") {
  Cluster c(Cluster::Host{{"--node-config", "{dir}/nodes.yaml"}, {{"nodes.yaml", kNodes}}});
  REQUIRE(eventually([&] { return c.get_json({"nodes"})["items"].size() == 2; }));
  c.setup(kWorkloads);
  Result rollout = c.kubectl({"rollout", "status", "deployment/web", "--timeout=60s"}, seconds(70));
  INFO(rollout << c.server_log());
  REQUIRE_THAT(rollout, Succeeded());
  REQUIRE(eventually(
      [&] {
        return c.get_json({"pods", "-l", "app=agent"})["items"].size() == 2;
      },
      seconds(30)));
  const json listed = c.get_json({"pods", "-l", "app=web"});
  const std::string node = listed["items"].at(0)["spec"].value("nodeName", "");
  const std::set<std::string> on_node = web_pods(c, node), all = web_pods(c);
  REQUIRE_FALSE(on_node.empty());
  const std::string agent_pod = "--field-selector=spec.nodeName=" + node;
  const json agent = c.get_json({"pods", "-l", "app=agent", agent_pod})["items"].at(0);

  // Without --ignore-daemonsets kubectl refuses before it evicts anything.
  CHECK_THAT(
      c.kubectl({"drain", node, "--delete-emptydir-data", "--timeout=10s"}),
      FailedWith("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"));
  REQUIRE_THAT(c.kubectl({"uncordon", node}), Succeeded());
  const std::vector<std::string> drain = {"drain", node, "--ignore-daemonsets",
                                          "--delete-emptydir-data"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = drain;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };

  // A server-side dry run answers every eviction and returns; nothing moves.
  Result dry = c.kubectl(with({"--dry-run=server", "--timeout=30s"}), seconds(40));
  INFO(dry);
  REQUIRE_THAT(dry, Succeeded());
  CHECK(dry.out.find("evicting pod default/web-") != std::string::npos);
  CHECK(dry.out.find("node/" + node + " drained (server dry run)") != std::string::npos);
  CHECK(web_pods(c) == all);
  CHECK_FALSE(c.get_json({"node", node})["spec"].value("unschedulable", false));

  // A budget that needs both replicas: every eviction is refused with 429,
  // which kubectl retries until its timeout.
  c.setup(kBudget);
  REQUIRE(eventually([&] { return budget_status(c).value("currentHealthy", 0) == 2; }));
  Result held = c.kubectl(with({"--timeout=12s"}), seconds(40));
  INFO(held);
  CHECK(held.exit_code != 0);
  CHECK(held.output().find(kEvicting) != std::string::npos);
  CHECK(web_pods(c, node) == on_node);

  // One disruption allowed: the drain evicts, waits for the replacement to be
  // ready elsewhere, evicts again, and ends with the node empty of them.
  REQUIRE_THAT(
      c.kubectl({"patch", "pdb", "web", "--type=merge", "-p", R"({"spec":{"minAvailable":1}})"}),
      Succeeded());
  REQUIRE(eventually([&] { return budget_status(c).value("disruptionsAllowed", 0) == 1; }));
  Result drained = c.kubectl(with({"--timeout=90s"}), seconds(100));
  INFO(drained << c.server_log());
  REQUIRE_THAT(drained, Succeeded());
  for (const std::string& uid : on_node) {
    INFO(uid);
    CHECK(web_pods(c).count(uid) == 0);
  }
  CHECK(drained.out.find(" evicted\n") != std::string::npos);
  CHECK(drained.out.find("node/" + node + " drained\n") != std::string::npos);
  CHECK(web_pods(c, node).empty());
  // The DaemonSet's pod stays, as drain --ignore-daemonsets leaves it.
  CHECK(c.get_json({"pod", agent["metadata"]["name"].get<std::string>()})["metadata"]["uid"] ==
        agent["metadata"]["uid"]);
  CHECK(c.get_json({"node", node})["spec"].value("unschedulable", false));
  Result ready = c.kubectl({"rollout", "status", "deployment/web", "--timeout=60s"}, seconds(70));
  CHECK_THAT(ready, Succeeded());
}

const char* kTenantPods = R"(
apiVersion: v1
kind: Pod
metadata: {name: db-0, labels: {app: db}}
spec:
  containers: [{name: c, image: "postgres:17"}]
---
apiVersion: v1
kind: Pod
metadata: {name: db-1, labels: {app: db}}
spec:
  containers: [{name: c, image: "postgres:17"}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db}
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: db}
)";

std::string eviction(const std::string& pod, bool dry_run) {
  json e = {{"apiVersion", "policy/v1"},
            {"kind", "Eviction"},
            {"metadata", {{"name", pod}, {"namespace", "default"}}}};
  if (dry_run) e["deleteOptions"] = {{"dryRun", {"All"}}};
  return e.dump();
}

TEST_CASE("a tenant evicts through the raw API; its budget refuses past minAvailable",
          "[e2e][drain]") {
  Cluster c;
  c.setup(kTenantPods);
  // What a kubelet would report: both running and ready.
  for (const char* pod : {"db-0", "db-1"})
    REQUIRE_THAT(c.kubectl({"patch", "pod", pod, "--subresource=status", "--type=merge", "-p",
                            R"({"status":{"phase":"Running","conditions":[)"
                            R"({"type":"Ready","status":"True"}]}})"}),
                 Succeeded());
  auto allowed = [&] {
    return c.get_json({"pdb", "db"})
        .value("status", json::object())
        .value("disruptionsAllowed", -1);
  };
  REQUIRE(eventually([&] { return allowed() == 1; }));
  auto evict = [&](const std::string& pod, bool dry_run) {
    const std::string body =
        c.file(pod + (dry_run ? "-dry" : "") + ".json", eviction(pod, dry_run));
    return c.kubectl(
        {"create", "--raw", "/api/v1/namespaces/default/pods/" + pod + "/eviction", "-f", body});
  };

  const std::string budget_rv = c.get_json({"pdb", "db"})["metadata"]["resourceVersion"];
  Result dry = evict("db-0", true);
  INFO(dry);
  REQUIRE_THAT(dry, Succeeded());
  CHECK(json::parse(dry.out)["status"] == "Success");
  CHECK_THAT(c.kubectl({"get", "pod", "db-0"}), Succeeded());
  CHECK(c.get_json({"pdb", "db"})["metadata"]["resourceVersion"] == budget_rv);

  Result first = evict("db-0", false);
  INFO(first);
  REQUIRE_THAT(first, Succeeded());
  CHECK(json::parse(first.out)["status"] == "Success");
  CHECK_THAT(c.kubectl({"get", "pod", "db-0"}), FailedWith("NotFound"));
  CHECK(allowed() == 0);

  CHECK_THAT(evict("db-1", false), FailedWith("(TooManyRequests): " + kEvicting));
  CHECK_THAT(c.kubectl({"get", "pod", "db-1"}), Succeeded());
}

}  // namespace
}  // namespace vkube::e2e
