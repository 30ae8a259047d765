// --dry-run=server through kubectl for every verb that takes it: create,
// apply (client- and server-side), replace, patch, label, annotate, scale and
// delete (one object, --all, a namespace, foreground cascades, an object held
// by a finalizer). Each answers as if done and changes nothing: the objects
// keep their content and resourceVersion, and a watcher hears nothing.
#include <csignal>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

const char* kObjects = R"(
apiVersion: v1
kind: Namespace
metadata: {name: keep}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: keep}
data: {mode: calm}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: keep, finalizers: [example.com/hold]}
data: {mode: held}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: keep}
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - {name: nginx, image: "nginx:1.27"}
)";

const char* kChanged = R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: keep}
data: {mode: wild}
)";

const char* kNew = R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: fresh, namespace: keep}
data: {mode: new}
)";

// The config maps' names, data and resourceVersions: what a dry run must not touch.
json config_maps(Cluster& c) {
  json out = json::object();
  const json maps = c.get_json({"configmaps", "-n", "keep"});
  for (const json& m : maps["items"]) {
    if (m["metadata"]["name"] == "kube-root-ca.crt") continue;  // the controller's, not ours
    out[m["metadata"]["name"].get<std::string>()] = {
        {"data", m.value("data", json())},
        {"rv", m["metadata"]["resourceVersion"]},
        {"labels", m["metadata"].value("labels", json())},
        {"annotations", m["metadata"].value("annotations", json())},
        {"deleting", m["metadata"].contains("deletionTimestamp")},
        {"finalizers", m["metadata"].value("finalizers", json())}};
  }
  return out;
}

TEST_CASE("kubectl --dry-run=server changes nothing, for every verb", "[e2e][dryrun]") {
  Cluster c;
  c.setup(kObjects);
  const std::string changed = c.file("changed.yaml", kChanged);
  const std::string fresh = c.file("fresh.yaml", kNew);
  // The Deployment's controller settles first (its status is not ours to freeze).
  REQUIRE(eventually([&] { return !c.get_json({"replicasets", "-n", "keep"})["items"].empty(); }));
  const json deploy_before = c.get_json({"deployment", "web", "-n", "keep"});
  const json before = config_maps(c);
  Process watch =
      c.kubectl_background({"get", "configmaps", "-n", "keep", "--watch-only", "-o", "name"});

  const std::vector<std::vector<std::string>> commands = {
      {"create", "configmap", "made", "-n", "keep", "--from-literal=a=b"},
      {"create", "-f", fresh},
      {"apply", "-f", fresh},
      {"apply", "-f", changed},
      {"apply", "--server-side", "--force-conflicts", "-f", changed},
      {"apply", "--server-side", "-f", fresh},
      {"replace", "-f", changed},
      {"patch", "configmap", "settings", "-n", "keep", "-p", R"({"data":{"mode":"patched"}})"},
      {"label", "configmap", "settings", "-n", "keep", "tier=gold"},
      {"annotate", "configmap", "settings", "-n", "keep", "note=hi"},
      {"scale", "deployment", "web", "-n", "keep", "--replicas=5"},
      {"delete", "configmap", "settings", "-n", "keep"},
      {"delete", "configmap", "held", "-n", "keep"},
      {"delete", "configmaps", "--all", "-n", "keep"},
      {"delete", "deployment", "web", "-n", "keep", "--cascade=foreground"},
      {"delete", "deployment", "web", "-n", "keep", "--cascade=orphan"},
      {"delete", "namespace", "keep"},
  };
  for (std::vector<std::string> args : commands) {
    args.push_back("--dry-run=server");
    Result r = c.kubectl(args);
    INFO(r);
    CHECK_THAT(r, Succeeded());
    // kubectl patch alone prints no dry-run suffix (its printer is not told).
    if (args[0] != "patch") CHECK(r.out.find("(server dry run)") != std::string::npos);
  }

  CHECK(config_maps(c) == before);
  for (const char* name : {"made", "fresh"})
    CHECK_THAT(c.kubectl({"get", "configmap", name, "-n", "keep"}), FailedWith("NotFound"));
  const json deploy = c.get_json({"deployment", "web", "-n", "keep"});
  CHECK(deploy["spec"]["replicas"] == 1);
  CHECK(deploy["metadata"]["generation"] == deploy_before["metadata"]["generation"]);
  CHECK_FALSE(deploy["metadata"].contains("deletionTimestamp"));
  CHECK_FALSE(deploy["metadata"].contains("finalizers"));
  CHECK_FALSE(c.get_json({"replicasets", "-n", "keep"})["items"].empty());
  const json ns = c.get_json({"namespace", "keep"});
  CHECK(ns["status"]["phase"] == "Active");
  CHECK_FALSE(ns["metadata"].contains("deletionTimestamp"));

  // The watcher heard only the real write made last.
  REQUIRE_THAT(c.kubectl({"create", "configmap", "real", "-n", "keep"}), Succeeded());
  REQUIRE(watch.wait_for_out("configmap/real", seconds(10)));
  watch.stop(SIGTERM, seconds(2));
  for (const std::string& line : lines(watch.out())) {
    INFO(line);
    CHECK((line == "configmap/real" || line == "configmap/kube-root-ca.crt"));
  }
}

TEST_CASE("an unsupported dryRun value gets kube's Invalid message", "[e2e][dryrun]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "configmap", "settings"}), Succeeded());
  Result r =
      c.kubectl({"delete", "--raw", "/api/v1/namespaces/default/configmaps/settings?dryRun=yes"});
  CHECK_THAT(r, FailedWith("The DeleteOptions \"\" is invalid: dryRun: Unsupported value: "
                           "[\"yes\"]: supported values: \"All\""));
  CHECK_THAT(c.kubectl({"get", "configmap", "settings"}), Succeeded());
}

}  // namespace
}  // namespace vkube::e2e
