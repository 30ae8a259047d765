// pods/exec, attach and port-forward end to end, with real kubectl (both of
// its wires: WebSocket, the default, and the SPDY fallback) and the Python
// client. The pods are `vkube workload` local processes on `vkube host`,
// reached through a tenant's relay to the host, and directly on the host.
#include <csignal>
#include <map>
#include <regex>

#include "fixture.h"

namespace vkube::e2e {
namespace {

std::string workload_pod(const std::string& name, const std::vector<std::string>& args,
                         const std::string& restart = "Always") {
  std::string yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
                     "\nspec:\n  restartPolicy: " + restart +
                     "\n  containers:\n  - name: main\n    image: vkube\n    args: [workload";
  for (const std::string& a : args) yaml += ", \"" + a + "\"";
  return yaml + "]\n";
}

const std::string kPods =
    workload_pod("w", {"--log-lines", "0"}) + "---\n" +
    workload_pod("echo", {"--log-lines", "0", "--echo-listen", "0.0.0.0:9000"}) + "---\n" +
    workload_pod("ticker", {"--log-lines", "100000", "--log-interval-ms", "100"}) + "---\n" +
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: sim\nspec:\n  containers:\n"
    "  - name: main\n    image: nginx:1.27\n";

void wait_ready(Cluster& c, const std::vector<std::string>& pods) {
  for (const std::string& pod : pods) {
    Result r = c.kubectl({"wait", "--for=condition=Ready", "pod/" + pod, "--timeout=60s"},
                         seconds(70));
    INFO(r << c.server_log());
    REQUIRE_THAT(r, Succeeded());
  }
}

// kubectl with the given environment, through `env`, and `input` on stdin.
Result kubectl_env(Cluster& c, const std::string& env, const std::string& args,
                   const std::string& input = "") {
  std::string cmd = "env " + env + " " + kubectl_path() + " " + args;
  if (!input.empty()) cmd = "printf '" + input + "' | " + cmd;
  return c.run({"/bin/sh", "-c", cmd}, seconds(30));
}

// Sends 256 KiB through a local port and checks that the same comes back.
Result echo_through(Cluster& c, const std::string& port) {
  return c.run({kPython, "-c",
                "import socket,sys\n"
                "s=socket.create_connection(('127.0.0.1'," + port + "),timeout=10)\n"
                "data=bytes(range(256))*1024\n"
                "s.sendall(data)\n"
                "got=b''\n"
                "while len(got)<len(data):\n"
                "  c=s.recv(65536)\n"
                "  if not c: break\n"
                "  got+=c\n"
                "print('same' if got==data else 'differs %d' % len(got))\n"},
               seconds(20));
}

// `kubectl port-forward pod/echo :9000` (a free local port), an echo through
// it twice (two connections over one forward), then stop.
void check_port_forward(Cluster& c, const std::map<std::string, std::string>& env) {
  Process pf = c.kubectl_background({"port-forward", "pod/echo", ":9000"}, env);
  REQUIRE(pf.wait_for_out(" -> 9000", seconds(20)));
  std::smatch m;
  const std::string out = pf.out();
  REQUIRE(std::regex_search(out, m, std::regex(R"(127\.0\.0\.1:(\d+) -> 9000)")));
  for (int i = 0; i < 2; ++i) {
    Result r = echo_through(c, m[1]);
    INFO(r << pf.err());
    CHECK(r.out == "same\n");
  }
  CHECK(pf.running());
  pf.stop(SIGTERM, seconds(5));
}

void check_exec(Cluster& c, const std::string& env) {
  INFO("kubectl with " << env);
  // Output, stderr and the exit code.
  Result r = kubectl_env(c, env, "exec w -- sh -c 'echo out; echo err >&2; exit 7'");
  CHECK(r.exit_code == 7);
  CHECK(r.out == "out\n");
  CHECK_THAT(r.err, Catch::Contains("err\n"));
  CHECK_THAT(r.err, Catch::Contains("command terminated with exit code 7"));
  // stdin to the end, and the tenant's pod name as the hostname.
  r = kubectl_env(c, env, "exec -i w -- sh -c 'cat; echo \"host=$HOSTNAME\"'", "a\\nb\\n");
  CHECK_THAT(r, Succeeded());
  CHECK(r.out == "a\nb\nhost=w\n");
  // A program that is not there: 127 and the runtime's message.
  r = kubectl_env(c, env, "exec w -- /no/such/program");
  CHECK(r.exit_code == 127);
  CHECK_THAT(r.output(), Catch::Contains("/no/such/program"));
  // A terminal: the command sees a tty, and stdin reaches the shell.
  r = c.run({"/bin/sh", "-c",
             "printf 'tty; exit 4\\n' | script -qec \"env " + env + " " + kubectl_path() +
                 " exec -it w -- sh\" /dev/null"},
            seconds(30));
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.out, Catch::Contains("/dev/pts/"));
  // attach follows what the container prints from now on.
  r = c.run({"/bin/sh", "-c", "timeout 2 env " + env + " " + kubectl_path() + " attach ticker"},
            seconds(10));
  CHECK_THAT(r.out, Catch::Contains("line "));
}

TEST_CASE("pods/exec, attach, port-forward: kubectl and Python through a tenant",
          "[e2e][pods]") {
  Cluster host(Cluster::Host{});
  // The operator lets this tenant's vkube-image pods run as local processes.
  Cluster t(Cluster::Serve{
      {"--name", "ex", "--host-kubeconfig", host.kubeconfig(), "--host-unsandboxed-local-pods"}});
  t.setup(kPods + "---\n" +
          workload_pod("done", {"--log-lines", "1", "--exit-after-ms", "0"}, "Never"));
  wait_ready(t, {"w", "echo", "ticker", "sim"});

  check_exec(t, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true");
  check_exec(t, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false");  // SPDY/3.1
  check_port_forward(t, {});
  check_port_forward(t, {{"KUBECTL_PORT_FORWARD_WEBSOCKETS", "false"}});

  Result py = t.run({kPython, std::string(VKUBE_SOURCE_DIR) + "/tests/e2e/python_pod_stream.py",
                     "w", "echo"},
                    seconds(60));
  INFO(py);
  CHECK_THAT(py, Succeeded());
  CHECK_THAT(py.out, Catch::EndsWith("PASS\n"));

  // kubectl top: the tenant's pods under their names, measured on the host;
  // the simulated pod runs nothing and shows a simulated usage (kubectl_top_test.cpp).
  {
    Result top;
    REQUIRE(eventually([&] {
      top = t.kubectl({"top", "pod", "--no-headers"});
      return top.exit_code == 0 && top.out.find("ticker") != std::string::npos;
    }));
    INFO(top);
    std::map<std::string, std::vector<std::string>> rows;
    for (const std::string& line : lines(top.out)) rows[columns(line).at(0)] = columns(line);
    CHECK(rows.count("w") == 1);
    CHECK(rows.count("echo") == 1);
    CHECK(rows.count("sim") == 1);
    REQUIRE(rows["w"].size() == 3);
    CHECK_THAT(rows["w"][1], Catch::EndsWith("m"));   // CPU in millicores
    CHECK_THAT(rows["w"][2], Catch::EndsWith("Mi"));  // memory
    CHECK(rows["w"][2] != "0Mi");
    Result nodes = t.kubectl({"top", "node", "--no-headers"});
    CHECK_THAT(nodes, Succeeded());
    CHECK(!lines(nodes.out).empty());
    CHECK_THAT(t.kubectl({"top", "pod", "nope"}),
               FailedWith("podmetrics.metrics.k8s.io \"nope\" not found"));
    // kubectl get shows metrics-server's columns.
    Result get = t.kubectl({"get", "podmetrics", "w"});
    INFO(get);
    REQUIRE_THAT(get, Succeeded());
    REQUIRE(lines(get.out).size() == 2);
    CHECK(columns(lines(get.out)[0]) == std::vector<std::string>{"NAME", "CPU", "MEMORY", "WINDOW"});
    CHECK(columns(lines(get.out)[1]).at(0) == "w");
    CHECK_THAT(columns(lines(get.out)[1]).at(2), Catch::EndsWith("Ki"));
  }

  // kube's refusals, with the tenant's names.
  CHECK_THAT(t.kubectl({"exec", "w", "-c", "nope", "--", "true"}),
             FailedWith("container nope is not valid for pod w"));
  CHECK_THAT(t.kubectl({"exec", "nothere", "--", "true"}), FailedWith("pods \"nothere\" not found"));
  std::string done_phase;
  bool done = eventually(
      [&] {
        done_phase = t.get_json({"pod", "done"})["status"].value("phase", "");
        return done_phase == "Succeeded";
      },
      seconds(30));
  INFO("pod done: " << done_phase << "\n" << t.kubectl({"get", "pod", "done", "-o", "yaml"}).out
                    << host.kubectl({"get", "pods", "-A", "-o", "wide"}).out);
  REQUIRE(done);
  CHECK_THAT(t.kubectl({"exec", "done", "--", "true"}),
             FailedWith("cannot exec into a container in a completed pod"));
  Result sim = t.kubectl({"exec", "sim", "--", "true"});
  CHECK_THAT(sim, FailedWith("runs on the simulated node"));
  CHECK(sim.output().find("-x-") == std::string::npos);
  CHECK_THAT(t.kubectl({"get", "--raw", "/api/v1/namespaces/default/pods/w/exec?command=true"}),
             FailedWith("you must specify at least 1 of stdin, stdout, stderr"));
}

TEST_CASE("pods/exec and port-forward on vkube host itself", "[e2e][pods]") {
  Cluster host(Cluster::Host{});
  // The host's operator lets pods of namespace default run as local processes.
  REQUIRE_THAT(host.kubectl({"label", "namespace", "default", "vkube.io/unsandboxed-local-pods=true"}),
               Succeeded());
  host.setup(kPods);
  wait_ready(host, {"w", "echo", "ticker"});
  Result r = host.kubectl({"exec", "w", "--", "sh", "-c", "echo \"$HOSTNAME\"; exit 2"});
  CHECK(r.exit_code == 2);
  CHECK(r.out == "w\n");
  check_port_forward(host, {});
  Result top = host.kubectl({"top", "pod", "w", "--no-headers"});
  CHECK_THAT(top, Succeeded());
  CHECK_THAT(top.out, Catch::StartsWith("w "));
}

}  // namespace
}  // namespace vkube::e2e
