// Services and service accounts with the real kubectl: endpoints and
// endpoint slices of ready pods (pods made ready as a kubelet would, through
// the status subresource), a disruption budget's status, the default
// ServiceAccount and kube-root-ca.crt of a new namespace, and tokens from
// `kubectl create token` that stop working when their account goes.
#include "fixture.h"

namespace vkube::e2e {
namespace {

const char* kPods = R"(
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  labels: {app: web}
spec:
  containers:
  - name: nginx
    image: "nginx:1.27"
    ports: [{name: http, containerPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata:
  name: web-2
  labels: {app: web}
spec:
  containers:
  - name: nginx
    image: "nginx:1.27"
    ports: [{name: http, containerPort: 8080}]
)";

// The kubelet's part: phase, IP and Ready condition through pods/status.
void set_status(Cluster& c, const std::string& pod, const std::string& ip, bool ready) {
  const std::string flag = ready ? "True" : "False";
  const std::string patch = R"({"status":{"phase":"Running","podIP":")" + ip +
                            R"(","podIPs":[{"ip":")" + ip +
                            R"("}],"conditions":[{"type":"Ready","status":")" + flag +
                            R"(","lastTransitionTime":"2026-01-01T00:00:00Z"}]}})";
  REQUIRE_THAT(
      c.kubectl({"patch", "pod", pod, "--subresource=status", "--type=merge", "-p", patch}),
      Succeeded());
}

// The columns of the first data row of `kubectl get <args>`, or empty.
std::vector<std::string> row(Cluster& c, const std::vector<std::string>& args) {
  std::vector<std::string> cmd = {"get"};
  cmd.insert(cmd.end(), args.begin(), args.end());
  Result r = c.kubectl(cmd);
  if (r.exit_code != 0) return {};
  std::vector<std::string> ls = lines(r.out);
  return ls.size() < 2 ? std::vector<std::string>{} : columns(ls[1]);
}

TEST_CASE("kubectl get endpoints and endpointslices show the ready pods of a service", "[e2e]") {
  Cluster c;
  c.setup(kPods);
  set_status(c, "web-1", "10.244.1.5", true);
  set_status(c, "web-2", "10.244.1.6", true);
  REQUIRE_THAT(
      c.kubectl({"expose", "pod", "web-1", "--name=web", "--port=80", "--target-port=http"}),
      Succeeded());

  std::vector<std::string> ep;
  CHECK(eventually([&] {
    ep = row(c, {"endpoints", "web"});
    return ep.size() >= 2 && ep[1] == "10.244.1.5:8080,10.244.1.6:8080";
  }));
  INFO("endpoints row: " << (ep.size() >= 2 ? ep[1] : "<none>"));

  std::vector<std::string> slice;
  CHECK(eventually([&] {
    slice = row(c, {"endpointslices", "-l", "kubernetes.io/service-name=web"});
    return slice.size() >= 4 && slice[3] == "10.244.1.5,10.244.1.6";
  }));
  REQUIRE(slice.size() >= 4);
  CHECK(slice[0].rfind("web-", 0) == 0);
  CHECK(slice[1] == "IPv4");
  CHECK(slice[2] == "8080");
  CHECK(c.get_json({"endpointslice", slice[0]})["metadata"]["ownerReferences"][0]["name"] == "web");

  // A pod that stops being ready leaves the endpoints; its slice entry says so.
  set_status(c, "web-2", "10.244.1.6", false);
  CHECK(eventually([&] {
    ep = row(c, {"endpoints", "web"});
    return ep.size() >= 2 && ep[1] == "10.244.1.5:8080";
  }));
  CHECK(eventually([&] {
    const nlohmann::json got = c.get_json({"endpointslice", slice[0]});
    for (const auto& e : got["endpoints"])
      if (e["targetRef"]["name"] == "web-2") return e["conditions"]["ready"] == false;
    return false;
  }));

  // A disruption budget counts the ready pods.
  REQUIRE_THAT(c.kubectl({"create", "pdb", "web", "--selector=app=web", "--min-available=1"}),
               Succeeded());
  set_status(c, "web-2", "10.244.1.6", true);
  CHECK(eventually([&] {
    auto status = c.get_json({"pdb", "web"})["status"];
    return status.value("currentHealthy", 0) == 2 && status.value("disruptionsAllowed", 0) == 1;
  }));
}

TEST_CASE("a new namespace gets a default service account and kube-root-ca.crt", "[e2e]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "namespace", "team"}), Succeeded());
  CHECK(eventually([&] {
    return c.kubectl({"get", "serviceaccount", "default", "-n", "team"}).exit_code == 0;
  }));
  Result ca;
  CHECK(eventually([&] {
    ca = c.kubectl(
        {"get", "configmap", "kube-root-ca.crt", "-n", "team", "-o", "jsonpath={.data.ca\\.crt}"});
    return ca.exit_code == 0 && ca.out.rfind("-----BEGIN CERTIFICATE-----", 0) == 0;
  }));
  // The same CA the kubeconfig trusts.
  Result kubeconfig_ca = c.kubectl({"config", "view", "--raw", "--minify", "-o",
                                    "jsonpath={.clusters[0].cluster.certificate-authority-data}"});
  REQUIRE_THAT(kubeconfig_ca, Succeeded());
  Result decoded = c.run({"/bin/sh", "-c", "printf %s '" + kubeconfig_ca.out + "' | base64 -d"});
  REQUIRE_THAT(decoded, Succeeded());
  CHECK(decoded.out == ca.out);

  REQUIRE_THAT(c.kubectl({"delete", "serviceaccount", "default", "-n", "team"}), Succeeded());
  CHECK(eventually([&] {
    return c.kubectl({"get", "serviceaccount", "default", "-n", "team"}).exit_code == 0;
  }));
  REQUIRE_THAT(c.kubectl({"delete", "configmap", "kube-root-ca.crt", "-n", "team"}), Succeeded());
  CHECK(eventually([&] {
    return c.kubectl({"get", "configmap", "kube-root-ca.crt", "-n", "team"}).exit_code == 0;
  }));
}

TEST_CASE("kubectl create token: the token authenticates until its account is deleted", "[e2e]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "namespace", "team"}), Succeeded());
  CHECK(eventually([&] {
    return c.kubectl({"get", "serviceaccount", "default", "-n", "team"}).exit_code == 0;
  }));
  auto token = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"create", "token", "-n", "team"};
    args.insert(args.end(), extra.begin(), extra.end());
    Result r = c.kubectl(args);
    REQUIRE_THAT(r, Succeeded());
    return r.out.substr(0, r.out.find('\n'));
  };
  auto whoami = [&](const std::string& name, const std::string& jwt) {
    return c.kubectl({"--kubeconfig", c.token_kubeconfig(name, jwt), "auth", "whoami", "-o",
                      "jsonpath={.status.userInfo.username}"});
  };

  Result who = whoami("default", token({"default"}));
  REQUIRE_THAT(who, Succeeded());
  CHECK(who.out == "system:serviceaccount:team:default");

  // A token for another audience is no credential here.
  CHECK_THAT(whoami("vault", token({"default", "--audience=vault"})), FailedWith("Unauthorized"));

  REQUIRE_THAT(c.kubectl({"create", "serviceaccount", "robot", "-n", "team"}), Succeeded());
  const std::string robot = token({"robot", "--duration=2h"});
  who = whoami("robot", robot);
  REQUIRE_THAT(who, Succeeded());
  CHECK(who.out == "system:serviceaccount:team:robot");
  REQUIRE_THAT(c.kubectl({"delete", "serviceaccount", "robot", "-n", "team"}), Succeeded());
  CHECK_THAT(whoami("robot-gone", robot), FailedWith("Unauthorized"));
  // A new account of the same name does not revive the old token.
  REQUIRE_THAT(c.kubectl({"create", "serviceaccount", "robot", "-n", "team"}), Succeeded());
  CHECK_THAT(whoami("robot-again", robot), FailedWith("Unauthorized"));
}

}  // namespace
}  // namespace vkube::e2e
