// kubectl's StatefulSet and DaemonSet workflows against the in-process
// controllers: apply with a volumeClaimTemplate, rollout status, the claims,
// set image, rollout history and undo, scale; a DaemonSet over Node objects.
// A shell loop plays the kubelet, marking new pods Running and Ready.
#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;
using Names = std::vector<std::string>;

const char* kStatefulSet = R"(
apiVersion: v1
kind: Service
metadata: {name: nginx}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80, name: web}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: nginx
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      # No volumeMounts of "data": vkube's StatefulSet validation does not yet
      # count volumeClaimTemplates as volumes (kube's does).
      containers:
      - name: nginx
        image: "nginx:1.27"
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
)";

// Marks every Pending pod of the default namespace Running and Ready, every
// 200 ms, until it is destroyed (the Process kills the loop).
Process start_kubelet(Cluster& c) {
  const std::string kubectl = kubectl_path();
  const std::string script =
      "while true; do\n"
      "  for p in $(" +
      kubectl +
      " get pods -o jsonpath='{range .items[?(@.status.phase==\"Pending\")]}{.metadata.name} "
      "{end}'); do\n"
      "    " +
      kubectl +
      " patch pod \"$p\" --subresource=status --type=merge -p "
      "'{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}"
      "]}}'"
      " >/dev/null 2>&1\n"
      "  done\n"
      "  sleep 0.2\n"
      "done\n";
  Spawn s;
  s.argv = {"/bin/sh", "-c", script};
  s.env = {{"KUBECONFIG", c.kubeconfig()}, {"KUBECACHEDIR", c.dir() + "/kubelet-cache"}};
  s.out_path = c.dir() + "/kubelet.out";
  s.err_path = c.dir() + "/kubelet.err";
  return Process(s);
}

// The first column of `kubectl get <what>` (without the header).
Names names(Cluster& c, const std::vector<std::string>& what) {
  std::vector<std::string> args = {"get"};
  args.insert(args.end(), what.begin(), what.end());
  Result r = c.kubectl(args);
  Names out;
  auto rows = lines(r.out);
  for (size_t i = 1; i < rows.size(); ++i) out.push_back(columns(rows[i])[0]);
  return out;
}

Names images(Cluster& c) {
  Names out;
  const json pods = c.get_json({"pods", "-l", "app=web"});
  for (const json& p : pods["items"]) out.push_back(p["spec"]["containers"][0]["image"]);
  return out;
}

// Checks that every web pod runs `image` within 30 s.
void check_all_run(Cluster& c, const std::string& image) {
  Names seen;
  bool ok = eventually(
      [&] {
        seen = images(c);
        return seen == Names(3, image);
      },
      seconds(30));
  std::string list;
  for (const std::string& i : seen) list += i + " ";
  INFO("images: " << list << "\n"
                  << c.kubectl({"get", "pods,sts,controllerrevisions", "-o", "wide"}).out);
  CHECK(ok);
}

void rollout_status(Cluster& c, const std::string& object, const std::string& last_line) {
  Result r = c.kubectl({"rollout", "status", object, "--timeout=60s"}, seconds(70));
  INFO(r << "\n" << c.server_log());
  REQUIRE_THAT(r, Succeeded());
  CHECK(lines(r.out).back() == last_line);
}

TEST_CASE("kubectl rolls a StatefulSet with claims out and back", "[e2e]") {
  Cluster c;
  Process kubelet = start_kubelet(c);
  REQUIRE(kubelet.running());

  Result r = c.kubectl({"apply", "--validate=false", "-f", c.file("web.yaml", kStatefulSet)});
  REQUIRE_THAT(r, Succeeded());
  rollout_status(c, "statefulset/web",
                 "partitioned roll out complete: 3 new pods have been updated...");
  CHECK(names(c, {"pods"}) == Names{"web-0", "web-1", "web-2"});
  CHECK(names(c, {"pvc"}) == Names{"data-web-0", "data-web-1", "data-web-2"});
  json pod = c.get_json({"pod", "web-1"});
  CHECK(pod["spec"]["hostname"] == "web-1");
  CHECK(pod["spec"]["subdomain"] == "nginx");
  CHECK(pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "data-web-1");
  json sts = c.get_json({"statefulset", "web"});
  CHECK(sts["status"]["readyReplicas"] == 3);
  CHECK(sts["status"]["currentRevision"] == sts["status"]["updateRevision"]);

  // kubectl describe's Events: each pod and claim the controller created.
  Result events = c.kubectl({"get", "events", "--field-selector", "involvedObject.name=web", "-o",
                             "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}"});
  REQUIRE_THAT(events, Succeeded());
  CHECK(events.out.find("create Pod web-0 in StatefulSet web successful") != std::string::npos);
  CHECK(events.out.find("create Claim data-web-2 Pod web-2 in StatefulSet web success") !=
        std::string::npos);

  REQUIRE_THAT(c.kubectl({"set", "image", "statefulset/web", "nginx=nginx:1.28"}), Succeeded());
  rollout_status(c, "statefulset/web",
                 "partitioned roll out complete: 3 new pods have been updated...");
  check_all_run(c, "nginx:1.28");

  Result h = c.kubectl({"rollout", "history", "statefulset/web"});
  REQUIRE_THAT(h, Succeeded());
  auto history = lines(h.out);
  REQUIRE(history.size() == 4);
  CHECK(columns(history[0]) == Names{"statefulset.apps/web"});
  CHECK(columns(history[1]) == Names{"REVISION", "CHANGE-CAUSE"});
  CHECK(columns(history[2]) == Names{"1", "<none>"});
  CHECK(columns(history[3]) == Names{"2", "<none>"});

  r = c.kubectl({"rollout", "undo", "statefulset/web"});
  INFO(r);
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out == "statefulset.apps/web rolled back\n");
  check_all_run(c, "nginx:1.27");
  rollout_status(c, "statefulset/web",
                 "partitioned roll out complete: 3 new pods have been updated...");
  // The first template's revision became the newest.
  history = lines(c.kubectl({"rollout", "history", "statefulset/web"}).out);
  REQUIRE(history.size() == 4);
  CHECK(columns(history[2])[0] == "2");
  CHECK(columns(history[3])[0] == "3");

  // Scaling down removes pods from the highest ordinal and keeps the claims.
  REQUIRE_THAT(c.kubectl({"scale", "statefulset", "web", "--replicas=1"}), Succeeded());
  REQUIRE(eventually([&] { return names(c, {"pods"}) == Names{"web-0"}; }, seconds(30)));
  CHECK(names(c, {"pvc"}) == Names{"data-web-0", "data-web-1", "data-web-2"});
  rollout_status(c, "statefulset/web",
                 "partitioned roll out complete: 1 new pods have been updated...");
}

TEST_CASE("kubectl rolls out a DaemonSet over the tenant's nodes", "[e2e]") {
  Cluster c;
  Process kubelet = start_kubelet(c);
  REQUIRE(kubelet.running());
  c.setup(R"(
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {role: worker}}
---
apiVersion: v1
kind: Node
metadata: {name: node-b, labels: {role: worker}}
---
apiVersion: v1
kind: Node
metadata: {name: node-c, labels: {role: control}}
)");
  Result r = c.kubectl({"apply", "--validate=false", "-f", c.file("ds.yaml", R"(
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
      nodeSelector: {role: worker}
      containers:
      - {name: agent, image: "agent:1"}
)")});
  REQUIRE_THAT(r, Succeeded());
  rollout_status(c, "daemonset/agent", "daemon set \"agent\" successfully rolled out");
  Result ds = c.kubectl({"get", "daemonset", "agent"});
  auto rows = lines(ds.out);
  REQUIRE(rows.size() == 2);
  // NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE
  const Names cells = columns(rows[1]);
  REQUIRE(cells.size() >= 7);
  CHECK(Names(cells.begin(), cells.begin() + 7) ==
        Names{"agent", "2", "2", "2", "2", "2", "role=worker"});

  REQUIRE_THAT(c.kubectl({"set", "image", "daemonset/agent", "agent=agent:2"}), Succeeded());
  rollout_status(c, "daemonset/agent", "daemon set \"agent\" successfully rolled out");
  REQUIRE(eventually([&] {
    Names all;
    const json pods = c.get_json({"pods", "-l", "app=agent"});
    for (const json& p : pods["items"])
      if (!p["metadata"].contains("deletionTimestamp"))
        all.push_back(p["spec"]["containers"][0]["image"]);
    return all == Names{"agent:2", "agent:2"};
  }));
  Result h = c.kubectl({"rollout", "history", "daemonset/agent"});
  REQUIRE_THAT(h, Succeeded());
  CHECK(lines(h.out).size() == 4);

  REQUIRE_THAT(c.kubectl({"delete", "node", "node-b"}), Succeeded());
  REQUIRE(eventually([&] { return c.get_json({"pods", "-l", "app=agent"})["items"].size() == 1; }));
}

}  // namespace
}  // namespace vkube::e2e
