// The syncer over a tenant's life, on tenants made by `vkube create` on
// `vkube host` (the manifest's RBAC, not hand-wired flags): `kubectl top`
// works with the Role the tenant gets; a Helm release upgraded, rolled back
// and uninstalled in quick succession leaves no pod Terminating; and nothing
// the syncer put on the host (pods, their token Secrets, ConfigMaps,
// Services) outlives its tenant object, also across a tenant restart.
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

struct Tenant {
  Cluster& host;
  std::string name;
  std::string kubeconfig;

  Tenant(Cluster& h, const std::string& n, const std::vector<std::string>& flags = {})
      : host(h), name(n), kubeconfig(h.dir() + "/" + n + ".kubeconfig") {
    std::vector<std::string> argv = {VKUBE_BINARY,      "create", name,      "--kubeconfig",
                                     host.kubeconfig(), "--out",  kubeconfig};
    argv.insert(argv.end(), flags.begin(), flags.end());
    Result created = host.run(argv, seconds(90));
    REQUIRE_THAT(created, Succeeded());
  }
  std::string host_ns() const { return "vkube-" + name; }
  Result kubectl(std::vector<std::string> args, seconds timeout = seconds(30)) {
    args.insert(args.begin(), {kubectl_path(), "--kubeconfig", kubeconfig});
    return host.run(args, timeout);
  }
  Result helm(std::vector<std::string> args) {
    args.insert(args.end(), {"--kubeconfig", kubeconfig});
    return e2e::helm(host, std::move(args));
  }
  // The names of the host objects (pods, configmaps, secrets, services) the
  // syncer made for tenant namespace `ns`.
  std::string host_objects(const std::string& ns) {
    Result r = host.kubectl({"get", "pods,configmaps,secrets,services", "-n", host_ns(), "-l",
                             "vkube.io/tenant-namespace=" + ns, "-o", "name"});
    return r.exit_code == 0 ? r.out : "error: " + r.output();
  }
};

TEST_CASE("kubectl top pods and top nodes work in a tenant made by vkube create",
          "[e2e][syncer-life]") {
  Cluster host(Cluster::Host{});
  // Its pods of the vkube image run as local processes, which the host measures
  // (a simulated pod runs nothing and has no usage, as metrics-server shows none).
  Tenant t(host, "top", {"--unsandboxed-local-pods"});
  const std::string pod = host.file("busy.yaml", R"(apiVersion: v1
kind: Pod
metadata:
  name: busy
spec:
  containers:
  - name: main
    image: vkube
    args: [workload, "--log-lines", "0"]
)");
  REQUIRE_THAT(t.kubectl({"apply", "-f", pod}), Succeeded());
  REQUIRE_THAT(t.kubectl({"wait", "--for=condition=Ready", "pod/busy", "--timeout=30s"}),
               Succeeded());
  Result pods;
  const bool ok1 = eventually(
      [&] {
        pods = t.kubectl({"top", "pods"});
        return pods.exit_code == 0 && pods.out.find("busy") != std::string::npos;
      },
      seconds(30));
  INFO(pods);
  CHECK(ok1);
  CHECK(pods.output().find("forbidden") == std::string::npos);
  const std::string node = t.kubectl({"get", "pod", "busy", "-o", "jsonpath={.spec.nodeName}"}).out;
  REQUIRE_FALSE(node.empty());
  Result nodes;
  const bool ok2 = eventually(
      [&] {
        nodes = t.kubectl({"top", "nodes"});
        return nodes.exit_code == 0 && nodes.out.find(node) != std::string::npos;
      },
      seconds(30));
  INFO(nodes);
  CHECK(ok2);
  CHECK(nodes.output().find("forbidden") == std::string::npos);
}

constexpr const char* kChart = R"(apiVersion: v1
kind: ServiceAccount
metadata:
  name: demo
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
data:
  rev: "{{ .Values.rev }}"
---
apiVersion: v1
kind: Service
metadata:
  name: demo
spec:
  selector: {app: demo}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: demo
spec:
  replicas: 2
  selector:
    matchLabels: {app: demo}
  template:
    metadata:
      labels: {app: demo}
      annotations: {rev: "{{ .Values.rev }}"}
    spec:
      serviceAccountName: demo
      containers:
        - name: web
          image: nginx
          volumeMounts: [{name: conf, mountPath: /conf}]
      volumes:
        - name: conf
          configMap: {name: demo}
)";

TEST_CASE("helm upgrade, rollback and uninstall in quick succession leave nothing behind",
          "[e2e][syncer-life][helm]") {
  Cluster host(Cluster::Host{});
  Tenant t(host, "churn");
  std::filesystem::create_directories(host.dir() + "/chart/templates");
  host.file("chart/Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n");
  host.file("chart/values.yaml", "rev: \"1\"\n");
  host.file("chart/templates/all.yaml", kChart);
  const std::string chart = host.dir() + "/chart";
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    REQUIRE_THAT(t.helm({"install", "demo", chart, "-n", "apps", "--create-namespace", "--wait",
                         "--timeout", "60s"}),
                 Succeeded());
    REQUIRE(t.host_objects("apps").find("secret/demo-x-apps-x-churn.sa-token") !=
            std::string::npos);
    REQUIRE_THAT(t.helm({"upgrade", "demo", chart, "-n", "apps", "--set", "rev=2"}), Succeeded());
    REQUIRE_THAT(t.helm({"rollback", "demo", "1", "-n", "apps"}), Succeeded());
    REQUIRE_THAT(t.helm({"uninstall", "demo", "-n", "apps"}), Succeeded());
    // Every pod ends in the tenant (none stays Terminating) ...
    Result left;
    const bool ok3 = eventually(
        [&] {
          left = t.kubectl({"get", "pods", "-n", "apps", "-o", "name"});
          return left.exit_code == 0 && left.out.empty();
        },
        seconds(60));
    INFO(left);
    CHECK(ok3);
    // ... and on the host nothing of the release remains: pods, the
    // service account's token Secret, the ConfigMap, the Service.
    std::string objects;
    const bool ok4 = eventually(
        [&] {
          objects = t.host_objects("apps");
          return objects.empty();
        },
        seconds(30));
    INFO(objects);
    CHECK(ok4);
  }
}

TEST_CASE("a deleted namespace's host objects go, also when the tenant restarts meanwhile",
          "[e2e][syncer-life]") {
  Cluster host(Cluster::Host{});
  Tenant t(host, "gc");
  auto run_pods = [&](const std::string& ns) {
    REQUIRE_THAT(t.kubectl({"create", "namespace", ns}), Succeeded());
    REQUIRE_THAT(t.kubectl({"create", "serviceaccount", "worker", "-n", ns}), Succeeded());
    for (const char* p : {"a", "b"})
      REQUIRE_THAT(t.kubectl({"run", p, "-n", ns, "--image=busybox",
                              "--overrides={\"spec\":{\"serviceAccountName\":\"worker\"}}"}),
                   Succeeded());
    REQUIRE_THAT(t.kubectl({"run", "c", "-n", ns, "--image=busybox"}), Succeeded());
    REQUIRE_THAT(t.kubectl({"wait", "--for=jsonpath={.status.phase}=Running", "pod", "--all", "-n",
                            ns, "--timeout=30s"}),
                 Succeeded());
    const std::string objects = t.host_objects(ns);
    CHECK(objects.find("secret/worker-x-" + ns + "-x-gc.sa-token") != std::string::npos);
    CHECK(objects.find("secret/default-x-" + ns + "-x-gc.sa-token") != std::string::npos);
  };
  auto all_gone = [&](const std::string& ns) {
    std::string objects;
    bool gone = eventually(
        [&] {
          objects = t.host_objects(ns);
          return objects.empty();
        },
        seconds(60));
    INFO(objects);
    CHECK(gone);
  };

  // Pods deleted one by one: a token Secret goes with the last pod of its account.
  run_pods("one");
  REQUIRE_THAT(t.kubectl({"delete", "pod", "a", "-n", "one"}), Succeeded());
  CHECK(t.host_objects("one").find("secret/worker-x-one-x-gc.sa-token") != std::string::npos);
  REQUIRE_THAT(t.kubectl({"delete", "pod", "b", "c", "-n", "one"}), Succeeded());
  all_gone("one");

  // A namespace deleted, and the tenant's process killed at once: the
  // restarted syncer finds what the namespace left on the host and removes it.
  run_pods("two");
  REQUIRE_THAT(t.kubectl({"delete", "namespace", "two", "--wait=false"}), Succeeded());
  REQUIRE_THAT(
      host.kubectl({"delete", "pod", "vkube-0", "-n", t.host_ns(), "--grace-period=0", "--force"}),
      Succeeded());
  REQUIRE(eventually(
      [&] {
        return host.run({VKUBE_BINARY, "connect", t.name, "--kubeconfig", host.kubeconfig(),
                         "--out", t.kubeconfig},
                        seconds(30))
                       .exit_code == 0 &&
               t.kubectl({"get", "namespaces"}).exit_code == 0;
      },
      seconds(60)));
  CHECK(eventually(
      [&] {
        return t.kubectl({"get", "namespace", "two"}).exit_code != 0;
      },
      seconds(60)));
  all_gone("two");
}

// `vkube up` over the state of an older vkube, whose tenant Role lacks the
// metrics.k8s.io rules: the tenant it resumes gets the manifest's RBAC.
TEST_CASE("vkube up gives a tenant made by an older vkube the Role its features need",
          "[e2e][syncer-life][up]") {
  std::string dir = (std::filesystem::temp_directory_path() / "vkube-life-XXXXXX").string();
  REQUIRE(::mkdtemp(dir.data()) != nullptr);
  auto up = [&] {
    Spawn s;
    s.argv = {VKUBE_BINARY,    "up",          "--data-dir", dir + "/state",
              "--host-listen", "127.0.0.1:0", "--tenant",   "lab"};
    s.out_path = dir + "/up.out";
    s.err_path = dir + "/up.err";
    auto p = std::make_unique<Process>(s);
    REQUIRE(p->wait_for_out("vkube is up", seconds(60)));
    return p;
  };
  auto kubectl = [&](const std::string& who, std::vector<std::string> args) {
    Spawn s;
    s.argv = {kubectl_path()};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    s.env["KUBECONFIG"] =
        dir + "/state/" +
        (who == "host" ? "host/admin.kubeconfig" : "tenants/lab/admin.kubeconfig");
    s.out_path = dir + "/kubectl.out";
    s.err_path = dir + "/kubectl.err";
    return run(s, seconds(30));
  };
  auto role_rules = [&] {
    return kubectl("host", {"get", "role", "vkube-syncer", "-n", "vkube-lab", "-o",
                            "jsonpath={.rules[*].apiGroups}"})
        .out;
  };
  {
    auto first = up();
    REQUIRE(role_rules().find("metrics.k8s.io") != std::string::npos);
    // The Role as vkube wrote it before metrics.k8s.io was in it.
    REQUIRE_THAT(
        kubectl("host", {"patch", "role", "vkube-syncer", "-n", "vkube-lab", "--type=json", "-p",
                         R"([{"op":"test","path":"/rules/6/apiGroups/0",)"
                         R"("value":"metrics.k8s.io"},)"
                         R"({"op":"remove","path":"/rules/6"}])"}),
        Succeeded());
    REQUIRE(role_rules().find("metrics.k8s.io") == std::string::npos);
    REQUIRE_THAT(kubectl("tenant", {"top", "pods"}), FailedWith("forbidden"));
    REQUIRE(kill(first->pid(), SIGTERM) == 0);
    REQUIRE(first->wait_for(seconds(30)) == std::optional<int>(0));
  }
  auto second = up();
  CHECK(role_rules().find("metrics.k8s.io") != std::string::npos);
  Result top = kubectl("tenant", {"top", "pods"});
  INFO(top);
  CHECK(top.output().find("forbidden") == std::string::npos);
  REQUIRE(kill(second->pid(), SIGTERM) == 0);
  CHECK(second->wait_for(seconds(30)) == std::optional<int>(0));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vkube::e2e
