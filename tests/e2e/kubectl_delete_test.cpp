// kubectl delete: objects, by label, by file, and whole namespaces.
#include <algorithm>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using Names = std::vector<std::string>;

const char* kContent = R"(
apiVersion: v1
kind: Namespace
metadata: {name: doomed}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: one, namespace: doomed, labels: {group: g}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: two, namespace: doomed, labels: {group: g}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: three, namespace: doomed}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: doomed}
stringData: {key: value}
---
apiVersion: v1
kind: Pod
metadata: {name: runner, namespace: doomed}
spec:
  containers:
  - {name: c, image: "busybox:1.36"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: doomed}
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - {name: nginx, image: "nginx:1.27"}
)";

TEST_CASE("kubectl delete by name and label and file", "[e2e]") {
  Cluster c;
  c.setup(kContent);
  Result one = c.kubectl({"delete", "configmap", "three", "-n", "doomed"});
  REQUIRE_THAT(one, Succeeded());
  CHECK(one.out == "configmap \"three\" deleted\n");
  CHECK_THAT(c.kubectl({"get", "configmap", "three", "-n", "doomed"}),
             FailedWith("Error from server (NotFound): configmaps \"three\" not found"));

  Result by_label = c.kubectl({"delete", "configmaps", "-n", "doomed", "-l", "group=g"});
  REQUIRE_THAT(by_label, Succeeded());
  CHECK(lines(by_label.out) == Names{"configmap \"one\" deleted", "configmap \"two\" deleted"});
  CHECK(c.kubectl({"get", "configmaps", "-n", "doomed", "-o", "name"}).out ==
        "configmap/kube-root-ca.crt\n");  // every namespace's CA bundle stays

  const std::string pod = c.file("pod.yaml", R"(
apiVersion: v1
kind: Pod
metadata: {name: runner, namespace: doomed}
)");
  Result by_file = c.kubectl({"delete", "-f", pod, "--wait=true", "--timeout=20s"});
  REQUIRE_THAT(by_file, Succeeded());
  CHECK(by_file.out == "pod \"runner\" deleted\n");
  CHECK_THAT(c.kubectl({"get", "pod", "runner", "-n", "doomed"}), FailedWith("NotFound"));

  CHECK_THAT(c.kubectl({"delete", "configmap", "three", "-n", "doomed"}),
             FailedWith("Error from server (NotFound): configmaps \"three\" not found"));
  CHECK_THAT(c.kubectl({"delete", "configmap", "three", "-n", "doomed", "--ignore-not-found"}),
             Succeeded());

  // A finalizer holds the object: it is marked for deletion and stays until
  // the finalizer is removed.
  c.setup(R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: doomed, finalizers: [e2e.vkube.io/hold]}
)");
  REQUIRE_THAT(c.kubectl({"delete", "configmap", "held", "-n", "doomed", "--wait=false"}),
               Succeeded());
  nlohmann::json held = c.get_json({"configmap", "held", "-n", "doomed"});
  CHECK(held["metadata"].contains("deletionTimestamp"));
  CHECK_THAT(c.kubectl({"patch", "configmap", "held", "-n", "doomed", "--type=json", "-p",
                        R"([{"op":"remove","path":"/metadata/finalizers"}])"}),
             Succeeded());
  CHECK_THAT(c.kubectl({"get", "configmap", "held", "-n", "doomed"}), FailedWith("NotFound"));
}

TEST_CASE("kubectl delete namespace removes its content and then the namespace", "[e2e]") {
  Cluster c;
  c.setup(kContent);
  Result r = c.kubectl({"delete", "namespace", "doomed", "--timeout=60s"});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out == "namespace \"doomed\" deleted\n");
  // kubectl waited for the namespace to be gone.
  CHECK_THAT(c.kubectl({"get", "namespace", "doomed"}),
             FailedWith("Error from server (NotFound): namespaces \"doomed\" not found"));
  for (const char* kind : {"configmaps", "secrets", "pods", "deployments"}) {
    Result left = c.kubectl({"get", kind, "-A", "-o", "name"});
    INFO(left);
    CHECK(left.exit_code == 0);
    CHECK(left.out.find("doomed") == std::string::npos);
    CHECK(c.kubectl({"get", kind, "-n", "doomed", "-o", "name"}).out.empty());
  }
  // The name can be used again, and the old content does not come back.
  c.setup(R"(
apiVersion: v1
kind: Namespace
metadata: {name: doomed}
)");
  CHECK(c.kubectl({"get", "secrets,pods,deployments", "-n", "doomed", "-o", "name"}).out.empty());
}

TEST_CASE("a terminating namespace refuses new content until it is gone", "[e2e]") {
  Cluster c;
  c.setup(R"(
apiVersion: v1
kind: Namespace
metadata: {name: ending}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: ending, finalizers: [e2e.vkube.io/hold]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: free, namespace: ending}
)");
  REQUIRE_THAT(c.kubectl({"delete", "namespace", "ending", "--wait=false"}), Succeeded());

  // The finalizer keeps the namespace Terminating; the other content goes.
  Result left;
  CHECK(eventually([&] {
    left = c.kubectl({"get", "configmaps", "-n", "ending", "-o", "name"});
    return lines(left.out) == Names{"configmap/held"};
  }));
  INFO(left);
  Result status = c.kubectl({"get", "namespace", "ending"});
  REQUIRE_THAT(status, Succeeded());
  CHECK(columns(lines(status.out).at(1)).at(1) == "Terminating");

  const std::string late = c.file("late.yaml", R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: late, namespace: ending}
)");
  CHECK_THAT(c.kubectl({"create", "--validate=false", "-f", late}),
             FailedWith("Error from server (Forbidden): error when creating \"" + late +
                        "\": configmaps \"late\" is forbidden: unable to create new content in "
                        "namespace ending because it is being terminated"));

  REQUIRE_THAT(c.kubectl({"patch", "configmap", "held", "-n", "ending", "--type=json", "-p",
                          R"([{"op":"remove","path":"/metadata/finalizers"}])"}),
               Succeeded());
  Result gone;
  CHECK(eventually([&] {
    gone = c.kubectl({"get", "namespace", "ending"});
    return gone.exit_code != 0;
  }));
  CHECK_THAT(gone, FailedWith("Error from server (NotFound): namespaces \"ending\" not found"));
}

// "name STATUS" for each row of `kubectl get namespaces`, sorted.
std::vector<std::string> namespace_status(Cluster& c) {
  Result r = c.kubectl({"get", "namespaces"});
  INFO(r);
  CHECK(r.exit_code == 0);
  std::vector<std::string> rows;
  for (const auto& line : lines(r.out))
    rows.push_back(columns(line).at(0) + " " + columns(line).at(1));
  std::sort(rows.begin(), rows.end());
  return rows;
}

const std::vector<std::string> kSystemNamespaces = {"NAME STATUS", "default Active",
                                                    "kube-node-lease Active", "kube-public Active",
                                                    "kube-system Active"};

// kube-apiserver's NamespaceLifecycle admission refuses to delete these.
TEST_CASE("the system namespaces cannot be deleted", "[e2e]") {
  Cluster c;
  for (const char* ns : {"default", "kube-system", "kube-public"}) {
    CHECK_THAT(c.kubectl({"delete", "namespace", ns, "--wait=false"}),
               FailedWith(std::string("Error from server (Forbidden): namespaces \"") + ns +
                          "\" is forbidden: this namespace may not be deleted"));
  }
  CHECK(namespace_status(c) == kSystemNamespaces);
}

// Namespaces have no deletecollection verb in kube-apiserver (405): one
// request must not be able to delete every namespace of the tenant.
TEST_CASE("namespaces cannot be deleted as a collection", "[e2e]") {
  Cluster c;
  Result api_resources = c.kubectl({"api-resources", "-o", "wide"});
  std::string verbs;
  for (const auto& line : lines(api_resources.out)) {
    if (columns(line).at(0) == "namespaces") verbs = columns(line).back();
  }
  CHECK(verbs == "create,delete,get,list,patch,update,watch");
  CHECK_THAT(c.kubectl({"delete", "--raw", "/api/v1/namespaces"}),
             FailedWith("Error from server (MethodNotAllowed)"));
  CHECK(namespace_status(c) == kSystemNamespaces);
}

}  // namespace
}  // namespace vkube::e2e
