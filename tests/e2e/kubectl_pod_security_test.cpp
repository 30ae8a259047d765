// A tenant is baseline by default: kubectl learns at create that a
// privileged or host-namespace pod is refused, in kube's words; a namespace
// labelled privileged takes it.
#include "fixture.h"

namespace vkube::e2e {
namespace {

constexpr const char* kPrivileged = R"(apiVersion: v1
kind: Pod
metadata:
  name: root
spec:
  hostNetwork: true
  containers:
  - name: app
    image: busybox
    securityContext:
      privileged: true
)";

TEST_CASE("kubectl: a baseline tenant refuses privileged pods", "[e2e]") {
  Cluster c;
  const std::string file = c.file("root.yaml", kPrivileged);
  Result refused = c.kubectl({"apply", "-f", file});
  INFO(refused);
  CHECK_THAT(refused, FailedWith("Error from server (Forbidden)"));
  CHECK_THAT(refused, FailedWith("pods \"root\" is forbidden: violates PodSecurity "
                                 "\"baseline:latest\": host namespaces (hostNetwork=true), "
                                 "privileged (container \"app\" must not set "
                                 "securityContext.privileged=true)"));
  CHECK_THAT(c.kubectl({"get", "pod", "root"}), FailedWith("NotFound"));

  REQUIRE_THAT(c.kubectl({"create", "namespace", "ops"}), Succeeded());
  REQUIRE_THAT(
      c.kubectl({"label", "namespace", "ops", "pod-security.kubernetes.io/enforce=privileged"}),
      Succeeded());
  Result allowed = c.kubectl({"apply", "-n", "ops", "-f", file});
  INFO(allowed);
  CHECK_THAT(allowed, Succeeded());
}

}  // namespace
}  // namespace vkube::e2e
