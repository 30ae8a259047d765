// Helm 3.17 against a tenant: release storage in protobuf Secrets, strategic
// merge upgrades, history, rollback, list and uninstall of a chart made of
// ConfigMaps, Secrets, Services and ServiceAccounts.
#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

std::string helm_path() { return std::string(VKUBE_SOURCE_DIR) + "/.tools/bin/helm"; }

struct Helm {
  Cluster& c;
  Result operator()(std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/env", "HELM_CACHE_HOME=" + c.dir() + "/helm/cache",
                                     "HELM_CONFIG_HOME=" + c.dir() + "/helm/config",
                                     "HELM_DATA_HOME=" + c.dir() + "/helm/data", helm_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    return c.run(argv, seconds(60));
  }
};

std::string write_chart(Cluster& c) {
  REQUIRE_THAT(c.run({"/bin/mkdir", "-p", c.dir() + "/chart/templates"}), Succeeded());
  c.file("chart/Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n");
  c.file("chart/values.yaml", "greeting: hello\nport: 80\n");
  c.file("chart/templates/all.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-cfg}
data: {greeting: {{ .Values.greeting | quote }}}
---
apiVersion: v1
kind: Secret
metadata: {name: {{ .Release.Name }}-sec}
stringData: {token: abc}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: {{ .Release.Name }}-sa}
---
apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}-svc}
spec:
  selector: {app: demo}
  ports: [{name: http, port: {{ .Values.port }}, targetPort: 8080}]
)");
  return c.dir() + "/chart";
}

TEST_CASE("helm installs, upgrades, rolls back and uninstalls a chart", "[e2e][helm]") {
  Cluster c;
  Helm helm{c};
  std::string chart = write_chart(c);
  REQUIRE_THAT(helm({"install", "demo", chart, "-n", "apps", "--create-namespace", "--wait"}), Succeeded());
  CHECK(c.kubectl({"get", "configmap", "demo-cfg", "-n", "apps", "-o", "jsonpath={.data.greeting}"}).out ==
        "hello");
  // The release lives in a Secret helm sent as protobuf.
  json rel = c.get_json({"secret", "sh.helm.release.v1.demo.v1", "-n", "apps"});
  CHECK(rel["type"] == "helm.sh/release.v1");
  CHECK(rel["metadata"]["labels"]["owner"] == "helm");
  CHECK(rel["metadata"]["labels"]["status"] == "deployed");

  REQUIRE_THAT(helm({"upgrade", "demo", chart, "-n", "apps", "--set", "greeting=bye", "--set", "port=81"}),
               Succeeded());
  CHECK(c.kubectl({"get", "configmap", "demo-cfg", "-n", "apps", "-o", "jsonpath={.data.greeting}"}).out == "bye");
  CHECK(c.kubectl({"get", "service", "demo-svc", "-n", "apps", "-o", "jsonpath={.spec.ports[0].port}"}).out ==
        "81");
  CHECK(c.get_json({"secret", "sh.helm.release.v1.demo.v1", "-n", "apps"})["metadata"]["labels"]["status"] ==
        "superseded");

  Result history = helm({"history", "demo", "-n", "apps"});
  REQUIRE_THAT(history, Succeeded());
  auto rows = lines(history.out);
  REQUIRE(rows.size() == 3);
  CHECK(columns(rows[1])[0] == "1");
  CHECK(rows[2].find("deployed") != std::string::npos);

  REQUIRE_THAT(helm({"rollback", "demo", "1", "-n", "apps"}), Succeeded());
  CHECK(c.kubectl({"get", "configmap", "demo-cfg", "-n", "apps", "-o", "jsonpath={.data.greeting}"}).out ==
        "hello");
  CHECK(c.kubectl({"get", "service", "demo-svc", "-n", "apps", "-o", "jsonpath={.spec.ports[0].port}"}).out ==
        "80");

  Result list = helm({"list", "-A"});
  REQUIRE_THAT(list, Succeeded());
  REQUIRE(lines(list.out).size() == 2);
  CHECK(columns(lines(list.out)[1])[0] == "demo");
  CHECK(columns(lines(list.out)[1])[2] == "3");

  REQUIRE_THAT(helm({"uninstall", "demo", "-n", "apps", "--wait"}), Succeeded());
  // What the chart made is gone; what every namespace has stays.
  CHECK(lines(c.kubectl({"get", "configmap,secret,serviceaccount,service", "-n", "apps", "-o", "name"}).out) ==
        std::vector<std::string>{"configmap/kube-root-ca.crt", "serviceaccount/default"});
  CHECK(lines(helm({"list", "-A"}).out).size() == 1);
}

}  // namespace
}  // namespace vkube::e2e
