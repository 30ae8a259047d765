// Tenants as host objects: `vkube create / list / connect / delete` against
// `vkube host`, whose node agent runs the tenant's StatefulSet pod (the vkube
// image) as a real local `vkube serve`; and the Helm chart in manifests/
// (helm lint, helm template | kubectl apply --dry-run=server, and a real
// helm install that yields a working tenant). Real kubectl and helm.
#include <signal.h>

#include <fstream>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

std::string source(const std::string& path) {
  return std::string(VKUBE_SOURCE_DIR) + "/" + path;
}

// kubectl against another kubeconfig, with the host's environment.
Result kubectl_at(Cluster& host, const std::string& kubeconfig, std::vector<std::string> args) {
  args.insert(args.begin(), {"/usr/bin/kubectl", "--kubeconfig", kubeconfig});
  return host.run(args, seconds(30));
}

// Whether a process whose command line holds `needle` runs.
bool process_running(Cluster& c, const std::string& needle) {
  return c.run({"/usr/bin/pgrep", "-f", "--", needle}, seconds(5)).exit_code == 0;
}

TEST_CASE("vkube create/list/connect/delete run tenants on the embedded host", "[e2e][tenants]") {
  Cluster host(Cluster::Host{});
  const std::string out = host.dir() + "/team-a.kubeconfig";

  Result created = vkube_at(host, {"create", "team-a", "--gpu-quota", "gpus=2", "--out", out});
  REQUIRE_THAT(created, Succeeded());
  CHECK(created.out.find("tenant team-a is ready in") != std::string::npos);
  CHECK(created.out.find("export KUBECONFIG=" + out) != std::string::npos);

  // The host namespace holds what the manifest says, made for team-a.
  json ns = host.get_json({"namespace", "vkube-team-a"});
  CHECK(ns["metadata"]["labels"]["vkube.io/tenant"] == "team-a");
  CHECK(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline");
  json sts = host.get_json({"statefulset", "vkube", "-n", "vkube-team-a"});
  json args = sts["spec"]["template"]["spec"]["containers"][0]["args"];
  CHECK(std::find(args.begin(), args.end(), json("--name=team-a")) != args.end());
  CHECK(std::find(args.begin(), args.end(), json("--gpu-quota=gpus=2")) != args.end());
  CHECK_THAT(
      host.kubectl(
          {"get", "role,rolebinding,serviceaccount,service,resourcequota,limitrange,networkpolicy",
           "-n", "vkube-team-a"}),
      Succeeded());
  CHECK_THAT(host.kubectl({"get", "clusterrolebinding", "vkube-nodes-vkube-team-a"}), Succeeded());
  // Its control plane is a pod the node agent runs as a local process, on a loopback address.
  json pod = host.get_json({"pod", "vkube-0", "-n", "vkube-team-a"});
  CHECK(pod["status"]["phase"] == "Running");
  CHECK(pod["status"]["podIP"].get<std::string>().rfind("127.", 0) == 0);
  CHECK(process_running(host, "--name=team-a"));
  // The host preloads jemalloc when the build found it; the tenant process
  // it starts keeps glibc's malloc and does not inherit the preload.
#ifdef VKUBE_JEMALLOC_SO
  CHECK(host.server_log().find("allocator=jemalloc") != std::string::npos);
#endif
  {
    Result pid = host.run({"/usr/bin/pgrep", "-f", "--", "--name=team-a"}, seconds(5));
    REQUIRE_THAT(pid, Succeeded());
    const std::string proc = "/proc/" + lines(pid.out).at(0);
    CHECK(read_file(proc + "/maps").find("libjemalloc") == std::string::npos);
    // (The e2e connection guard is preloaded into it on purpose; jemalloc is not.)
    CHECK(read_file(proc + "/environ").find("jemalloc") == std::string::npos);
  }

  // The tenant works: kubectl with the kubeconfig create wrote, and a GPU pod
  // it runs lands on the host and counts in `vkube list`.
  REQUIRE_THAT(kubectl_at(host, out, {"get", "namespaces"}), Succeeded());
  REQUIRE_THAT(
      kubectl_at(
          host, out,
          {"run", "train", "--image=busybox", "--overrides",
           R"({"spec":{"containers":[{"name":"train","image":"busybox","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})"}),
      Succeeded());
  CHECK(eventually([&] {
    Result r = kubectl_at(host, out, {"get", "pod", "train", "-o", "jsonpath={.status.phase}"});
    return r.out == "Running";
  }));
  // Its GPU quota holds (gpus=2: a 2-GPU pod is refused next to the 1-GPU one).
  CHECK_THAT(
      kubectl_at(
          host, out,
          {"run", "big", "--image=busybox", "--overrides",
           R"({"spec":{"containers":[{"name":"big","image":"busybox","resources":{"limits":{"nvidia.com/gpu":"2"}}}]}})"}),
      FailedWith("exceeded quota"));
  Result list = vkube_at(host, {"list"});
  REQUIRE_THAT(list, Succeeded());
  auto rows = lines(list.out);
  REQUIRE(rows.size() == 2);
  auto cols = columns(rows[1]);
  REQUIRE(cols.size() >= 6);
  CHECK(cols[0] == "team-a");
  CHECK(cols[1] == "vkube-team-a");
  CHECK(cols[2] == "Ready");
  CHECK(cols[3] == "1");  // the training pod
  CHECK(cols[4] == "1");  // one GPU in use
  CHECK(cols[5] == "gpus=2");

  // A second create of the same name is refused; bad names are refused.
  CHECK_THAT(vkube_at(host, {"create", "team-a"}), FailedWith("already exists"));
  CHECK_THAT(vkube_at(host, {"create", "Team_A"}), FailedWith("lower case alphanumeric"));

  // connect prints a kubeconfig that works, or writes one.
  Result printed = vkube_at(host, {"connect", "team-a"});
  REQUIRE_THAT(printed, Succeeded());
  std::string again = host.file("again.kubeconfig", printed.out);
  CHECK_THAT(kubectl_at(host, again, {"get", "pod", "train"}), Succeeded());
  CHECK_THAT(vkube_at(host, {"connect", "nobody"}), FailedWith("not found"));

  // The tenant's state lives on its volume: deleting its pod (a restart)
  // keeps the training pod, and the StatefulSet brings it back.
  REQUIRE_THAT(host.kubectl({"delete", "pod", "vkube-0", "-n", "vkube-team-a"}), Succeeded());
  CHECK(eventually(
      [&] {
        return vkube_at(host, {"connect", "team-a", "--out", out}).exit_code == 0 &&
               kubectl_at(host, out, {"get", "pod", "train"}).exit_code == 0;
      },
      seconds(20)));

  // delete removes the namespace, the cluster binding, and stops the process.
  Result deleted = vkube_at(host, {"delete", "team-a"});
  REQUIRE_THAT(deleted, Succeeded());
  CHECK_THAT(host.kubectl({"get", "namespace", "vkube-team-a"}), FailedWith("NotFound"));
  CHECK_THAT(host.kubectl({"get", "clusterrolebinding", "vkube-nodes-vkube-team-a"}),
             FailedWith("NotFound"));
  CHECK(eventually([&] { return !process_running(host, "--name=team-a"); }));
  Result empty = vkube_at(host, {"list"});
  CHECK(lines(empty.out).size() == 1);
  CHECK_THAT(vkube_at(host, {"delete", "team-a"}), FailedWith("not found"));

  // The same name again is a new, empty tenant.
  REQUIRE_THAT(vkube_at(host, {"create", "team-a", "--out", out}), Succeeded());
  CHECK_THAT(kubectl_at(host, out, {"get", "pod", "train"}), FailedWith("NotFound"));
}

struct Helm {
  Cluster& c;
  Result operator()(std::vector<std::string> args) { return e2e::helm(c, std::move(args)); }
};

TEST_CASE("manifests: the tenant chart lints, renders, dry-runs and installs a working tenant",
          "[e2e][tenants][helm]") {
  Cluster host(Cluster::Host{});
  Helm helm{host};
  const std::string chart = source("manifests/vkube-tenant");
  CHECK_THAT(helm({"lint", "--strict", chart}), Succeeded());
  CHECK_THAT(helm({"template", "x", chart, "--set", "podSecurity=bogus"}),
             FailedWith("podSecurity"));
  // The plain YAML in manifests/ is what the chart renders.
  CHECK_THAT(host.run({"/usr/bin/env", "HELM=" + source(".tools/bin/helm"),
                       source("tools/render-manifests.sh"), "--check"}),
             Succeeded());

  // The plain YAML goes through the host's server-side validation.
  REQUIRE_THAT(host.kubectl({"create", "namespace", "vkube-example"}), Succeeded());
  Result dry =
      host.kubectl({"apply", "--dry-run=server", "-f", source("manifests/vkube-tenant.yaml")});
  REQUIRE_THAT(dry, Succeeded());
  CHECK(dry.out.find("statefulset.apps/vkube created (server dry run)") != std::string::npos);
  CHECK_THAT(host.kubectl({"get", "statefulset", "vkube", "-n", "vkube-example"}),
             FailedWith("NotFound"));

  // A real install on the embedded host yields a working tenant.
  Result install = helm({"install", "team-b", chart, "-n", "vkube-team-b", "--create-namespace",
                         "--wait", "--timeout", "60s", "--set", "gpu.quota=gpus=4"});
  REQUIRE_THAT(install, Succeeded());
  CHECK(install.out.find("vkube-kubeconfig") != std::string::npos);  // NOTES
  std::string kubeconfig = host.dir() + "/team-b.kubeconfig";
  REQUIRE(eventually([&] {
    return vkube_at(host, {"connect", "team-b", "--out", kubeconfig}).exit_code == 0 &&
           kubectl_at(host, kubeconfig, {"get", "namespaces"}).exit_code == 0;
  }));
  Result list = vkube_at(host, {"list"});
  CHECK(list.out.find("team-b") != std::string::npos);
  CHECK(list.out.find("gpus=4") != std::string::npos);
  REQUIRE_THAT(helm({"uninstall", "team-b", "-n", "vkube-team-b", "--wait"}), Succeeded());
  CHECK(eventually([&] { return !process_running(host, "--name=team-b"); }));
}

}  // namespace
}  // namespace vkube::e2e
