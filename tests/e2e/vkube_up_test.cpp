// `vkube up`: the embedded default (a host with simulated GPU nodes and one
// tenant) from one command, with real kubectl: the tenant's pod runs on the
// host; SIGINT stops both processes cleanly; running it again over the same
// directory resumes the same state.
#include <signal.h>
#include <stdlib.h>

#include <filesystem>

#include "fixture.h"

namespace vkube::e2e {
namespace {

struct Up {
  std::string dir;
  std::optional<Process> proc;

  void start() {
    Spawn s;
    s.argv = {VKUBE_BINARY,    "up",          "--data-dir", dir + "/state",
              "--host-listen", "127.0.0.1:0", "--tenant",   "lab"};
    s.out_path = dir + "/up.out";
    s.err_path = dir + "/up.err";
    proc.emplace(s);
    REQUIRE(proc->wait_for_out("vkube is up", seconds(60)));
  }
  Result kubectl(const std::string& who, std::vector<std::string> args) {
    Spawn s;
    s.argv = {kubectl_path()};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    s.env["KUBECONFIG"] = who == "host" ? dir + "/state/host/admin.kubeconfig"
                                        : dir + "/state/tenants/lab/admin.kubeconfig";
    s.out_path = dir + "/kubectl.out";
    s.err_path = dir + "/kubectl.err";
    return run(s, seconds(30));
  }
};

TEST_CASE("vkube up starts a host and a tenant, stops them on SIGINT and resumes", "[e2e][up]") {
  std::string tmpl = (std::filesystem::temp_directory_path() / "vkube-up-XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  Up up{tmpl, {}};
  up.start();
  CHECK(up.proc->out().find("export KUBECONFIG=" + tmpl + "/state/tenants/lab/admin.kubeconfig") !=
        std::string::npos);
  REQUIRE_THAT(up.kubectl("tenant", {"run", "hello", "--image=nginx", "--restart=Never"}),
               Succeeded());
  REQUIRE_THAT(up.kubectl("tenant", {"wait", "--for=jsonpath={.status.phase}=Running", "pod/hello",
                                     "--timeout=30s"}),
               Succeeded());
  // The tenant is a pod of the host (its control plane), next to the pod it synced.
  CHECK(up.kubectl("host", {"get", "pods", "-n", "vkube-lab", "-o", "name"}).out ==
        "pod/hello-x-default-x-lab\npod/vkube-0\n");
  Spawn list;
  list.argv = {VKUBE_BINARY, "list", "--data-dir", tmpl + "/state"};
  list.out_path = tmpl + "/list.out";
  list.err_path = tmpl + "/list.err";
  Result listed = run(list, seconds(30));
  REQUIRE_THAT(listed, Succeeded());
  CHECK(listed.out.find("lab ") != std::string::npos);

  // SIGINT (Ctrl-C) stops both processes and `vkube up` exits 0.
  REQUIRE(kill(up.proc->pid(), SIGINT) == 0);
  auto code = up.proc->wait_for(seconds(30));
  REQUIRE(code.has_value());
  CHECK(*code == 0);
  CHECK(up.proc->out().find("vkube stopped") != std::string::npos);
  Spawn pgrep;
  pgrep.argv = {"/usr/bin/pgrep", "-f", "--", "--name=lab"};
  pgrep.out_path = tmpl + "/pgrep.out";
  pgrep.err_path = tmpl + "/pgrep.err";
  CHECK(run(pgrep, seconds(5)).exit_code == 1);  // the tenant's process is gone too

  // Again over the same directory: the same pod, Running again on the host.
  up.start();
  CHECK_THAT(up.kubectl("tenant", {"wait", "--for=jsonpath={.status.phase}=Running", "pod/hello",
                                   "--timeout=30s"}),
             Succeeded());
  CHECK(up.kubectl("host", {"get", "pods", "-n", "vkube-lab", "-o", "name"}).out ==
        "pod/hello-x-default-x-lab\npod/vkube-0\n");
  REQUIRE(kill(up.proc->pid(), SIGTERM) == 0);
  CHECK(up.proc->wait_for(seconds(30)) == std::optional<int>(0));
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace vkube::e2e
