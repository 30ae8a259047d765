// Helm 3.17 on a tenant of `vkube host`, with real charts: the chart `helm
// create` generates (Deployment, Service, ServiceAccount, HPA, Ingress) and
// a chart with a crds/ folder, custom resources and a pre-install hook Job,
// each through install --wait, upgrade, history, rollback, list, get
// manifest and uninstall. --wait passes because the tenant's Service gets
// the host's cluster IP and its Deployment becomes available on the host.
#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

struct Helm {
  Cluster& c;
  Result operator()(std::vector<std::string> args) { return e2e::helm(c, std::move(args)); }
};

Cluster::Serve tenant_of(const Cluster& host, const std::string& name) {
  return Cluster::Serve{{"--name", name, "--host-kubeconfig", host.kubeconfig()}};
}

std::string column(const std::string& out, size_t row, size_t col) {
  auto rows = lines(out);
  if (row >= rows.size()) return "";
  auto cols = columns(rows[row]);
  return col < cols.size() ? cols[col] : "";
}

TEST_CASE("helm: the helm-create chart through its life cycle on a tenant", "[e2e][helm][slow]") {
  Cluster host(Cluster::Host{});
  Cluster tenant(tenant_of(host, "team-a"));
  Helm helm{tenant};
  REQUIRE_THAT(helm({"create", tenant.dir() + "/web"}), Succeeded());
  const std::string chart = tenant.dir() + "/web";

  Result install =
      helm({"install", "site", chart, "-n", "apps", "--create-namespace", "--wait", "--timeout",
            "60s", "--set", "ingress.enabled=true", "--set", "autoscaling.enabled=true"});
  REQUIRE_THAT(install, Succeeded());
  json deploy = tenant.get_json({"deployment", "site-web", "-n", "apps"});
  CHECK(deploy["status"]["availableReplicas"] == 1);
  json svc = tenant.get_json({"service", "site-web", "-n", "apps"});
  json host_svc = host.get_json({"service", "site-web-x-apps-x-team-a", "-n", "vkube-team-a"});
  CHECK(svc["spec"]["clusterIP"] == host_svc["spec"]["clusterIP"]);
  CHECK_THAT(tenant.kubectl({"get", "hpa", "site-web", "-n", "apps"}), Succeeded());
  CHECK_THAT(tenant.kubectl({"get", "ingress", "site-web", "-n", "apps"}), Succeeded());
  CHECK_THAT(tenant.kubectl({"get", "serviceaccount", "site-web", "-n", "apps"}), Succeeded());

  // Upgrade (without the HPA, two replicas), history, rollback.
  REQUIRE_THAT(helm({"upgrade", "site", chart, "-n", "apps", "--wait", "--timeout", "60s", "--set",
                     "ingress.enabled=true", "--set", "replicaCount=2"}),
               Succeeded());
  CHECK(tenant.get_json({"deployment", "site-web", "-n", "apps"})["status"]["readyReplicas"] == 2);
  CHECK_THAT(tenant.kubectl({"get", "hpa", "site-web", "-n", "apps"}), FailedWith("NotFound"));
  Result history = helm({"history", "site", "-n", "apps"});
  REQUIRE_THAT(history, Succeeded());
  CHECK(lines(history.out).size() == 3);
  REQUIRE_THAT(helm({"rollback", "site", "1", "-n", "apps", "--wait", "--timeout", "60s"}),
               Succeeded());
  CHECK_THAT(tenant.kubectl({"get", "hpa", "site-web", "-n", "apps"}), Succeeded());
  Result list = helm({"list", "-A"});
  CHECK(column(list.out, 1, 0) == "site");
  CHECK(column(list.out, 1, 2) == "3");
  Result manifest = helm({"get", "manifest", "site", "-n", "apps"});
  CHECK(manifest.out.find("kind: HorizontalPodAutoscaler") != std::string::npos);

  // The pods ran on the host; uninstall removes them on both sides.
  REQUIRE_THAT(helm({"uninstall", "site", "-n", "apps", "--wait"}), Succeeded());
  CHECK(tenant.kubectl({"get", "deployment,service,ingress,hpa", "-n", "apps", "-o", "name"})
            .out.empty());
  CHECK(eventually(
      [&] {
        return host
            .kubectl({"get", "pods,services", "-n", "vkube-team-a", "-l",
                      "vkube.io/tenant-namespace=apps", "-o", "name"})
            .out.empty();
      },
      seconds(30)));
}

constexpr const char* kWidgetCrd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.demo.example.com
spec:
  group: demo.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1, default: 1}
              color: {type: string, default: grey}
)";

constexpr const char* kWidgetTemplates = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-setup
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-delete-policy: before-hook-creation
spec:
  template:
    metadata:
      annotations: {sim.vkube.io/duration: 1s}
    spec:
      restartPolicy: Never
      containers:
      - {name: setup, image: busybox:1.36, command: [sh, -c, "echo ready"]}
---
{{- range $i, $size := .Values.sizes }}
apiVersion: demo.example.com/v1
kind: Widget
metadata:
  name: {{ $.Release.Name }}-w{{ $i }}
spec:
  size: {{ $size }}
---
{{- end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  count: "{{ len .Values.sizes }}"
)";

TEST_CASE("helm: a chart with CRDs, custom resources and a hook Job", "[e2e][helm][crd][slow]") {
  Cluster host(Cluster::Host{});
  Cluster tenant(tenant_of(host, "team-b"));
  Helm helm{tenant};
  const std::string chart = tenant.dir() + "/widgets";
  REQUIRE_THAT(tenant.run({"/bin/mkdir", "-p", chart + "/crds", chart + "/templates"}),
               Succeeded());
  tenant.file("widgets/Chart.yaml", "apiVersion: v2\nname: widgets\nversion: 0.1.0\n");
  tenant.file("widgets/values.yaml", "sizes: [2, 3]\n");
  tenant.file("widgets/crds/widgets.yaml", kWidgetCrd);
  tenant.file("widgets/templates/all.yaml", kWidgetTemplates);

  REQUIRE_THAT(helm({"install", "shop", chart, "-n", "shop", "--create-namespace", "--wait",
                     "--timeout", "60s"}),
               Succeeded());
  // The hook ran to completion on the host before the resources were made.
  json job = tenant.get_json({"job", "shop-setup", "-n", "shop"});
  CHECK(job["status"]["succeeded"] == 1);
  json w0 = tenant.get_json({"widget", "shop-w0", "-n", "shop"});
  CHECK(w0["spec"]["size"] == 2);
  CHECK(w0["spec"]["color"] == "grey");  // defaulted from the CRD schema
  Result table = tenant.kubectl({"get", "wd", "-n", "shop"});
  CHECK(table.out.find("SIZE") != std::string::npos);

  REQUIRE_THAT(helm({"upgrade", "shop", chart, "-n", "shop", "--set", "sizes={5,6,7}"}),
               Succeeded());
  CHECK(tenant.get_json({"widget", "shop-w2", "-n", "shop"})["spec"]["size"] == 7);
  REQUIRE_THAT(helm({"rollback", "shop", "1", "-n", "shop"}), Succeeded());
  CHECK_THAT(tenant.kubectl({"get", "widget", "shop-w2", "-n", "shop"}), FailedWith("NotFound"));
  CHECK(tenant.get_json({"widget", "shop-w0", "-n", "shop"})["spec"]["size"] == 2);
  CHECK(lines(helm({"history", "shop", "-n", "shop"}).out).size() == 4);
  Result manifest = helm({"get", "manifest", "shop", "-n", "shop"});
  CHECK(manifest.out.find("kind: Widget") != std::string::npos);
  CHECK(column(helm({"list", "-A"}).out, 1, 0) == "shop");

  // An invalid value is refused at install time with the field and reason.
  Result bad = helm({"install", "broken", chart, "-n", "shop", "--set", "sizes={0}"});
  CHECK_THAT(bad, FailedWith("spec.size: Invalid value: 0"));

  REQUIRE_THAT(helm({"uninstall", "shop", "-n", "shop", "--wait"}), Succeeded());
  CHECK(tenant.kubectl({"get", "widgets", "-n", "shop", "-o", "name"}).out.empty());
  // Helm leaves CRDs from crds/ in place, as documented.
  CHECK_THAT(tenant.kubectl({"get", "crd", "widgets.demo.example.com"}), Succeeded());
}

}  // namespace
}  // namespace vkube::e2e
