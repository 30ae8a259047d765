// Pod Security admission beyond the fixtures: kube's exact messages for the
// checks a baseline tenant used to miss, policy versions, the warn mode and
// the workloads that template pods, namespace labels, and pod updates.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/admin_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;
using testing::message;
using testing::nginx_pod;

struct Tenant : testing::AdminApiServer {
  // A tenant served at `level`; under privileged (as `vkube host` is) a
  // namespace label may loosen what it enforces.
  explicit Tenant(const std::string& level = "baseline") : AdminApiServer(options(level)) {
    REQUIRE(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", "t"}}}}).status == 201);
  }
  static Options options(const std::string& level) {
    Options o;
    o.pod_security = level;
    return o;
  }
  http::Response ns(const std::string& name, const json& labels) {
    return call("POST", "/api/v1/namespaces", {{"metadata", {{"name", name}, {"labels", labels}}}});
  }
  http::Response create(const std::string& n, const json& pod) {
    return call("POST", "/api/v1/namespaces/" + n + "/pods", pod);
  }
};

bool warned(const http::Response& r, const std::string& part) {
  for (const auto& w : testing::warnings(r))
    if (w.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("baseline refuses unsafe sysctls, unmasked /proc and probes aimed at other hosts",
          "[apiserver][pod-security]") {
  Tenant t;
  auto sysctl = t.create(
      "t", nginx_pod("s", {{"securityContext",
                            {{"sysctls",
                              {{{"name", "kernel.msgmax"}, {"value", "65536"}},
                               {{"name", "net.ipv4.tcp_keepalive_time"}, {"value", "60"}}}}}}}));
  CHECK(sysctl.status == 403);
  CHECK(message(sysctl) ==
        "pods \"s\" is forbidden: violates PodSecurity \"baseline:latest\": forbidden sysctls "
        "(kernel.msgmax)");

  json unmasked = nginx_pod("u");
  unmasked["spec"]["containers"][0]["securityContext"]["procMount"] = "Unmasked";
  auto u = t.create("t", unmasked);
  CHECK(u.status == 403);
  CHECK(message(u) ==
        "pods \"u\" is forbidden: violates PodSecurity \"baseline:latest\": procMount (container "
        "\"app\" must not set securityContext.procMount to \"Unmasked\")");

  json probe = nginx_pod("pr");
  probe["spec"]["containers"][0]["livenessProbe"] = {
      {"httpGet", {{"host", "10.0.0.1"}, {"port", 80}}}};
  CHECK(message(t.create("t", probe)) ==
        "pods \"pr\" is forbidden: violates PodSecurity \"baseline:latest\": probe or lifecycle "
        "host (container \"app\" uses probe or lifecycle host \"10.0.0.1\")");

  // Every violation in one message, in kube's order.
  json many = nginx_pod("m", {{"hostPID", true},
                              {"securityContext",
                               {{"seLinuxOptions", {{"user", "root"}}},
                                {"windowsOptions", {{"hostProcess", true}}},
                                {"appArmorProfile", {{"type", "Unconfined"}}}}}});
  many["spec"]["ephemeralContainers"] = {
      {{"name", "debug"}, {"image", "busybox"}, {"securityContext", {{"privileged", true}}}}};
  auto m = t.create("t", many);
  CHECK(message(m) ==
        "pods \"m\" is forbidden: violates PodSecurity \"baseline:latest\": forbidden AppArmor "
        "profile (pod must not set AppArmor profile type to \"Unconfined\"), host namespaces "
        "(hostPID=true), privileged (container \"debug\" must not set "
        "securityContext.privileged=true), seLinuxOptions (pod set forbidden "
        "securityContext.seLinuxOptions: user may not be set), hostProcess (pod must not set "
        "securityContext.windowsOptions.hostProcess=true)");
}

TEST_CASE("enforce-version picks the checks of that policy version", "[apiserver][pod-security]") {
  Tenant t;
  REQUIRE(t.ns("old", {{"pod-security.kubernetes.io/enforce", "restricted"},
                       {"pod-security.kubernetes.io/enforce-version", "v1.18"}})
              .status == 201);
  // v1.18 restricted wants no dropped capabilities and judges the alpha seccomp annotations
  // (from v1.19 it wants the seccompProfile fields).
  json p = nginx_pod("p", {{"securityContext", {{"runAsNonRoot", true}}}});
  p["spec"]["containers"][0]["securityContext"] = {{"allowPrivilegeEscalation", false}};
  p["metadata"]["annotations"]["seccomp.security.alpha.kubernetes.io/pod"] = "unconfined";
  auto r = t.create("old", p);
  CHECK(r.status == 403);
  CHECK(message(r) ==
        "pods \"p\" is forbidden: violates PodSecurity \"restricted:v1.18\": seccompProfile "
        "(forbidden annotation seccomp.security.alpha.kubernetes.io/pod=\"unconfined\")");
  p["metadata"]["annotations"]["seccomp.security.alpha.kubernetes.io/pod"] = "runtime/default";
  CHECK(t.create("old", p).status == 201);

  // tcp_keepalive_time became safe in v1.29.
  REQUIRE(t.ns("b28", {{"pod-security.kubernetes.io/enforce", "baseline"},
                       {"pod-security.kubernetes.io/enforce-version", "v1.28"}})
              .status == 201);
  json k = nginx_pod(
      "k", {{"securityContext",
             {{"sysctls", {{{"name", "net.ipv4.tcp_keepalive_time"}, {"value", "60"}}}}}}});
  CHECK(t.create("b28", k).status == 403);
  CHECK(t.create("t", k).status == 201);
}

TEST_CASE("warn answers Warning headers; workloads are warned, never refused",
          "[apiserver][pod-security]") {
  Tenant t;
  REQUIRE(t.ns("w", {{"pod-security.kubernetes.io/enforce", "baseline"},
                     {"pod-security.kubernetes.io/warn", "restricted"}})
              .status == 201);
  auto r = t.create("w", nginx_pod("p"));
  CHECK(r.status == 201);
  CHECK(
      warned(r,
             "would violate PodSecurity \"restricted:latest\": allowPrivilegeEscalation != "
             "false (container \"app\" must set securityContext.allowPrivilegeEscalation=false)"));

  json deploy = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "d"}}},
      {"spec",
       {{"selector", {{"matchLabels", {{"app", "d"}}}}},
        {"template",
         {{"metadata", {{"labels", {{"app", "d"}}}}},
          {"spec",
           {{"hostNetwork", true}, {"containers", {{{"name", "app"}, {"image", "nginx"}}}}}}}}}}};
  auto d = t.call("POST", "/apis/apps/v1/namespaces/t/deployments", deploy);
  CHECK(d.status == 201);
  CHECK(warned(
      d, "would violate PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)"));

  json cron = {{"apiVersion", "batch/v1"},
               {"kind", "CronJob"},
               {"metadata", {{"name", "c"}}},
               {"spec",
                {{"schedule", "* * * * *"},
                 {"jobTemplate",
                  {{"spec",
                    {{"template",
                      {{"spec",
                        {{"restartPolicy", "Never"},
                         {"containers",
                          {{{"name", "app"},
                            {"image", "nginx"},
                            {"securityContext", {{"privileged", true}}}}}}}}}}}}}}}}};
  auto cj = t.call("POST", "/apis/batch/v1/namespaces/t/cronjobs", cron);
  CHECK(cj.status == 201);
  CHECK(warned(cj, "privileged (container \"app\" must not set securityContext.privileged=true)"));
}

TEST_CASE("pod-security labels are validated and a tighter level warns about existing pods",
          "[apiserver][pod-security]") {
  Tenant t("privileged");
  auto bad = t.ns("bad", {{"pod-security.kubernetes.io/enforce", "strict"}});
  CHECK(bad.status == 422);
  CHECK(message(bad) ==
        "Namespace \"bad\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: "
        "Invalid value: \"strict\": must be one of privileged, baseline, restricted");
  auto v = t.ns("badv", {{"pod-security.kubernetes.io/warn-version", "1.25"}});
  CHECK(v.status == 422);

  REQUIRE(t.ns("loose", {{"pod-security.kubernetes.io/enforce", "privileged"}}).status == 201);
  REQUIRE(t.create("loose", nginx_pod("root1", {{"hostIPC", true}})).status == 201);
  REQUIRE(t.create("loose", nginx_pod("root2", {{"hostIPC", true}})).status == 201);
  REQUIRE(t.create("loose", nginx_pod("fine")).status == 201);
  auto tighten =
      t.call("PATCH", "/api/v1/namespaces/loose",
             {{"metadata", {{"labels", {{"pod-security.kubernetes.io/enforce", "baseline"}}}}}},
             "application/merge-patch+json");
  CHECK(tighten.status == 200);
  CHECK(testing::warnings(tighten) ==
        std::vector<std::string>{"existing pods in namespace \"loose\" violate the new "
                                 "PodSecurity enforce level \"baseline:latest\"",
                                 "root1 (and 1 other pod): host namespaces"});
}

TEST_CASE("a pod update is judged again only when its images or containers change",
          "[apiserver][pod-security]") {
  Tenant t("privileged");
  REQUIRE(t.ns("n", {{"pod-security.kubernetes.io/enforce", "privileged"}}).status == 201);
  REQUIRE(t.create("n", nginx_pod("p", {{"hostPID", true}})).status == 201);
  REQUIRE(t.call("PATCH", "/api/v1/namespaces/n",
                 {{"metadata", {{"labels", {{"pod-security.kubernetes.io/enforce", "baseline"}}}}}},
                 "application/merge-patch+json")
              .status == 200);
  // A label change on the running pod is not refused...
  auto label = t.call("PATCH", "/api/v1/namespaces/n/pods/p",
                      {{"metadata", {{"labels", {{"a", "b"}}}}}}, "application/merge-patch+json");
  CHECK(label.status == 200);
  // ...a new image is.
  auto image = t.call("PATCH", "/api/v1/namespaces/n/pods/p",
                      {{"spec", {{"containers", {{{"name", "app"}, {"image", "nginx:2"}}}}}}},
                      "application/strategic-merge-patch+json");
  CHECK(image.status == 403);
  CHECK(message(image).find("violates PodSecurity \"baseline:latest\": host namespaces "
                            "(hostPID=true)") != std::string::npos);
}

}  // namespace vkube::apiserver
