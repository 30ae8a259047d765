// A tenant is baseline by default: kubectl learns at create that a
// privileged or host-namespace pod is refused, in kube's words. That level is
// the operator's ceiling: a namespace labelled privileged is told the label is
// not honoured and still refuses the pod; one labelled restricted is stricter. Unsafe sysctls,
// unmasked /proc and unknown RuntimeClasses are refused as kube refuses them.
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
  Result loosen =
      c.kubectl({"label", "namespace", "ops", "pod-security.kubernetes.io/enforce=privileged"});
  INFO(loosen);
  CHECK_THAT(loosen, Succeeded());
  CHECK_THAT(loosen.err,
             Catch::Contains("Warning: pod-security.kubernetes.io/enforce=privileged is below "
                             "this tenant's ceiling \"baseline\" and is not honoured"));
  Result still = c.kubectl({"apply", "-n", "ops", "-f", file});
  INFO(still);
  CHECK_THAT(still, FailedWith("pods \"root\" is forbidden: violates PodSecurity "
                               "\"baseline:latest\": host namespaces (hostNetwork=true)"));

  REQUIRE_THAT(c.kubectl({"create", "namespace", "strict"}), Succeeded());
  REQUIRE_THAT(
      c.kubectl({"label", "namespace", "strict", "pod-security.kubernetes.io/enforce=restricted"}),
      Succeeded());
  REQUIRE_THAT(c.kubectl({"run", "plain", "--image=busybox"}), Succeeded());
  Result plain = c.kubectl({"run", "plain", "-n", "strict", "--image=busybox"});
  INFO(plain);
  CHECK_THAT(plain, FailedWith("pods \"plain\" is forbidden: violates PodSecurity "
                               "\"restricted:latest\": allowPrivilegeEscalation != false"));
}

constexpr const char* kSysctl = R"(apiVersion: v1
kind: Pod
metadata:
  name: tuned
spec:
  securityContext:
    sysctls:
    - name: kernel.msgmax
      value: "65536"
  containers:
  - name: app
    image: busybox
)";

constexpr const char* kUnmasked = R"(apiVersion: v1
kind: Pod
metadata:
  name: proc
spec:
  containers:
  - name: app
    image: busybox
    securityContext:
      procMount: Unmasked
)";

TEST_CASE("kubectl: baseline refuses unsafe sysctls, unmasked /proc and unknown RuntimeClasses",
          "[e2e]") {
  Cluster c;
  Result sysctl = c.kubectl({"apply", "-f", c.file("tuned.yaml", kSysctl)});
  INFO(sysctl);
  CHECK_THAT(sysctl, FailedWith("pods \"tuned\" is forbidden: violates PodSecurity "
                                "\"baseline:latest\": forbidden sysctls (kernel.msgmax)"));
  Result proc = c.kubectl({"apply", "-f", c.file("proc.yaml", kUnmasked)});
  INFO(proc);
  CHECK_THAT(proc, FailedWith("pods \"proc\" is forbidden: violates PodSecurity "
                              "\"baseline:latest\": procMount (container \"app\" must not set "
                              "securityContext.procMount to \"Unmasked\")"));
  Result runtime = c.kubectl(
      {"run", "rc", "--image=busybox", "--overrides={\"spec\":{\"runtimeClassName\":\"gvisor\"}}"});
  INFO(runtime);
  CHECK_THAT(runtime, FailedWith("Error from server (Forbidden): pods \"rc\" is forbidden: pod "
                                 "rejected: RuntimeClass \"gvisor\" not found"));
  CHECK_THAT(c.kubectl({"get", "pods", "tuned", "proc", "rc"}), FailedWith("NotFound"));
}

}  // namespace
}  // namespace vkube::e2e
