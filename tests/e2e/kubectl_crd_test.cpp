// CustomResourceDefinitions with real kubectl: a new kind is served at once
// (discovery, short names, categories, explain), its objects are validated,
// defaulted and pruned by the CRD's schema and rules, print the CRD's
// columns, have status and scale subresources and are served in two
// versions; conflicting names are reported in conditions; deleting the CRD
// deletes its objects and then the kind.
#include <signal.h>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

constexpr const char* kCronTabs = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [cronSpec]
            x-kubernetes-validations:
            - rule: "self.minReplicas <= self.replicas"
              message: replicas must be at least minReplicas
            properties:
              cronSpec:
                type: string
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
              image:
                type: string
                default: busybox:1.36
              replicas:
                type: integer
                minimum: 0
                maximum: 10
                default: 1
              minReplicas:
                type: integer
                default: 0
              mode:
                type: string
                enum: [Fast, Slow]
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
              conditions:
                type: array
                items:
                  type: object
                  properties:
                    type: {type: string}
                    status: {type: string}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
)";

std::string crontab(const std::string& name, const std::string& spec) {
  return "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: " + name +
         "\n  labels: {app: cron}\nspec:\n" + spec;
}

TEST_CASE("a CRD serves its kind at once, validated, defaulted and pruned", "[e2e][crd]") {
  Cluster c;
  c.file("crd.yaml", kCronTabs);
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/crd.yaml"}), Succeeded());
  REQUIRE_THAT(c.kubectl({"wait", "--for=condition=Established", "--timeout=10s",
                          "crd/crontabs.stable.example.com"}),
               Succeeded());
  Result resources = c.kubectl({"api-resources", "--api-group=stable.example.com"});
  REQUIRE_THAT(resources, Succeeded());
  CHECK(resources.out.find("crontabs") != std::string::npos);
  CHECK(resources.out.find("ct") != std::string::npos);
  CHECK(resources.out.find("CronTab") != std::string::npos);

  // A valid object: defaults filled in, columns printed.
  c.file("ct.yaml", crontab("every5", "  cronSpec: '*/5 * * * *'\n  replicas: 2\n"));
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/ct.yaml"}), Succeeded());
  json ct = c.get_json({"ct", "every5"});
  CHECK(ct["spec"]["image"] == "busybox:1.36");
  CHECK(ct["spec"]["minReplicas"] == 0);
  CHECK(ct["apiVersion"] == "stable.example.com/v1");
  CHECK(ct["metadata"]["generation"] == 1);
  Result table = c.kubectl({"get", "ct"});
  REQUIRE_THAT(table, Succeeded());
  CHECK(table.out.find("SPEC") != std::string::npos);
  CHECK(table.out.find("REPLICAS") != std::string::npos);
  CHECK(table.out.find("*/5 * * * *") != std::string::npos);

  // Invalid objects are refused with the field path and the reason.
  c.file("bad.yaml", crontab("bad", "  cronSpec: '*/5 * * * *'\n  replicas: 20\n  mode: Medium\n"));
  Result bad = c.kubectl({"apply", "-f", c.dir() + "/bad.yaml"});
  CHECK_THAT(bad, FailedWith("spec.replicas: Invalid value: 20"));
  CHECK_THAT(bad, FailedWith("should be less than or equal to 10"));
  CHECK_THAT(bad, FailedWith("spec.mode: Unsupported value: \"Medium\""));
  c.file("nospec.yaml", crontab("nospec", "  replicas: 1\n"));
  CHECK_THAT(c.kubectl({"apply", "-f", c.dir() + "/nospec.yaml"}),
             FailedWith("spec.cronSpec: Required value"));
  c.file("pattern.yaml", crontab("pattern", "  cronSpec: 'often'\n"));
  CHECK_THAT(c.kubectl({"apply", "-f", c.dir() + "/pattern.yaml"}),
             FailedWith("spec.cronSpec: Invalid value: \"often\""));
  c.file("rule.yaml",
         crontab("rule", "  cronSpec: '* * * * *'\n  replicas: 1\n  minReplicas: 3\n"));
  CHECK_THAT(c.kubectl({"apply", "-f", c.dir() + "/rule.yaml"}),
             FailedWith("replicas must be at least minReplicas"));

  // Unknown fields: Strict (kubectl's default) refuses, Ignore prunes.
  c.file("extra.yaml", crontab("extra", "  cronSpec: '* * * * *'\n  color: blue\n"));
  CHECK_THAT(c.kubectl({"create", "-f", c.dir() + "/extra.yaml"}),
             FailedWith("unknown field \"spec.color\""));
  REQUIRE_THAT(c.kubectl({"create", "--validate=false", "-f", c.dir() + "/extra.yaml"}),
               Succeeded());
  CHECK_FALSE(c.get_json({"ct", "extra"})["spec"].contains("color"));

  // Strategic merge is refused (415); merge patches work and bump generation.
  CHECK_THAT(c.kubectl({"patch", "ct", "every5", "-p", R"({"spec":{"replicas":3}})"}),
             FailedWith("application/merge-patch+json"));
  REQUIRE_THAT(
      c.kubectl({"patch", "ct", "every5", "--type=merge", "-p", R"({"spec":{"replicas":3}})"}),
      Succeeded());
  CHECK(c.get_json({"ct", "every5"})["metadata"]["generation"] == 2);

  // The other version serves the same objects.
  json beta = c.get_json({"crontabs.v1beta1.stable.example.com", "every5"});
  CHECK(beta["apiVersion"] == "stable.example.com/v1beta1");
  CHECK(beta["spec"]["replicas"] == 3);

  // kubectl get all (category), label selectors, explain from the schema.
  Result all = c.kubectl({"get", "all"});
  CHECK(all.out.find("crontab.stable.example.com/every5") != std::string::npos);
  Result selected = c.kubectl({"get", "ct", "-l", "app=cron", "-o", "name"});
  CHECK(selected.out.find("crontab.stable.example.com/every5") != std::string::npos);
  Result explain = c.kubectl({"explain", "crontab.spec"});
  REQUIRE_THAT(explain, Succeeded());
  CHECK(explain.out.find("cronSpec") != std::string::npos);
}

TEST_CASE("custom resources have status and scale subresources", "[e2e][crd]") {
  Cluster c;
  c.file("crd.yaml", kCronTabs);
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/crd.yaml"}), Succeeded());
  c.file("ct.yaml", crontab("job", "  cronSpec: '* * * * *'\n"));
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/ct.yaml"}), Succeeded());

  // The main endpoint ignores status; /status sets it, without a new generation.
  REQUIRE_THAT(
      c.kubectl({"patch", "ct", "job", "--type=merge", "-p", R"({"status":{"replicas":9}})"}),
      Succeeded());
  CHECK_FALSE(c.get_json({"ct", "job"}).contains("status"));
  REQUIRE_THAT(c.kubectl({"patch", "ct", "job", "--subresource=status", "--type=merge", "-p",
                          R"({"status":{"replicas":1,"selector":"app=cron",)"
                          R"("conditions":[{"type":"Ready","status":"True"}]}})"}),
               Succeeded());
  json ct = c.get_json({"ct", "job"});
  CHECK(ct["status"]["replicas"] == 1);
  CHECK(ct["metadata"]["generation"] == 1);
  Result table = c.kubectl({"get", "ct", "job", "--no-headers"});
  CHECK(table.out.find("True") != std::string::npos);

  REQUIRE_THAT(c.kubectl({"scale", "ct", "job", "--replicas=4"}), Succeeded());
  CHECK(c.get_json({"ct", "job"})["spec"]["replicas"] == 4);
  Result raw = c.kubectl(
      {"get", "--raw", "/apis/stable.example.com/v1/namespaces/default/crontabs/job/scale"});
  REQUIRE_THAT(raw, Succeeded());
  json scale = json::parse(raw.out);
  CHECK(scale["kind"] == "Scale");
  CHECK(scale["status"]["selector"] == "app=cron");
  CHECK(scale["status"]["replicas"] == 1);
  REQUIRE_THAT(c.kubectl({"wait", "--for=jsonpath={.spec.replicas}=4", "--timeout=10s", "ct/job"}),
               Succeeded());
}

TEST_CASE("CRD names in conflict, cluster scope, and deletion with the objects", "[e2e][crd]") {
  Cluster c;
  c.file("crd.yaml", kCronTabs);
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/crd.yaml"}), Succeeded());
  // Same group, another plural, but the kind is taken.
  c.file("clash.yaml", R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontables.stable.example.com}
spec:
  group: stable.example.com
  scope: Cluster
  names: {plural: crontables, singular: crontable, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
)");
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/clash.yaml"}), Succeeded());
  json clash = c.get_json({"crd", "crontables.stable.example.com"});
  std::string reason;
  for (const json& cond : clash["status"]["conditions"])
    if (cond["type"] == "NamesAccepted") reason = cond["reason"];
  CHECK(reason == "KindConflict");
  CHECK_THAT(c.kubectl({"get", "crontables.stable.example.com"}),
             FailedWith("doesn't have a resource type"));
  REQUIRE_THAT(c.kubectl({"delete", "crd", "crontables.stable.example.com"}), Succeeded());

  // An invalid CRD is refused with kube's field paths.
  c.file("badcrd.yaml", R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Regional
  names: {plural: widgets, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true}
)");
  Result badcrd = c.kubectl({"apply", "-f", c.dir() + "/badcrd.yaml"});
  CHECK_THAT(badcrd, FailedWith("spec.scope: Unsupported value: \"Regional\""));
  CHECK_THAT(badcrd, FailedWith("spec.versions[0].schema.openAPIV3Schema: Required value"));

  // A cluster-scoped kind.
  c.file("cluster.yaml", R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gpupools.vkube.example.com}
spec:
  group: vkube.example.com
  scope: Cluster
  names: {plural: gpupools, kind: GpuPool, shortNames: [gp]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {gpus: {type: integer}}}
)");
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/cluster.yaml"}), Succeeded());
  c.file(
      "pool.yaml",
      "apiVersion: vkube.example.com/v1\nkind: GpuPool\nmetadata: {name: h100}\nspec: {gpus: 8}\n");
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/pool.yaml"}), Succeeded());
  CHECK(c.get_json({"gp", "h100"})["spec"]["gpus"] == 8);
  CHECK(c.get_json({"gp", "h100"})["metadata"].value("namespace", "") == "");

  // Deleting a namespace deletes the custom resources in it.
  REQUIRE_THAT(c.kubectl({"create", "namespace", "team"}), Succeeded());
  c.file("team.yaml",
         "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: t, namespace: team}\n"
         "spec: {cronSpec: '* * * * *'}\n");
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/team.yaml"}), Succeeded());
  REQUIRE_THAT(c.kubectl({"delete", "namespace", "team", "--timeout=20s"}), Succeeded());
  CHECK(c.kubectl({"get", "ct", "-A", "-o", "name"}).out.empty());

  // Deleting the CRD deletes its objects, then the kind.
  for (int i = 0; i < 5; ++i) {
    c.file("ct" + std::to_string(i) + ".yaml",
           crontab("ct" + std::to_string(i), "  cronSpec: '* * * * *'\n"));
    REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/ct" + std::to_string(i) + ".yaml"}),
                 Succeeded());
  }
  REQUIRE_THAT(c.kubectl({"delete", "crd", "crontabs.stable.example.com", "--timeout=20s"}),
               Succeeded());
  CHECK_THAT(c.kubectl({"get", "crontabs.stable.example.com"}),
             FailedWith("doesn't have a resource type"));
  // Recreated, it has no objects left over.
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/crd.yaml"}), Succeeded());
  REQUIRE(eventually([&] { return c.kubectl({"get", "ct", "-A", "-o", "name"}).exit_code == 0; }));
  CHECK(c.kubectl({"get", "ct", "-A", "-o", "name"}).out.empty());
}

TEST_CASE("the Python client creates, selects, patches, watches and deletes custom resources",
          "[e2e][crd]") {
  Cluster c;
  Result r =
      c.run({kPython, std::string(VKUBE_SOURCE_DIR) + "/tests/e2e/python_crd.py"}, seconds(60));
  REQUIRE_THAT(r, Succeeded());
  CHECK_THAT(r.out, Catch::EndsWith("PASS\n"));
}

TEST_CASE("CRDs and their objects survive a restart; unenforced rules are warned about",
          "[e2e][crd]") {
  Cluster c;
  c.file("crd.yaml", kCronTabs);
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/crd.yaml"}), Succeeded());
  c.file("ct.yaml", crontab("kept", "  cronSpec: '* * * * *'\n"));
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.dir() + "/ct.yaml"}), Succeeded());
  c.restart(SIGTERM);
  CHECK(c.get_json({"ct", "kept"})["spec"]["cronSpec"] == "* * * * *");
  CHECK_THAT(c.kubectl({"api-resources", "--api-group=stable.example.com"}), Succeeded());

  // A quantity rule is enforced; a rule outside vkube's CEL subset is accepted with a warning.
  c.file("quantity.yaml", R"yaml(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: budgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: budgets, kind: Budget}
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
            x-kubernetes-validations:
            - rule: "quantity(self.memory).isGreaterThan(quantity('1Gi'))"
              message: "memory must be more than 1Gi"
            - rule: "!has(self.version) || isSemver(self.version)"
            properties:
              memory: {type: string}
              version: {type: string}
)yaml");
  Result warned = c.kubectl({"apply", "-f", c.dir() + "/quantity.yaml"});
  REQUIRE_THAT(warned, Succeeded());
  CHECK(warned.err.find("not enforced by vkube") != std::string::npos);
  CHECK(warned.err.find("x-kubernetes-validations[1]") != std::string::npos);
  REQUIRE(eventually([&] {
    return c.kubectl({"get", "budgets"}).err.find("the server doesn't have a resource type") ==
           std::string::npos;
  }));
  auto budget = [&](const std::string& name, const std::string& memory) {
    return c.kubectl({"create", "-f",
                      c.file(name + ".yaml", "apiVersion: example.com/v1\nkind: Budget\nmetadata: "
                                             "{name: " + name + "}\nspec: {memory: " + memory +
                                             "}\n")});
  };
  CHECK_THAT(budget("small", "512Mi"),
             FailedWith("The Budget \"small\" is invalid: spec: Invalid value: \"object\": memory "
                        "must be more than 1Gi"));
  CHECK_THAT(budget("large", "1.5Gi"), Succeeded());
}

}  // namespace
}  // namespace vkube::e2e
