// The kinds' own strategies as real clients meet them: a Service's type
// change by a three-way apply, statuses the Python client can read, an HPA
// read in the other autoscaling version, `resourceVersion: "0"` on replace,
// and a StatefulSet whose claim templates carry apiVersion and kind.
#include "fixture.h"

namespace vkube::e2e {
namespace {

using nlohmann::json;

std::string service(const std::string& type) {
  return R"(apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: )" +
         type + R"(
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
)";
}

TEST_CASE("kubectl apply turns a LoadBalancer Service into a ClusterIP one", "[e2e][strategy]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("lb.yaml", service("LoadBalancer"))}), Succeeded());
  json before = c.get_json({"service", "web"});
  REQUIRE(before["spec"]["ports"][0].contains("nodePort"));
  // The three-way merge keeps the allocated nodePort (the manifests never
  // named it): kube drops it with the type that needed it.
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("ip.yaml", service("ClusterIP"))}), Succeeded());
  json after = c.get_json({"service", "web"});
  CHECK(after["spec"]["type"] == "ClusterIP");
  CHECK_FALSE(after["spec"]["ports"][0].contains("nodePort"));
  CHECK_FALSE(after["spec"].contains("externalTrafficPolicy"));
  CHECK(after["spec"]["clusterIP"] == before["spec"]["clusterIP"]);
}

const char* kWorkloads = R"(
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  replicas: 0
  selector: {app: rc}
  template:
    metadata: {labels: {app: rc}}
    spec: {containers: [{name: c, image: "nginx:1.27"}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  selector: {matchLabels: {app: ds}}
  template:
    metadata: {labels: {app: ds}}
    spec:
      nodeSelector: {no-such-node: "true"}
      containers: [{name: c, image: "nginx:1.27"}]
)";

TEST_CASE("the Python client reads a new ReplicationController and DaemonSet", "[e2e][strategy]") {
  Cluster c;
  c.setup(kWorkloads);
  // The client's models refuse a status without its required fields
  // ("Invalid value for `replicas`, must not be None").
  Result r = c.run({kPython, "-c", R"(
from kubernetes import client, config
config.load_kube_config()
rc = client.CoreV1Api().read_namespaced_replication_controller("rc", "default")
ds = client.AppsV1Api().read_namespaced_daemon_set("ds", "default")
print("rc", rc.status.replicas, "ds", ds.status.desired_number_scheduled, ds.status.number_ready)
)"});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out == "rc 0 ds 0 0\n");
}

const char* kHpaV1 = R"(
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
  targetCPUUtilizationPercentage: 70
---
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: plain}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
)";

TEST_CASE("an HPA created through autoscaling/v1 reads through v2 with its metric",
          "[e2e][strategy]") {
  Cluster c;
  c.setup(kHpaV1);
  json v2 = c.get_json({"horizontalpodautoscalers.v2.autoscaling", "web"});
  CHECK(v2["apiVersion"] == "autoscaling/v2");
  CHECK(v2["spec"]["metrics"] == json::parse(R"([{"type":"Resource","resource":{"name":"cpu",
    "target":{"type":"Utilization","averageUtilization":70}}}])"));
  // No target in v1 is v2's default, 80 % CPU.
  json plain = c.get_json({"horizontalpodautoscalers.v2.autoscaling", "plain"});
  CHECK(plain["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80);

  // A v2 object with a second metric: v1 shows the CPU target and keeps the
  // rest in its annotation.
  REQUIRE_THAT(
      c.kubectl({"patch", "horizontalpodautoscalers.v2.autoscaling", "web", "--type=json", "-p",
                 R"([{"op":"add","path":"/spec/metrics/-","value":{"type":"Pods",
                            "pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue",
                            "averageValue":"10"}}}}])"}),
      Succeeded());
  json v1 = c.get_json({"horizontalpodautoscalers.v1.autoscaling", "web"});
  CHECK(v1["spec"]["targetCPUUtilizationPercentage"] == 70);
  CHECK(v1["metadata"]["annotations"].contains("autoscaling.alpha.kubernetes.io/metrics"));
  CHECK(c.get_json({"horizontalpodautoscalers.v2.autoscaling", "web"})["spec"]["metrics"].size() ==
        2);
  // Debian's Python client has autoscaling/v1 only: it reads the v1 view.
  Result r = c.run({kPython, "-c", R"(
from kubernetes import client, config
config.load_kube_config()
v1 = client.AutoscalingV1Api().read_namespaced_horizontal_pod_autoscaler("plain", "default")
print(v1.spec.target_cpu_utilization_percentage, v1.status.desired_replicas)
)"});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out == "80 0\n");
}

TEST_CASE("kubectl replace with resourceVersion \"0\" replaces unconditionally",
          "[e2e][strategy]") {
  Cluster c;
  c.setup("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: '1'}\n");
  REQUIRE_THAT(c.kubectl({"replace", "-f",
                          c.file("cfg.yaml",
                                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                 "  name: cfg\n  resourceVersion: \"0\"\n"
                                 "data: {a: '2'}\n")}),
               Succeeded());
  CHECK(c.get_json({"configmap", "cfg"})["data"]["a"] == "2");
}

const char* kStatefulSet = R"(
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:16"}]}
  volumeClaimTemplates:
  - apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
)";

TEST_CASE("kubectl apply takes claim templates that carry apiVersion and kind", "[e2e][strategy]") {
  Cluster c;
  const std::string file = c.file("sts.yaml", kStatefulSet);
  REQUIRE_THAT(c.kubectl({"apply", "-f", file}), Succeeded());
  json sts = c.get_json({"statefulset", "db"});
  CHECK(sts["spec"]["volumeClaimTemplates"][0]["kind"] == "PersistentVolumeClaim");
  // Applied again (a patch now) and server-side.
  REQUIRE_THAT(c.kubectl({"apply", "-f", file}), Succeeded());
  // The list is atomic and its live items are defaulted, so the client-side
  // apply's ownership conflicts, as in kube: the point is that the fields decode.
  REQUIRE_THAT(c.kubectl({"apply", "--server-side", "--force-conflicts", "-f", file}), Succeeded());
}

}  // namespace
}  // namespace vkube::e2e
