// kubectl get -w and kubectl wait, each running while another kubectl writes.
#include <signal.h>

#include "fixture.h"

namespace vkube::e2e {
namespace {

const char* kSetup = R"(
apiVersion: v1
kind: Namespace
metadata: {name: watched}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: first, namespace: watched}
data: {state: starting}
)";

std::string configmap(const std::string& name) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: watched}\n";
}

TEST_CASE("kubectl get -w shows changes as they happen", "[e2e]") {
  Cluster c;
  c.setup(kSetup);

  SECTION("plain -w prints the list, then each new row") {
    Process watch = c.kubectl_background({"get", "configmaps", "-n", "watched", "-w"});
    INFO(watch.command());
    REQUIRE(watch.wait_for_out("first", seconds(15)));
    CHECK_THAT(watch.out(), Catch::StartsWith("NAME"));
    c.setup(configmap("second"));
    CHECK(watch.wait_for_out("second", seconds(10)));
    CHECK(watch.running());  // still watching
    watch.stop(SIGTERM, seconds(5));
    INFO(watch.result());
    CHECK(columns(lines(watch.out()).back()).at(0) == "second");
  }
  SECTION("--output-watch-events names each event; pods print their table rows") {
    Process watch =
        c.kubectl_background({"get", "configmaps", "-n", "watched", "-w", "--output-watch-events"});
    INFO(watch.command());
    REQUIRE(watch.wait_for_out("ADDED", seconds(15)));
    REQUIRE_THAT(c.kubectl({"patch", "configmap", "first", "-n", "watched", "--type=merge", "-p",
                            R"({"data":{"state":"running","more":"x"}})"}),
                 Succeeded());
    CHECK(watch.wait_for_out("MODIFIED", seconds(10)));
    REQUIRE_THAT(c.kubectl({"delete", "configmap", "first", "-n", "watched"}), Succeeded());
    CHECK(watch.wait_for_out("DELETED", seconds(10)));
    watch.stop(SIGTERM, seconds(5));
    // Every namespace holds kube-root-ca.crt; these lines are about ours.
    std::vector<std::string> ls;
    for (const std::string& l : lines(watch.out()))
      if (l.find("kube-root-ca.crt") == std::string::npos) ls.push_back(l);
    INFO(watch.result());
    REQUIRE(ls.size() == 4);
    CHECK(columns(ls[0]) == std::vector<std::string>{"EVENT", "NAME", "DATA", "AGE"});
    CHECK(columns(ls[1]).at(0) == "ADDED");
    CHECK(columns(ls[2]).at(0) == "MODIFIED");
    CHECK(columns(ls[2]).at(2) == "2");  // the DATA column after the patch
    CHECK(columns(ls[3]).at(0) == "DELETED");

    const std::string pod = R"(
apiVersion: v1
kind: Pod
metadata: {name: NAME, namespace: watched}
spec:
  containers:
  - {name: c, image: "busybox:1.36"}
)";
    auto named = [&](const std::string& name) {
      std::string yaml = pod;
      return yaml.replace(yaml.find("NAME"), 4, name);
    };
    c.setup(named("early-pod"));
    Process pods = c.kubectl_background({"get", "pods", "-A", "-w"});
    REQUIRE(pods.wait_for_out("early-pod", seconds(15)));  // listed; the watch follows
    c.setup(named("late-pod"));
    CHECK(pods.wait_for_out("late-pod", seconds(10)));
    pods.stop(SIGTERM, seconds(5));
    INFO(pods.result());
    CHECK(columns(lines(pods.out()).back()) ==
          std::vector<std::string>{"watched", "late-pod", "0/1", "Pending", "0",
                                   columns(lines(pods.out()).back()).back()});
  }
}

TEST_CASE("kubectl wait --for=jsonpath returns when a concurrent patch lands", "[e2e]") {
  Cluster c;
  c.setup(kSetup);
  Process wait = c.kubectl_background({"wait", "configmap/first", "-n", "watched",
                                       "--for=jsonpath={.data.state}=ready", "--timeout=30s"});
  INFO(wait.command());
  // It is waiting, not done: the condition does not hold yet.
  CHECK_FALSE(wait.wait_for(milliseconds(1500)).has_value());
  REQUIRE_THAT(c.kubectl({"patch", "configmap", "first", "-n", "watched", "--type=merge", "-p",
                          R"({"data":{"state":"almost"}})"}),
               Succeeded());
  CHECK_FALSE(wait.wait_for(milliseconds(500)).has_value());
  REQUIRE_THAT(c.kubectl({"patch", "configmap", "first", "-n", "watched", "--type=merge", "-p",
                          R"({"data":{"state":"ready"}})"}),
               Succeeded());
  auto code = wait.wait_for(seconds(10));
  INFO(wait.result());
  REQUIRE(code.has_value());
  CHECK(*code == 0);
  CHECK(wait.out() == "configmap/first condition met\n");

  // A condition that never comes: kubectl gives up at its timeout.
  Result never = c.kubectl({"wait", "configmap/first", "-n", "watched",
                            "--for=jsonpath={.data.state}=never", "--timeout=2s"});
  CHECK_THAT(never, FailedWith("timed out waiting for the condition on configmaps/first"));

  // --for=delete returns once another client deletes the object.
  Process gone = c.kubectl_background(
      {"wait", "configmap/first", "-n", "watched", "--for=delete", "--timeout=30s"});
  CHECK_FALSE(gone.wait_for(milliseconds(1000)).has_value());
  REQUIRE_THAT(c.kubectl({"delete", "configmap", "first", "-n", "watched"}), Succeeded());
  auto gone_code = gone.wait_for(seconds(10));
  INFO(gone.result());
  REQUIRE(gone_code.has_value());
  CHECK(*gone_code == 0);
  CHECK(gone.out() == "configmap/first condition met\n");
}

}  // namespace
}  // namespace vkube::e2e
