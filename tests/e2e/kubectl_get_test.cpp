// kubectl get: -A, output formats, labels, selectors, sorting; describe.
#include <algorithm>

#include "fixture.h"

namespace vkube::e2e {
namespace {

// Two namespaces with pods, a deployment and configmaps; the configmaps'
// names, creation order and data.rank all sort differently.
const char* kObjects = R"(
apiVersion: v1
kind: Namespace
metadata: {name: alpha}
---
apiVersion: v1
kind: Namespace
metadata: {name: beta}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: alpha
  labels: {app: web, tier: front}
spec:
  containers:
  - {name: nginx, image: "nginx:1.27"}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-1
  namespace: alpha
  labels: {app: db, tier: back}
spec:
  nodeName: node-a
  containers:
  - {name: postgres, image: postgres}
---
apiVersion: v1
kind: Pod
metadata:
  name: cache-1
  namespace: beta
  labels: {app: cache}
spec:
  containers:
  - {name: redis, image: "redis:7"}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: alpha
spec:
  replicas: 2
  # Paused before its first rollout: no ReplicaSet, so the pod lists below
  # hold only the pods this file creates.
  paused: true
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - {name: nginx, image: "nginx:1.27"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: m-second, namespace: alpha}
data: {rank: "3"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: z-first, namespace: alpha}
data: {rank: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a-third, namespace: alpha}
data: {rank: "2", extra: "x"}
)";

// The first column of each row after the header.
std::vector<std::string> names(const Result& r, size_t column = 0) {
  std::vector<std::string> out;
  auto ls = lines(r.out);
  for (size_t i = 1; i < ls.size(); ++i) out.push_back(columns(ls[i]).at(column));
  return out;
}

using Names = std::vector<std::string>;

TEST_CASE("kubectl get across namespaces and in every output format", "[e2e]") {
  Cluster c;
  c.setup(kObjects);

  SECTION("-A shows the namespace column and every namespace's objects") {
    Result r = c.kubectl({"get", "pods", "-A"});
    REQUIRE_THAT(r, Succeeded());
    CHECK(columns(lines(r.out).at(0)) ==
          Names{"NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"});
    CHECK(names(r, 0) == Names{"alpha", "alpha", "beta"});
    CHECK(names(r, 1) == Names{"db-1", "web-1", "cache-1"});
    CHECK_THAT(r.out, Catch::Contains("0/1") && Catch::Contains("Pending"));
    Result one = c.kubectl({"get", "pods", "-n", "beta"});
    CHECK(columns(lines(one.out).at(0)) == Names{"NAME", "READY", "STATUS", "RESTARTS", "AGE"});
    CHECK(names(one) == Names{"cache-1"});
  }
  SECTION("-o wide adds the priority columns") {
    Result pods = c.kubectl({"get", "pods", "-n", "alpha", "-o", "wide"});
    REQUIRE_THAT(pods, Succeeded());
    CHECK(columns(lines(pods.out).at(0)) == Names{"NAME", "READY", "STATUS", "RESTARTS", "AGE",
                                                  "IP", "NODE", "NOMINATED", "NODE", "READINESS",
                                                  "GATES"});
    CHECK_THAT(pods.out, Catch::Contains("node-a"));
    Result deploy = c.kubectl({"get", "deployments", "-n", "alpha", "-o", "wide"});
    REQUIRE_THAT(deploy, Succeeded());
    CHECK(columns(lines(deploy.out).at(0)) == Names{"NAME", "READY", "UP-TO-DATE", "AVAILABLE",
                                                    "AGE", "CONTAINERS", "IMAGES", "SELECTOR"});
    auto row = columns(lines(deploy.out).at(1));
    CHECK(row.at(0) == "web");
    CHECK(row.at(1) == "0/2");
    CHECK(Names(row.end() - 3, row.end()) == Names{"nginx", "nginx:1.27", "app=web"});
  }
  SECTION("-o yaml shows the stored object with server-set metadata and defaults") {
    Result r = c.kubectl({"get", "pod", "web-1", "-n", "alpha", "-o", "yaml"});
    REQUIRE_THAT(r, Succeeded());
    CHECK_THAT(r.out, Catch::StartsWith("apiVersion: v1\nkind: Pod\n"));
    CHECK_THAT(r.out, Catch::Contains("  uid: ") && Catch::Contains("  creationTimestamp: \"") &&
                          Catch::Contains("  resourceVersion: \""));
    CHECK_THAT(r.out, Catch::Contains("restartPolicy: Always") &&
                          Catch::Contains("dnsPolicy: ClusterFirst") &&
                          Catch::Contains("terminationGracePeriodSeconds: 30") &&
                          Catch::Contains("schedulerName: default-scheduler") &&
                          Catch::Contains("imagePullPolicy: IfNotPresent"));
  }
  SECTION("-o json is the full object; a list is kind List") {
    nlohmann::json pod = c.get_json({"pod", "db-1", "-n", "alpha"});
    CHECK(pod["kind"] == "Pod");
    CHECK(pod["metadata"]["labels"] == nlohmann::json({{"app", "db"}, {"tier", "back"}}));
    CHECK(pod["metadata"]["uid"].get<std::string>().size() == 36);
    CHECK(std::stoll(pod["metadata"]["resourceVersion"].get<std::string>()) > 0);
    // ":latest" (no tag) is pulled Always, as kube-apiserver defaults it.
    CHECK(pod["spec"]["containers"][0]["imagePullPolicy"] == "Always");
    CHECK(pod["status"]["phase"] == "Pending");
    nlohmann::json list = c.get_json({"configmaps", "-n", "alpha"});
    CHECK(list["kind"] == "List");
    CHECK(list["items"].size() == 4);  // ours and the namespace's kube-root-ca.crt
    nlohmann::json deploy = c.get_json({"deployment", "web", "-n", "alpha"});
    CHECK(deploy["metadata"]["generation"] == 1);
    CHECK(deploy["spec"]["strategy"]["type"] == "RollingUpdate");
    CHECK(deploy["spec"]["revisionHistoryLimit"] == 10);
  }
  SECTION("-o name") {
    Result r = c.kubectl({"get", "pods,deployments", "-n", "alpha", "-o", "name"});
    REQUIRE_THAT(r, Succeeded());
    CHECK(lines(r.out) == Names{"pod/db-1", "pod/web-1", "deployment.apps/web"});
  }
  SECTION("--show-labels") {
    Result r = c.kubectl({"get", "pods", "-n", "alpha", "--show-labels"});
    REQUIRE_THAT(r, Succeeded());
    CHECK(columns(lines(r.out).at(0)).back() == "LABELS");
    CHECK(columns(lines(r.out).at(1)).front() == "db-1");
    CHECK(columns(lines(r.out).at(1)).back() == "app=db,tier=back");
    CHECK(columns(lines(r.out).at(2)).back() == "app=web,tier=front");
  }
}

TEST_CASE("kubectl get with label and field selectors and --sort-by", "[e2e]") {
  Cluster c;
  c.setup(kObjects);
  auto get_names = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "get");
    args.insert(args.end(), {"-o", "name"});
    Result r = c.kubectl(args);
    INFO(r);
    CHECK(r.exit_code == 0);
    auto names = lines(r.out);
    std::sort(names.begin(), names.end());  // the selector decides what, not the order
    return names;
  };

  SECTION("-l with =, !=, in, notin and existence") {
    CHECK(get_names({"pods", "-A", "-l", "app=web"}) == Names{"pod/web-1"});
    CHECK(get_names({"pods", "-A", "-l", "app!=web"}) == Names{"pod/cache-1", "pod/db-1"});
    CHECK(get_names({"pods", "-A", "-l", "tier in (front,back)"}) ==
          Names{"pod/db-1", "pod/web-1"});
    CHECK(get_names({"pods", "-A", "-l", "tier notin (front)"}) ==
          Names{"pod/cache-1", "pod/db-1"});
    CHECK(get_names({"pods", "-A", "-l", "tier"}) == Names{"pod/db-1", "pod/web-1"});
    CHECK(get_names({"pods", "-A", "-l", "!tier"}) == Names{"pod/cache-1"});
    CHECK(get_names({"pods", "-A", "-l", "app=web,tier=back"}).empty());
    Result none = c.kubectl({"get", "pods", "-n", "alpha", "-l", "app=nothing"});
    CHECK_THAT(none.err, Catch::Contains("No resources found in alpha namespace."));
    CHECK_THAT(c.kubectl({"get", "pods", "-l", "a b c"}),
               FailedWith("unable to parse requirement"));
  }
  SECTION("--field-selector") {
    CHECK(get_names({"configmaps", "-A", "--field-selector", "metadata.name=z-first"}) ==
          Names{"configmap/z-first"});
    CHECK(get_names({"pods", "-A", "--field-selector", "metadata.namespace=beta"}) ==
          Names{"pod/cache-1"});
    CHECK(get_names({"pods", "-A", "--field-selector", "metadata.name!=db-1"}) ==
          Names{"pod/cache-1", "pod/web-1"});
    CHECK(get_names({"pods", "-A", "--field-selector", "spec.nodeName=node-a"}) ==
          Names{"pod/db-1"});
    CHECK(get_names({"pods", "-A", "--field-selector", "status.phase=Pending,spec.nodeName="}) ==
          Names{"pod/cache-1", "pod/web-1"});
    CHECK(get_names({"pods", "-A", "--field-selector", "status.phase=Running"}).empty());
    // kube-apiserver refuses fields it does not index.
    CHECK_THAT(c.kubectl({"get", "configmaps", "-A", "--field-selector", "data.rank=1"}),
               FailedWith("BadRequest"));
  }
  SECTION("--sort-by") {
    Result by_rank = c.kubectl({"get", "configmaps", "-n", "alpha", "--sort-by=.data.rank"});
    REQUIRE_THAT(by_rank, Succeeded());
    // kube-root-ca.crt has no rank: kubectl sorts it first.
    CHECK(names(by_rank) == Names{"kube-root-ca.crt", "z-first", "a-third", "m-second"});
    Result by_name = c.kubectl({"get", "configmaps", "-n", "alpha", "--sort-by=.metadata.name"});
    CHECK(names(by_name) == Names{"a-third", "kube-root-ca.crt", "m-second", "z-first"});
    // The table's own columns stay: DATA counts the keys.
    CHECK(columns(lines(by_name.out).at(0)) == Names{"NAME", "DATA", "AGE"});
    CHECK(columns(lines(by_name.out).at(1)).at(1) == "2");
  }
}

TEST_CASE("kubectl describe shows the object's fields", "[e2e]") {
  Cluster c;
  c.setup(kObjects);
  Result pod = c.kubectl({"describe", "pod", "db-1", "-n", "alpha"});
  REQUIRE_THAT(pod, Succeeded());
  CHECK_THAT(pod.out, Catch::StartsWith("Name:             db-1\nNamespace:        alpha\n"));
  CHECK_THAT(pod.out, Catch::Contains("Node:             node-a") &&
                          Catch::Contains("Labels:           app=db") &&
                          Catch::Contains("Status:           Pending") &&
                          Catch::Contains("Image:        postgres") &&
                          Catch::Contains("QoS Class:        BestEffort"));

  Result deploy = c.kubectl({"describe", "deployment", "web", "-n", "alpha"});
  REQUIRE_THAT(deploy, Succeeded());
  CHECK_THAT(deploy.out, Catch::Contains("Selector:               app=web") &&
                             Catch::Contains("Replicas:               2 desired") &&
                             Catch::Contains("StrategyType:           RollingUpdate") &&
                             Catch::Contains("Image:         nginx:1.27"));

  Result cms = c.kubectl({"describe", "configmaps", "-n", "alpha", "-l", "!nothing"});
  REQUIRE_THAT(cms, Succeeded());
  CHECK_THAT(cms.out, Catch::Contains("Name:         a-third") &&
                          Catch::Contains("Name:         z-first") &&
                          Catch::Contains("extra:\n----\nx"));
  CHECK_THAT(c.kubectl({"describe", "pod", "nope", "-n", "alpha"}),
             FailedWith("pods \"nope\" not found"));
}

}  // namespace
}  // namespace vkube::e2e
