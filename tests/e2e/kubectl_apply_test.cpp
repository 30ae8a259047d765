// kubectl's writes that depend on the type registry: apply (client-side,
// strategic merge patches computed by kubectl), edit, set image, patch, diff,
// default (strict) validation, and explain on nested fields.
#include <fstream>
#include <sstream>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

const char* kV1 = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        ports: [{containerPort: 80}]
)";

// A container added, env B removed, the port changed.
const char* kV2 = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env: [{name: A, value: "1"}]
        ports: [{containerPort: 8080}]
      - name: side
        image: busybox
)";

json golden(const std::string& name) {
  std::ifstream in(std::string(VKUBE_SOURCE_DIR) + "/tests/e2e/golden/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

TEST_CASE("kubectl apply twice stores what kube-apiserver stores", "[e2e]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "namespace", "app"}), Succeeded());
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("v1.yaml", kV1)}), Succeeded());
  Result second = c.kubectl({"apply", "-f", c.file("v2.yaml", kV2)});
  REQUIRE_THAT(second, Succeeded());
  CHECK(second.out == "deployment.apps/web configured\n");
  CHECK(second.err.empty());  // no fallback warnings, no validation warnings

  json d = c.get_json({"deployment", "web", "-n", "app"});
  CHECK(d["spec"] == golden("deployment_after_apply.json"));
  json last = json::parse(
      d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].get<std::string>());
  CHECK(last["spec"]["template"]["spec"]["containers"].size() == 2);
  CHECK(last["spec"]["template"]["spec"]["containers"][0]["env"] == json::parse(R"([{"name":"A","value":"1"}])"));

  // Applying the same file again changes nothing.
  CHECK(c.kubectl({"apply", "-f", c.file("v2.yaml", kV2)}).out == "deployment.apps/web unchanged\n");
  // diff shows the way back to v1 and stores nothing (dryRun=All).
  Result diff = c.kubectl({"diff", "-f", c.file("v1.yaml", kV1)});
  CHECK(diff.exit_code == 1);  // 1: differences found
  CHECK(diff.out.find("-        - containerPort: 8080") != std::string::npos);
  CHECK(diff.out.find("+        - containerPort: 80") != std::string::npos);
  CHECK(c.get_json({"deployment", "web", "-n", "app"})["metadata"]["resourceVersion"] ==
        d["metadata"]["resourceVersion"]);
}

TEST_CASE("kubectl set image and patch and edit send strategic merge patches", "[e2e]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "namespace", "app"}), Succeeded());
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("v2.yaml", kV2)}), Succeeded());
  REQUIRE_THAT(c.kubectl({"set", "image", "deployment/web", "-n", "app", "side=busybox:1.36"}), Succeeded());
  CHECK(c.kubectl({"get", "deployment", "web", "-n", "app", "-o",
                   "jsonpath={.spec.template.spec.containers[*].image}"})
            .out == "nginx:1.27 busybox:1.36");
  // The default patch type is strategic: the container merges by name.
  REQUIRE_THAT(c.kubectl({"patch", "deployment", "web", "-n", "app", "-p",
                          R"({"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"C","value":"3"}]}]}}}})"}),
               Succeeded());
  json d = c.get_json({"deployment", "web", "-n", "app"});
  const json& cs = d["spec"]["template"]["spec"]["containers"];
  REQUIRE(cs.size() == 2);
  CHECK(cs[0]["env"] == json::parse(R"([{"name":"A","value":"1"},{"name":"C","value":"3"}])"));

  // edit with an editor that bumps the replicas.
  std::string editor = c.file("editor.sh", "#!/bin/sh\nsed -i 's/replicas: 2/replicas: 5/' \"$1\"\n");
  REQUIRE_THAT(c.run({"/bin/chmod", "+x", editor}), Succeeded());
  REQUIRE_THAT(c.run({"/usr/bin/env", "EDITOR=" + editor, kubectl_path(), "edit", "deployment/web", "-n", "app"}),
               Succeeded());
  CHECK(c.kubectl({"get", "deployment", "web", "-n", "app", "-o", "jsonpath={.spec.replicas}"}).out == "5");
}

TEST_CASE("default validation refuses unknown fields and names them", "[e2e]") {
  Cluster c;
  const char* bad = R"(apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: default}
data: {a: b}
dat: {c: d}
)";
  CHECK_THAT(c.kubectl({"create", "-f", c.file("bad.yaml", bad)}),
             FailedWith(R"(strict decoding error: unknown field "dat")"));
  CHECK_THAT(c.kubectl({"get", "configmap", "cfg"}), FailedWith("not found"));
  // --validate=false sends fieldValidation=Ignore: stored without the field.
  REQUIRE_THAT(c.kubectl({"create", "--validate=false", "-f", c.file("bad.yaml", bad)}), Succeeded());
  json cm = c.get_json({"configmap", "cfg"});
  CHECK_FALSE(cm.contains("dat"));
  CHECK(cm["data"] == json{{"a", "b"}});
  // --validate=warn stores it and prints the warning.
  Result warn = c.kubectl({"apply", "--validate=warn", "-f",
                           c.file("w.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntyp: Opaque\n")});
  REQUIRE_THAT(warn, Succeeded());
  CHECK(warn.err.find(R"(unknown field "typ")") != std::string::npos);
}

TEST_CASE("kubectl explain shows the real fields of nested types", "[e2e]") {
  Cluster c;
  Result r = c.kubectl({"explain", "pod.spec.containers.resources"});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out.find("limits\t<map[string]Quantity>") != std::string::npos);
  CHECK(r.out.find("requests\t<map[string]Quantity>") != std::string::npos);
  r = c.kubectl({"explain", "deployment.spec.strategy.rollingUpdate"});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out.find("maxSurge\t<IntOrString>") != std::string::npos);
  r = c.kubectl({"explain", "service.spec.ports"});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out.find("targetPort\t<IntOrString>") != std::string::npos);
  CHECK(r.out.find("port\t<integer> -required-") != std::string::npos);
  r = c.kubectl({"explain", "cronjob.spec.jobTemplate.spec.template.spec.volumes.configMap"});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out.find("defaultMode\t<integer>") != std::string::npos);
  CHECK_THAT(c.kubectl({"explain", "pod.spec.nope"}), FailedWith("field \"nope\" does not exist"));
}

}  // namespace
}  // namespace vkube::e2e
