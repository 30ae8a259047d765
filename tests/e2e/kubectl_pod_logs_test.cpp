// pods/log end to end: a tenant on `vkube host`, real kubectl. The tenant's
// pods of the vkube image run on the host's node agent as local processes
// (`vkube workload`), and `kubectl logs` reads their output through the
// tenant's relay to the host: tail, timestamps, since, follow to the end of
// the container, stderr; a simulated pod's and a bad request's errors.
#include <thread>

#include "fixture.h"

namespace vkube::e2e {
namespace {

std::string workload_pod(const std::string& name, const std::vector<std::string>& args) {
  std::string yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
                     "\nspec:\n  restartPolicy: Never\n  containers:\n  - name: main\n"
                     "    image: vkube\n    args: [workload";
  for (const std::string& a : args) yaml += ", \"" + a + "\"";
  return yaml + "]\n";
}

Cluster::Serve tenant_of(const Cluster& host, const std::string& name) {
  // The operator lets the tenant's vkube-image pods run as local processes.
  return Cluster::Serve{
      {"--name", name, "--host-kubeconfig", host.kubeconfig(), "--host-unsandboxed-local-pods"}};
}

TEST_CASE("pods/log: kubectl logs of a tenant's pod, through the host", "[e2e][pods]") {
  Cluster host(Cluster::Host{});
  Cluster t(tenant_of(host, "logs"));
  t.setup(workload_pod("w", {"--log-lines", "5", "--stderr-every", "5"}) + "---\n" +
          workload_pod("slow", {"--log-lines", "20", "--log-interval-ms", "50",
                                "--exit-after-ms", "0", "--exit-code", "3"}) +
          "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: sim\nspec:\n  containers:\n"
          "  - name: main\n    image: nginx:1.27\n");
  for (const char* pod : {"w", "sim"}) {
    Result r = t.kubectl({"wait", "--for=condition=Ready", std::string("pod/") + pod,
                          "--timeout=60s"},
                         seconds(70));
    INFO(r << t.server_log() << host.server_log());
    REQUIRE_THAT(r, Succeeded());
  }

  // Follow of a container that prints 20 lines and ends: every line, then
  // kubectl returns as the container ends.
  {
    Result r = t.kubectl({"logs", "-f", "slow"}, seconds(40));
    REQUIRE_THAT(r, Succeeded());
    auto got = lines(r.out);
    REQUIRE(got.size() == 20);
    CHECK(got.front() == "line 1");
    CHECK(got.back() == "line 20");
  }
  {
    Result r = t.kubectl({"wait", "--for=jsonpath={.status.phase}=Failed", "pod/slow",
                          "--timeout=30s"},
                         seconds(40));
    CHECK_THAT(r, Succeeded());
  }

  // The whole log, stdout and stderr as they came.
  {
    Result r;
    for (int i = 0; i < 50; ++i) {  // the fifth line may take a moment
      r = t.kubectl({"logs", "w"});
      if (lines(r.out).size() == 5) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    REQUIRE_THAT(r, Succeeded());
    CHECK(r.out == "line 1\nline 2\nline 3\nline 4\nline 5\n");
  }
  CHECK(t.kubectl({"logs", "w", "--tail=2"}).out == "line 4\nline 5\n");
  CHECK(t.kubectl({"logs", "w", "--limit-bytes=9"}).out == "line 1\nli");
  CHECK(t.kubectl({"logs", "w", "-c", "main", "--tail=1"}).out == "line 5\n");
  {
    Result r = t.kubectl({"logs", "w", "--tail=1", "--timestamps"});
    REQUIRE_THAT(r, Succeeded());
    // "2026-12-05T13:30:04.897028019Z line 5"
    REQUIRE(r.out.size() == 31 + 7);
    CHECK(r.out.substr(30) == " line 5\n");
    CHECK(r.out[10] == 'T');
    CHECK(r.out[29] == 'Z');
  }
  // Nothing was printed in the last second (the lines came at start).
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CHECK(t.kubectl({"logs", "w", "--since=1s"}).out.empty());
  CHECK(lines(t.kubectl({"logs", "w", "--since=1h"}).out).size() == 5);

  // kube's messages, with the tenant's names.
  CHECK_THAT(t.kubectl({"logs", "w", "--previous"}),
             FailedWith("previous terminated container \"main\" in pod \"w\" not found"));
  CHECK_THAT(t.kubectl({"logs", "w", "-c", "nope"}),
             FailedWith("container nope is not valid for pod w"));
  CHECK_THAT(t.kubectl({"get", "--raw", "/api/v1/namespaces/default/pods/w/log?tailLines=-3"}),
             FailedWith("tailLines: Invalid value: -3: must be greater than or equal to 0"));
  CHECK_THAT(t.kubectl({"logs", "nothere"}), FailedWith("pods \"nothere\" not found"));
  Result sim = t.kubectl({"logs", "sim"});
  CHECK_THAT(sim, FailedWith("pod sim runs on the simulated node"));
  CHECK_THAT(sim, FailedWith("which runs no containers: there are no logs to read"));
  CHECK(sim.out.find("-x-") == std::string::npos);
  CHECK(sim.err.find("-x-") == std::string::npos);
}

}  // namespace
}  // namespace vkube::e2e
