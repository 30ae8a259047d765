// kubectl apply --server-side: create and update through apply patches,
// managedFields, conflicts between managers, --force-conflicts, pruning of
// fields dropped from the file, the migration from client-side apply, and
// diff --server-side (dryRun=All).
#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

const char* kV1 = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: app
  labels: {team: a}
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
)";

// replicas 3; env B and the team label dropped.
const char* kV2 = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env: [{name: A, value: "1"}]
)";

const char* kOther = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 5
)";

const std::string kPath = "/apis/apps/v1/namespaces/app/deployments/web";

// The managedFields entry of `manager` with `operation`, or null.
json entry(const json& obj, const std::string& manager, const std::string& operation) {
  for (const json& e : obj["metadata"].value("managedFields", json::array()))
    if (e["manager"] == manager && e["operation"] == operation) return e;
  return nullptr;
}

TEST_CASE("kubectl apply --server-side creates, updates and tracks managers", "[e2e]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "namespace", "app"}), Succeeded());
  Result created = c.kubectl({"apply", "--server-side", "-f", c.file("v1.yaml", kV1)});
  REQUIRE_THAT(created, Succeeded());
  CHECK(created.out == "deployment.apps/web serverside-applied\n");

  json d = c.raw_json(kPath);
  CHECK(d["spec"]["replicas"] == 2);
  CHECK(d["spec"]["strategy"]["type"] == "RollingUpdate");  // defaults still apply
  // kubectl's Apply entry; the deployment controller adds its own Update
  // entries (the revision annotation, the status), as on a real cluster.
  int applies = 0;
  for (const json& e : d["metadata"]["managedFields"])
    applies += e["operation"] == "Apply";
  REQUIRE(applies == 1);
  json mine = entry(d, "kubectl", "Apply");
  REQUIRE(mine.is_object());
  CHECK(mine["apiVersion"] == "apps/v1");
  CHECK(mine["fieldsType"] == "FieldsV1");
  CHECK(mine["fieldsV1"]["f:spec"]["f:replicas"] == json::object());
  CHECK(mine["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"][R"(k:{"name":"app"})"]
            ["f:env"]
                .contains(R"(k:{"name":"B"})"));
  // kubectl hides managedFields unless asked.
  CHECK_FALSE(c.get_json({"deployment", "web", "-n", "app"})["metadata"].contains("managedFields"));
  CHECK(
      c.get_json({"deployment", "web", "-n", "app", "--show-managed-fields"})["metadata"].contains(
          "managedFields"));

  // What the file no longer says goes; what it changes changes.
  REQUIRE_THAT(c.kubectl({"apply", "--server-side", "-f", c.file("v2.yaml", kV2)}), Succeeded());
  d = c.raw_json(kPath);
  CHECK(d["spec"]["replicas"] == 3);
  CHECK(d["spec"]["template"]["spec"]["containers"][0]["env"] ==
        json::parse(R"([{"name":"A","value":"1"}])"));
  CHECK_FALSE(d["metadata"].contains("labels"));

  // Another manager changing replicas conflicts, naming the owner and field.
  Result refused = c.kubectl(
      {"apply", "--server-side", "--field-manager=other", "-f", c.file("other.yaml", kOther)});
  CHECK_THAT(
      refused,
      FailedWith(R"(Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas)"));
  CHECK(c.raw_json(kPath)["spec"]["replicas"] == 3);

  // --force-conflicts takes the field over.
  REQUIRE_THAT(c.kubectl({"apply", "--server-side", "--field-manager=other", "--force-conflicts",
                          "-f", c.file("other.yaml", kOther)}),
               Succeeded());
  d = c.raw_json(kPath);
  CHECK(d["spec"]["replicas"] == 5);
  CHECK(entry(d, "other", "Apply")["fieldsV1"] == json::parse(R"({"f:spec":{"f:replicas":{}}})"));
  CHECK_FALSE(entry(d, "kubectl", "Apply")["fieldsV1"]["f:spec"].contains("f:replicas"));

  // kubectl scale is an Update of the scale subresource.
  REQUIRE_THAT(c.kubectl({"scale", "deployment/web", "-n", "app", "--replicas=1"}), Succeeded());
  d = c.raw_json(kPath);
  json scaled;
  for (const json& e : d["metadata"]["managedFields"])
    if (e.value("subresource", "") == "scale") scaled = e;
  REQUIRE(scaled.is_object());
  CHECK(scaled["operation"] == "Update");
  CHECK(scaled["fieldsV1"] == json::parse(R"({"f:spec":{"f:replicas":{}}})"));
  CHECK(entry(d, "other", "Apply").is_null());  // it owned nothing else

  // diff --server-side applies with dryRun=All: it shows the change, stores
  // nothing. (Without replicas, which kubectl no longer owns: scale has them.)
  std::string v3 = kV2;
  v3.replace(v3.find("nginx:1.27"), 10, "nginx:1.28");
  v3.erase(v3.find("  replicas: 3\n"), 14);
  std::string rv = d["metadata"]["resourceVersion"];
  Result diff = c.kubectl({"diff", "--server-side", "-f", c.file("v3.yaml", v3)});
  INFO(diff.output());
  CHECK(diff.exit_code == 1);  // 1: differences found
  CHECK(diff.out.find("+        image: nginx:1.28") != std::string::npos);
  json after = c.raw_json(kPath);
  CHECK(after["metadata"]["resourceVersion"] == rv);
  CHECK(after["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27");
}

TEST_CASE("kubectl apply --server-side takes over from client-side apply", "[e2e]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "namespace", "app"}), Succeeded());
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("v1.yaml", kV1)}), Succeeded());
  json d = c.raw_json(kPath);
  REQUIRE(entry(d, "kubectl-client-side-apply", "Update").is_object());

  // The server-side apply changes replicas, which client-side apply owned:
  // the last-applied annotation shows it was kubectl's, so no conflict.
  Result ssa = c.kubectl({"apply", "--server-side", "-f", c.file("v2.yaml", kV2)});
  REQUIRE_THAT(ssa, Succeeded());
  d = c.raw_json(kPath);
  CHECK(d["spec"]["replicas"] == 3);
  // kubectl moved the client-side fields to its Apply entry.
  CHECK(entry(d, "kubectl-client-side-apply", "Update").is_null());
  json mine = entry(d, "kubectl", "Apply");
  REQUIRE(mine.is_object());
  CHECK(mine["fieldsV1"]["f:spec"].contains("f:replicas"));
  // env B and the label, dropped from the file, are gone.
  CHECK(d["spec"]["template"]["spec"]["containers"][0]["env"] ==
        json::parse(R"([{"name":"A","value":"1"}])"));
  CHECK_FALSE(d["metadata"].contains("labels"));
  // The annotation follows what was applied, so client-side apply can resume.
  json last =
      json::parse(d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                      .get<std::string>());
  CHECK(last["spec"]["replicas"] == 3);
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("v1.yaml", kV1)}), Succeeded());
  CHECK(c.raw_json(kPath)["spec"]["replicas"] == 2);
}

}  // namespace
}  // namespace vkube::e2e
