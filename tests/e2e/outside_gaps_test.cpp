// Differences from kube-apiserver found by running other projects' test
// suites against vkube (tools/outside: kubectl's test/cmd functions, the
// Python client's e2e tests), each shown here through the client that found it.
#include "fixture.h"

namespace vkube::e2e {
namespace {

// kubectl's run_kubectl_create_error_tests: `kubectl create --raw` posts the
// file's bytes as they are, labelled application/json, so a YAML file reaches
// the server unparsed; kube answers with transformDecodeError's words, which
// the test greps for.
TEST_CASE("a body that is not JSON gets kube's 'object provided is unrecognized'",
          "[e2e][outside]") {
  Cluster c;
  const std::string pod = c.file("valid-pod.yaml",
                                 "apiVersion: v1\nkind: Pod\nmetadata:\n  name: valid-pod\n"
                                 "spec:\n  containers:\n  - name: c\n    image: nginx\n");
  Result r = c.kubectl({"create", "--raw", "/api/v1/namespaces", "-f", pod});
  INFO(r);
  CHECK_THAT(r, FailedWith("the object provided is unrecognized (must be of type Namespace): "
                           "couldn't get version/kind; json parse error: invalid character 'a' "
                           "looking for beginning of value (61706956657273696f6e3a2076310a6b"
                           "696e643a20506f640a6d65746164 ...)"));
  CHECK(c.kubectl({"get", "namespace", "valid-pod"}).exit_code != 0);  // nothing was made

  // A JSON body still creates as before, and the same words reach an update.
  Result made = c.kubectl({"create", "--raw", "/api/v1/namespaces/default/configmaps", "-f",
                           c.file("cm.json", R"({"metadata":{"name":"cm"}})")});
  REQUIRE_THAT(made, Succeeded());
  Result put = c.kubectl({"replace", "--raw", "/api/v1/namespaces/default/configmaps/cm", "-f",
                          c.file("cm.txt", "name: cm\n")});
  // Go's scanner reads "name" as the start of null, and says so.
  CHECK_THAT(put, FailedWith("the object provided is unrecognized (must be of type ConfigMap): "
                             "couldn't get version/kind; json parse error: invalid character "
                             "'a' in literal null (expecting 'u') (6e616d653a20636d0a)"));
}

// The prelude of every kubectl test/cmd function lists each namespaced kind
// it can and gets it: `kubectl api-resources --verbs=list --namespaced -o
// name | xargs -n 1 kubectl get -o name`. A tenant without a host has nothing
// that measures pods, so, like a cluster without metrics-server, it serves no
// metrics.k8s.io (it used to advertise the group and answer 503, which failed
// the prelude), and `kubectl top` says the Metrics API is not there.
TEST_CASE("a tenant without a host serves no metrics.k8s.io", "[e2e][outside]") {
  Cluster c;
  Result kinds = c.kubectl({"api-resources", "--verbs=list", "--namespaced", "-o", "name"});
  REQUIRE_THAT(kinds, Succeeded());
  CHECK(kinds.out.find("metrics.k8s.io") == std::string::npos);
  for (const std::string& kind : lines(kinds.out)) {
    if (kind.empty()) continue;
    Result got = c.kubectl({"get", "-o", "name", kind});
    INFO(kind << ": " << got);
    CHECK_THAT(got, Succeeded());
  }
  Result groups = c.kubectl({"api-versions"});
  REQUIRE_THAT(groups, Succeeded());
  CHECK(groups.out.find("metrics.k8s.io") == std::string::npos);
  CHECK_THAT(c.kubectl({"top", "pods"}), FailedWith("Metrics API not available"));
}

}  // namespace
}  // namespace vkube::e2e
