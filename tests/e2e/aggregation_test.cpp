// Aggregated API servers and CRD conversion webhooks with real kubectl against `vkube serve`:
// aggregation_server.py (HTTPS on 127.0.0.1, a self-signed certificate) serves
// wardle.example.com/v1alpha1 behind a selector-less Service whose Endpoints name 127.0.0.1,
// registered by an APIService; and converts CronTabs between v1 and v2 at /convert, named by
// a CRD's conversion webhook URL. Nothing is dialled outside 127.0.0.0/8.
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

// A certificate for the Service name and 127.0.0.1, self-signed; returns the PEM's base64.
std::string make_certificate(Cluster& c) {
  Result r = c.run({"/bin/sh", "-c",
                    "cd " + c.dir() +
                        " && openssl req -x509 -newkey rsa:2048 -nodes -keyout agg.key -out "
                        "agg.crt -days 2 -subj /CN=wardle.default.svc -addext "
                        "'subjectAltName=DNS:wardle.default.svc,IP:127.0.0.1' 2>/dev/null && "
                        "base64 -w0 agg.crt"},
                   seconds(30));
  INFO(r);
  REQUIRE_THAT(r, Succeeded());
  return r.out;
}

// Starts aggregation_server.py; returns it with its port.
std::pair<std::unique_ptr<Process>, std::string> start_server(Cluster& c) {
  Spawn s;
  s.argv = {kPython, std::string(VKUBE_SOURCE_DIR) + "/tests/e2e/aggregation_server.py",
            c.dir() + "/agg.crt", c.dir() + "/agg.key", c.dir() + "/agg-requests.log"};
  s.out_path = c.dir() + "/agg.out";
  s.err_path = c.dir() + "/agg.err";
  auto p = std::make_unique<Process>(s);
  REQUIRE(p->wait_for_out("listening ", seconds(20)));
  std::string out = p->out();
  std::string port = out.substr(out.find("listening ") + 10);
  while (!port.empty() && !std::isdigit(static_cast<unsigned char>(port.back()))) port.pop_back();
  return {std::move(p), port};
}

std::vector<json> requests(Cluster& c) {
  std::vector<json> out;
  std::ifstream in(c.dir() + "/agg-requests.log");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

// A selector-less Service whose Endpoints name the local server: how a bare `vkube serve`
// reaches it without a host.
std::string service_only(const std::string& port) {
  return "apiVersion: v1\nkind: Service\nmetadata: {name: wardle}\nspec:\n"
         "  ports: [{name: https, port: 443, targetPort: " +
         port +
         "}]\n---\n"
         "apiVersion: v1\nkind: Endpoints\nmetadata: {name: wardle}\nsubsets:\n"
         "- addresses: [{ip: 127.0.0.1}]\n  ports: [{name: https, port: " +
         port + "}]\n";
}

std::string wardle(const std::string& port, const std::string& ca) {
  return service_only(port) +
         "---\n"
         "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\n"
         "metadata: {name: v1alpha1.wardle.example.com}\nspec:\n"
         "  group: wardle.example.com\n  version: v1alpha1\n"
         "  service: {namespace: default, name: wardle, port: 443}\n"
         "  caBundle: " +
         ca + "\n  groupPriorityMinimum: 2000\n  versionPriority: 10\n";
}

TEST_CASE("APIServices: Local ones for built-in groups, an aggregated server proxied",
          "[e2e][aggregation]") {
  Cluster c;
  const std::string ca = make_certificate(c);
  auto [server, port] = start_server(c);

  // kube's Local APIServices, one per built-in group version.
  Result local = c.kubectl({"get", "apiservices"});
  INFO(local);
  REQUIRE_THAT(local, Succeeded());
  bool core = false, apps = false, metrics = false;
  for (const std::string& line : lines(local.out)) {
    std::vector<std::string> cols = columns(line);
    if (cols.size() < 3) continue;
    core = core || (cols[0] == "v1." && cols[1] == "Local" && cols[2] == "True");
    apps = apps || (cols[0] == "v1.apps" && cols[1] == "Local" && cols[2] == "True");
    metrics = metrics || (cols[0] == "v1beta1.metrics.k8s.io" && cols[1] == "Local");
  }
  CHECK(core);
  CHECK(apps);
  // This tenant has no host, so nothing measures: no metrics.k8s.io, as on a
  // cluster without metrics-server (a tenant with a host and `vkube host`
  // have it: kubectl_top_test.cpp).
  CHECK_FALSE(metrics);

  // A name that is not version.group is refused as kube refuses it.
  CHECK_THAT(c.kubectl({"create", "-f",
                        c.file("bad.yaml",
                               "apiVersion: apiregistration.k8s.io/v1\n"
                               "kind: APIService\nmetadata: {name: wrong}\n"
                               "spec: {group: x.io, version: v1, "
                               "groupPriorityMinimum: 10, versionPriority: 1}\n")}),
             FailedWith("must be `spec.version+\".\"+spec.group`: \"v1.x.io\""));

  Result applied = c.kubectl({"apply", "-f", c.file("wardle.yaml", wardle(port, ca))});
  INFO(applied << c.server_log());
  REQUIRE_THAT(applied, Succeeded());
  REQUIRE(eventually([&] {
    json s = c.get_json({"apiservice", "v1alpha1.wardle.example.com"});
    for (const json& cond : s["status"].value("conditions", json::array()))
      if (cond.value("type", "") == "Available") return cond.value("status", "") == "True";
    return false;
  }));

  // Discovery names the group; kubectl lists through vkube, the table coming from the server.
  Result groups = c.kubectl({"api-versions"});
  REQUIRE_THAT(groups, Succeeded());
  CHECK(groups.out.find("wardle.example.com/v1alpha1") != std::string::npos);
  Result listed = c.kubectl({"get", "flunders"});
  INFO(listed << c.server_log());
  REQUIRE_THAT(listed, Succeeded());
  CHECK(listed.out.find("first") != std::string::npos);
  CHECK(listed.out.find("kubernetes-admin") != std::string::npos);
  json one = c.get_json({"flunder", "second"});
  CHECK(one["spec"]["owner"] == "kubernetes-admin");
  // The aggregated server learnt the user from the front-proxy headers, never the credentials.
  bool saw_list = false;
  for (const json& r : requests(c)) {
    CHECK(r["authorization"].is_null());
    if (r["path"].get<std::string>().starts_with(
            "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")) {
      saw_list = true;
      CHECK(r["user"] == "kubernetes-admin");
      CHECK(std::find(r["groups"].begin(), r["groups"].end(), "system:masters") !=
            r["groups"].end());
    }
  }
  CHECK(saw_list);

  // The server goes away: 503 (kubectl words it as for kube) and Available=False.
  server->stop(SIGKILL, seconds(5));
  Result gone =
      c.kubectl({"get", "--raw", "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders"});
  INFO(gone);
  CHECK(gone.exit_code != 0);
  CHECK(gone.output().find("the server is currently unable to handle the request") !=
        std::string::npos);
  Result shown = c.kubectl({"get", "apiservice", "v1alpha1.wardle.example.com"});
  INFO(shown);
  CHECK(shown.out.find("False (FailedDiscoveryCheck)") != std::string::npos);
}

// The Python client's own e2e check (test_create_apiservice_from_yaml_with_conflict), adapted
// only in its setup: an APIService for a Service that does not exist.
TEST_CASE("the Python client creates APIServices; a missing Service shows ServiceNotFound",
          "[e2e][aggregation]") {
  Cluster c;
  c.file("api-service.yaml",
         "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\n"
         "metadata: {name: v1alpha1.wardle.k8s.io}\nspec:\n  insecureSkipTLSVerify: true\n"
         "  group: wardle.k8s.io\n  groupPriorityMinimum: 1000\n  versionPriority: 15\n"
         "  service: {name: api, namespace: wardle}\n  version: v1alpha1\n");
  const std::string script =
      "import os\nfrom kubernetes import client, config, utils\nconfig.load_kube_config()\n"
      "k = client.ApiClient()\npath = os.path.join('" +
      c.dir() +
      "', 'api-service.yaml')\n"
      "utils.create_from_yaml(k, path)\nreg = client.ApiregistrationV1Api(k)\n"
      "s = reg.read_api_service(name='v1alpha1.wardle.k8s.io')\n"
      "print(s.spec.group, s.spec.version, s.spec.service.port)\n"
      "try:\n  utils.create_from_yaml(k, path)\nexcept utils.FailToCreateError as e:\n"
      "  print(str(e), end='')\n";
  Result py = c.run({kPython, "-c", script}, seconds(60));
  INFO(py);
  REQUIRE_THAT(py, Succeeded());
  CHECK(py.out.find("wardle.k8s.io v1alpha1 443") != std::string::npos);
  CHECK(py.out.find(
            "Error from server (Conflict): {\"kind\":\"Status\",\"apiVersion\":\"v1\","
            "\"metadata\":{},\"status\":\"Failure\",\"message\":\"apiservices.apiregistration."
            "k8s.io \\\"v1alpha1.wardle.k8s.io\\\" already exists\",\"reason\":\"AlreadyExists\","
            "\"details\":{\"name\":\"v1alpha1.wardle.k8s.io\",\"group\":\"apiregistration.k8s.io\","
            "\"kind\":\"apiservices\"},\"code\":409}\n") != std::string::npos);
  REQUIRE(eventually([&] {
    return c.kubectl({"get", "apiservice", "v1alpha1.wardle.k8s.io"})
               .out.find("False (ServiceNotFound)") != std::string::npos;
  }));
  CHECK_THAT(c.kubectl({"get", "--raw", "/apis/wardle.k8s.io/v1alpha1"}),
             FailedWith("the server is currently unable to handle the request"));
}

constexpr const char* kConvertedCrd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        url: https://127.0.0.1:PORT/convert
        caBundle: CA
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties: {hostPort: {type: string}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties: {host: {type: string}, port: {type: string}}
)";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

TEST_CASE("CRD conversion webhook: stored in v1, served in v2 and back", "[e2e][aggregation]") {
  Cluster c;
  const std::string ca = make_certificate(c);
  auto [server, port] = start_server(c);
  const std::string crd = replaced(replaced(kConvertedCrd, "PORT", port), "CA", ca);

  // An http URL is refused as kube refuses it.
  Result insecure =
      c.kubectl({"create", "-f", c.file("insecure.yaml", replaced(crd, "https://", "http://"))});
  CHECK_THAT(insecure, FailedWith("'https' is the only allowed URL scheme"));

  Result created = c.kubectl({"apply", "-f", c.file("crd.yaml", crd)});
  INFO(created << c.server_log());
  REQUIRE_THAT(created, Succeeded());
  REQUIRE(eventually([&] {
    return c.kubectl({"get", "crontabs.v2.stable.example.com"}).exit_code == 0;
  }));

  REQUIRE_THAT(c.kubectl({"apply", "-f",
                          c.file("ct.yaml",
                                 "apiVersion: stable.example.com/v1\n"
                                 "kind: CronTab\nmetadata: {name: web}\n"
                                 "spec: {hostPort: \"localhost:7070\"}\n")}),
               Succeeded());
  // Read in v2: the webhook split hostPort.
  json v2 = c.get_json({"crontabs.v2.stable.example.com", "web"});
  CHECK(v2["apiVersion"] == "stable.example.com/v2");
  CHECK(v2["spec"].value("host", "") == "localhost");
  CHECK(v2["spec"].value("port", "") == "7070");
  CHECK(!v2["spec"].contains("hostPort"));
  // A list in v2 converts every item in one review.
  json list = c.get_json({"crontabs.v2.stable.example.com"});
  REQUIRE(list["items"].size() == 1);
  CHECK(list["items"][0]["spec"].value("host", "") == "localhost");
  // Written in v2, stored (and read) in v1.
  REQUIRE_THAT(c.kubectl({"patch", "crontabs.v2.stable.example.com", "web", "--type=merge", "-p",
                          R"({"spec":{"port":"8080"}})"}),
               Succeeded());
  json v1 = c.get_json({"crontabs.v1.stable.example.com", "web"});
  CHECK(v1["spec"].value("hostPort", "") == "localhost:8080");

  // Every review was a v1 ConversionReview naming the version wanted.
  bool reviewed = false;
  for (const json& r : requests(c)) {
    if (!r["body"].is_object()) continue;
    reviewed = true;
    CHECK(r["body"]["apiVersion"] == "apiextensions.k8s.io/v1");
    CHECK(r["body"]["kind"] == "ConversionReview");
  }
  CHECK(reviewed);

  // A webhook failure is kube's 500 with the converter's words.
  REQUIRE_THAT(c.kubectl({"label", "crontabs.v1.stable.example.com", "web", "fail=yes"}),
               Succeeded());
  CHECK_THAT(c.kubectl({"get", "crontabs.v2.stable.example.com", "web"}),
             FailedWith("conversion webhook for stable.example.com/v1, Kind=CronTab failed: "
                        "refusing to convert a failing object"));
  // A webhook may not change what identifies the object.
  REQUIRE_THAT(c.kubectl({"label", "crontabs.v1.stable.example.com", "web", "fail-", "rename=yes"}),
               Succeeded());
  CHECK_THAT(c.kubectl({"get", "crontabs.v2.stable.example.com", "web"}),
             FailedWith("conversion webhook for stable.example.com/v1, Kind=CronTab returned "
                        "invalid object: must have the same name: web != web-x"));

  // The same webhook named by a Service of the tenant (its Endpoints at 127.0.0.1), as charts
  // install conversion webhooks; after the storage version moves to v2, objects stored in v1
  // are still served converted, and a write stores them in v2.
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("svc.yaml", service_only(port))}), Succeeded());
  std::string gizmos = replaced(replaced(replaced(crd, "crontab", "gizmo"), "CronTab", "Gizmo"),
                                "url: https://127.0.0.1:" + port + "/convert",
                                "service: {namespace: default, name: wardle, path: /convert}");
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("gizmos.yaml", gizmos)}), Succeeded());
  REQUIRE(eventually([&] {
    return c.kubectl({"get", "gizmos.v2.stable.example.com"}).exit_code == 0;
  }));
  REQUIRE_THAT(c.kubectl({"apply", "-f",
                          c.file("g.yaml",
                                 "apiVersion: stable.example.com/v1\n"
                                 "kind: Gizmo\nmetadata: {name: g}\n"
                                 "spec: {hostPort: \"db:5432\"}\n")}),
               Succeeded());
  json g2 = c.get_json({"gizmos.v2.stable.example.com", "g"});
  CHECK(g2["spec"].value("host", "") == "db");
  CHECK(g2["spec"].value("port", "") == "5432");
  const std::string v2_storage =
      replaced(replaced(replaced(gizmos, "storage: true", "storage: was"), "storage: false",
                        "storage: true"),
               "storage: was", "storage: false");
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("gizmos2.yaml", v2_storage)}), Succeeded());
  json still = c.get_json({"gizmos.v2.stable.example.com", "g"});
  CHECK(still["spec"].value("host", "") == "db");
  REQUIRE_THAT(c.kubectl({"label", "gizmos.v2.stable.example.com", "g", "moved=yes"}), Succeeded());
  json v1_view = c.get_json({"gizmos.v1.stable.example.com", "g"});
  CHECK(v1_view["spec"].value("hostPort", "") == "db:5432");
  CHECK(v1_view["metadata"]["labels"].value("moved", "") == "yes");
}

}  // namespace
}  // namespace vkube::e2e
