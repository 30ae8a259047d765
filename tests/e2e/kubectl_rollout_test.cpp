// kubectl's Deployment workflow against the in-process controllers: create,
// scale, set image + rollout status, rollout history, undo, restart, pause
// and resume. A shell loop plays the kubelet, marking new pods Running and
// Ready through the status subresource while kubectl waits.
#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

// Marks every Pending pod of the default namespace Running and Ready, every
// 200 ms, until it is destroyed (the Process kills the loop).
Process start_kubelet(Cluster& c) {
  const std::string k = kubectl_path();
  const std::string pending =
      "'{range .items[?(@.status.phase==\"Pending\")]}{.metadata.name} {end}'";
  const std::string ready =
      R"('{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}')";
  const std::string script = "while true; do\n  for p in $(" + k +
                             " get pods -o jsonpath=" + pending + "); do\n    " + k +
                             " patch pod \"$p\" --subresource=status --type=merge -p " + ready +
                             " >/dev/null 2>&1\n  done\n  sleep 0.2\ndone\n";
  Spawn s;
  s.argv = {"/bin/sh", "-c", script};
  s.env = {{"KUBECONFIG", c.kubeconfig()}, {"KUBECACHEDIR", c.dir() + "/kubelet-cache"}};
  s.out_path = c.dir() + "/kubelet.out";
  s.err_path = c.dir() + "/kubelet.err";
  return Process(s);
}

// The live (not terminating) pods of app=web.
std::vector<json> web_pods(Cluster& c) {
  std::vector<json> out;
  json list = c.get_json({"pods", "-l", "app=web"});
  for (json& p : list["items"])
    if (!p["metadata"].contains("deletionTimestamp")) out.push_back(std::move(p));
  return out;
}

std::vector<json> web_replica_sets(Cluster& c) {
  return c.get_json({"replicasets", "-l", "app=web"})["items"].get<std::vector<json>>();
}

// Eventually exactly `n` live pods of app=web, all running `image`.
void require_pods(Cluster& c, size_t n, const std::string& image) {
  std::string seen;
  bool ok = eventually(
      [&] {
        auto pods = web_pods(c);
        seen.clear();
        for (const json& p : pods)
          seen += p["metadata"]["name"].get<std::string>() + " " +
                  p["spec"]["containers"][0]["image"].get<std::string>() + "\n";
        if (pods.size() != n) return false;
        for (const json& p : pods)
          if (p["spec"]["containers"][0]["image"] != image) return false;
        return true;
      },
      seconds(30));
  INFO("want " << n << " pods of " << image << ", have:\n"
               << seen << c.kubectl({"get", "deploy,rs,pods", "--show-labels"}).output());
  REQUIRE(ok);
}

void rollout_status(Cluster& c) {
  Result r = c.kubectl({"rollout", "status", "deployment/web", "--timeout=60s"}, seconds(70));
  INFO(r << "\n" << c.server_log());
  REQUIRE_THAT(r, Succeeded());
  CHECK(lines(r.out).back() == "deployment \"web\" successfully rolled out");
}

std::string revision(Cluster& c) {
  return c.get_json({"deployment", "web"})["metadata"]["annotations"].value(
      "deployment.kubernetes.io/revision", "");
}

TEST_CASE("kubectl rolls a Deployment out and back again", "[e2e]") {
  Cluster c;
  Process kubelet = start_kubelet(c);
  REQUIRE(kubelet.running());

  Result r = c.kubectl({"create", "deployment", "web", "--image=nginx:1", "--replicas=3"});
  REQUIRE_THAT(r, Succeeded());
  require_pods(c, 3, "nginx:1");
  rollout_status(c);
  json d = c.get_json({"deployment", "web"});
  CHECK(d["status"]["readyReplicas"] == 3);
  CHECK(d["status"]["availableReplicas"] == 3);
  CHECK(revision(c) == "1");

  REQUIRE_THAT(c.kubectl({"scale", "deployment", "web", "--replicas=5"}), Succeeded());
  require_pods(c, 5, "nginx:1");
  rollout_status(c);
  CHECK(web_replica_sets(c).size() == 1);

  r = c.kubectl({"set", "image", "deployment/web", "nginx=nginx:2"});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out == "deployment.apps/web image updated\n");
  rollout_status(c);
  require_pods(c, 5, "nginx:2");
  CHECK(revision(c) == "2");
  REQUIRE_THAT(c.kubectl({"annotate", "deployment/web", "kubernetes.io/change-cause=to nginx:2"}),
               Succeeded());

  // The change-cause reaches the current ReplicaSet; history lists both revisions.
  std::vector<std::string> history;
  REQUIRE(eventually([&] {
    Result h = c.kubectl({"rollout", "history", "deployment/web"});
    history = lines(h.out);
    return h.exit_code == 0 && history.size() == 4 && columns(history[3]).size() >= 2 &&
           history[3].find("to nginx:2") != std::string::npos;
  }));
  CHECK(columns(history[0]) == std::vector<std::string>{"deployment.apps/web"});
  CHECK(columns(history[1]) == std::vector<std::string>{"REVISION", "CHANGE-CAUSE"});
  CHECK(columns(history[2]) == std::vector<std::string>{"1", "<none>"});
  CHECK(columns(history[3]) == std::vector<std::string>{"2", "to", "nginx:2"});

  // Undo: back to the first template, whose ReplicaSet becomes revision 3.
  r = c.kubectl({"rollout", "undo", "deployment/web"});
  INFO(r);
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out == "deployment.apps/web rolled back\n");
  rollout_status(c);
  require_pods(c, 5, "nginx:1");
  REQUIRE(eventually([&] { return revision(c) == "3"; }));
  CHECK(web_replica_sets(c).size() == 2);
  Result h = c.kubectl({"rollout", "history", "deployment/web"});
  REQUIRE_THAT(h, Succeeded());
  auto hl = lines(h.out);
  REQUIRE(hl.size() == 4);
  CHECK(columns(hl[2])[0] == "2");
  CHECK(columns(hl[3])[0] == "3");

  // Restart: a template annotation, so a third ReplicaSet with new pods.
  r = c.kubectl({"rollout", "restart", "deployment/web"});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out == "deployment.apps/web restarted\n");
  REQUIRE(eventually([&] { return web_replica_sets(c).size() == 3; }));
  rollout_status(c);
  require_pods(c, 5, "nginx:1");
  for (const json& p : web_pods(c))
    CHECK(p["metadata"]["annotations"].contains("kubectl.kubernetes.io/restartedAt"));
  CHECK(revision(c) == "4");

  // Paused: a new template waits for resume.
  REQUIRE_THAT(c.kubectl({"rollout", "pause", "deployment/web"}), Succeeded());
  REQUIRE_THAT(c.kubectl({"set", "image", "deployment/web", "nginx=nginx:3"}), Succeeded());
  REQUIRE(eventually([&] {
    json cur = c.get_json({"deployment", "web"});
    for (const json& cond : cur["status"].value("conditions", json::array()))
      if (cond["type"] == "Progressing") return cond["reason"] == "DeploymentPaused";
    return false;
  }));
  CHECK(web_replica_sets(c).size() == 3);
  Result paused = c.kubectl({"rollout", "undo", "deployment/web"});
  CHECK_THAT(paused, FailedWith("you cannot rollback a paused deployment"));
  REQUIRE_THAT(c.kubectl({"rollout", "resume", "deployment/web"}), Succeeded());
  rollout_status(c);
  require_pods(c, 5, "nginx:3");
  CHECK(web_replica_sets(c).size() == 4);

  // What `kubectl describe` shows: the controller's scaling events.
  Result ev = c.kubectl({"get", "events", "--field-selector", "reason=ScalingReplicaSet", "-o",
                         "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}"});
  REQUIRE_THAT(ev, Succeeded());
  CHECK(ev.out.find("Scaled up replica set web-") != std::string::npos);
  CHECK(ev.out.find("Scaled down replica set web-") != std::string::npos);
}

}  // namespace
}  // namespace vkube::e2e
