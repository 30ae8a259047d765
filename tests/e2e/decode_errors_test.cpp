// Bodies kube's JSON decoder cannot read into its Go types are 400
// BadRequest in kube's words, through kubectl (which prints the server's
// message) and the Python client (python_decode_errors.py).
#include "fixture.h"

namespace vkube::e2e {
namespace {

TEST_CASE("kubectl create of a field with the wrong JSON type gets kube's 400",
          "[e2e][decode-errors]") {
  Cluster c;
  const std::string cm = c.file("cm.yaml", R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: x, namespace: default}
data: {a: 1}
)");
  Result r = c.kubectl({"create", "--validate=false", "-f", cm, "-v=6"});
  CHECK_THAT(r, FailedWith("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: "
                           "cannot unmarshal number into Go struct field ConfigMap.data of type "
                           "string"));
  CHECK_THAT(r.err, Catch::Contains(" 400 Bad Request "));

  const std::string d = c.file("d.yaml", R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: default}
spec:
  replicas: "3"
  selector:
    matchLabels: {app: d}
  template:
    metadata:
      labels: {app: d}
    spec:
      containers:
      - {name: c, image: nginx}
)");
  CHECK_THAT(c.kubectl({"create", "--validate=false", "-f", d}),
             FailedWith("Deployment in version \"v1\" cannot be handled as a Deployment: json: "
                        "cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas "
                        "of type int32"));
  CHECK_THAT(c.kubectl({"get", "configmap", "x"}), FailedWith("NotFound"));
}

TEST_CASE("the Python client reads kube's 400 and GroupKind messages", "[e2e][decode-errors]") {
  Cluster c;
  Result r = c.run({kPython, std::string(VKUBE_SOURCE_DIR) + "/tests/e2e/python_decode_errors.py"},
                   seconds(60));
  REQUIRE_THAT(r, Succeeded());
  CHECK_THAT(r.out, Catch::EndsWith("PASS\n"));
}

}  // namespace
}  // namespace vkube::e2e
