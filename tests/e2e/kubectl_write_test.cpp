// kubectl create -f, apply, replace, label, annotate, patch, scale.
#include "fixture.h"

namespace vkube::e2e {
namespace {

using Names = std::vector<std::string>;

const char* kNamespace = R"(
apiVersion: v1
kind: Namespace
metadata: {name: w}
)";

const char* kConfigMap = R"(
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: w
  labels: {app: demo}
data: {color: blue, size: "3"}
)";

const char* kDeployment = R"(
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: w
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: "nginx:1.27"
        env:
        - {name: A, value: "1"}
      - name: sidecar
        image: "busybox:1.36"
)";

std::string jsonpath(Cluster& c, const std::vector<std::string>& object, const std::string& path) {
  std::vector<std::string> args = {"get"};
  args.insert(args.end(), object.begin(), object.end());
  args.insert(args.end(), {"-n", "w", "-o", "jsonpath=" + path});
  Result r = c.kubectl(args);
  INFO(r);
  CHECK(r.exit_code == 0);
  return r.out;
}

TEST_CASE("kubectl create -f creates each object of a multi-document file", "[e2e]") {
  Cluster c;
  const std::string path =
      c.file("all.yaml", std::string(kNamespace) + "---" + kConfigMap + "---" + kDeployment);
  Result r = c.kubectl({"create", "--validate=false", "-f", path});
  REQUIRE_THAT(r, Succeeded());
  CHECK(lines(r.out) ==
        Names{"namespace/w created", "configmap/settings created", "deployment.apps/web created"});

  nlohmann::json cm = c.get_json({"configmap", "settings", "-n", "w"});
  CHECK(cm["data"] == nlohmann::json({{"color", "blue"}, {"size", "3"}}));
  nlohmann::json d = c.get_json({"deployment", "web", "-n", "w"});
  CHECK(d["metadata"]["generation"] == 1);
  CHECK(d["spec"]["template"]["spec"]["containers"].size() == 2);
  CHECK(!d["metadata"]["creationTimestamp"].get<std::string>().empty());

  // generateName gets a random suffix.
  const std::string gen = c.file("gen.yaml", R"(
apiVersion: v1
kind: ConfigMap
metadata: {generateName: job-, namespace: w}
)");
  Result g = c.kubectl({"create", "--validate=false", "-f", gen, "-o", "name"});
  REQUIRE_THAT(g, Succeeded());
  CHECK_THAT(g.out, Catch::Matches("configmap/job-[a-z0-9]{5}\n"));

  // --dry-run=server answers as if created and stores nothing.
  const std::string dry = c.file("dry.yaml", R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: dry, namespace: w}
)");
  Result d1 = c.kubectl({"create", "--validate=false", "--dry-run=server", "-f", dry});
  REQUIRE_THAT(d1, Succeeded());
  CHECK_THAT(d1.out, Catch::Contains("configmap/dry created (server dry run)"));
  CHECK_THAT(c.kubectl({"get", "configmap", "dry", "-n", "w"}), FailedWith("NotFound"));
}

// Default validation (--validate=strict) downloads /openapi/v3 and the
// group-version documents and needs the fieldValidation parameter there.
TEST_CASE("kubectl create and replace and apply validate by default", "[e2e]") {
  Cluster c;
  Result ns = c.kubectl({"create", "-f", c.file("ns.yaml", kNamespace)});
  REQUIRE_THAT(ns, Succeeded());
  CHECK(ns.out == "namespace/w created\n");
  CHECK(ns.err.empty());
  const std::string deploy = c.file("deploy.yaml", kDeployment);
  Result created = c.kubectl({"create", "-f", deploy});
  REQUIRE_THAT(created, Succeeded());
  CHECK(created.err.empty());
  Result replaced = c.kubectl({"replace", "-f", deploy});
  REQUIRE_THAT(replaced, Succeeded());
  CHECK(replaced.out == "deployment.apps/web replaced\n");
  Result applied = c.kubectl({"apply", "-f", c.file("cm.yaml", kConfigMap)});
  REQUIRE_THAT(applied, Succeeded());
  CHECK(applied.err.empty());
}

// `apply` of an existing built-in object reads the OpenAPI v3 document of its
// group-version (GET /openapi/v3/api/v1) to compute a strategic-merge patch.
TEST_CASE("kubectl apply -f twice with a change patches the stored object", "[e2e]") {
  Cluster c;
  c.setup(kNamespace);
  const std::string path = c.file("cm.yaml", kConfigMap);
  Result first = c.kubectl({"apply", "-f", path});
  REQUIRE_THAT(first, Succeeded());
  CHECK(first.out == "configmap/settings created\n");
  const std::string applied1 =
      jsonpath(c, {"configmap", "settings"},
               "{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}");
  CHECK(nlohmann::json::parse(applied1)["data"] ==
        nlohmann::json({{"color", "blue"}, {"size", "3"}}));

  // Change one key, drop one (apply deletes what the last apply set and the
  // file no longer has), add a label.
  c.file("cm.yaml", R"(
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: w
  labels: {app: demo, stage: two}
data: {color: green}
)");
  Result second = c.kubectl({"apply", "-f", path});
  REQUIRE_THAT(second, Succeeded());
  CHECK(second.out == "configmap/settings configured\n");
  nlohmann::json cm = c.get_json({"configmap", "settings", "-n", "w"});
  CHECK(cm["data"] == nlohmann::json({{"color", "green"}}));
  CHECK(cm["metadata"]["labels"] == nlohmann::json({{"app", "demo"}, {"stage", "two"}}));
  const auto applied2 = nlohmann::json::parse(
      cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
          .get<std::string>());
  CHECK(applied2["data"] == nlohmann::json({{"color", "green"}}));
  CHECK(applied2["metadata"]["labels"]["stage"] == "two");

  Result third = c.kubectl({"apply", "-f", path});
  REQUIRE_THAT(third, Succeeded());
  CHECK(third.out == "configmap/settings unchanged\n");

  // A deployment: the container list merges by name, generation follows spec.
  const std::string dpath = c.file("deploy.yaml", kDeployment);
  REQUIRE_THAT(c.kubectl({"apply", "-f", dpath}), Succeeded());
  std::string changed = kDeployment;
  changed.replace(changed.find("nginx:1.27"), 10, "nginx:1.28");
  c.file("deploy.yaml", changed);
  Result d2 = c.kubectl({"apply", "-f", dpath});
  REQUIRE_THAT(d2, Succeeded());
  CHECK(d2.out == "deployment.apps/web configured\n");
  CHECK(jsonpath(c, {"deployment", "web"}, "{.spec.template.spec.containers[*].image}") ==
        "nginx:1.28 busybox:1.36");
  CHECK(jsonpath(c, {"deployment", "web"}, "{.metadata.generation}") == "2");
}

TEST_CASE("kubectl replace swaps the whole object", "[e2e]") {
  Cluster c;
  c.setup(std::string(kNamespace) + "---" + kConfigMap);
  const std::string path = c.file("new.yaml", R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: w}
data: {only: one}
)");
  // --validate=false: default validation is covered above.
  Result r = c.kubectl({"replace", "--validate=false", "-f", path});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out == "configmap/settings replaced\n");
  nlohmann::json cm = c.get_json({"configmap", "settings", "-n", "w"});
  CHECK(cm["data"] == nlohmann::json({{"only", "one"}}));
  CHECK(!cm["metadata"].contains("labels"));

  const std::string missing = c.file("missing.yaml", R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: missing, namespace: w}
)");
  CHECK_THAT(c.kubectl({"replace", "--validate=false", "-f", missing}),
             FailedWith("Error from server (NotFound)"));
}

TEST_CASE("kubectl label and annotate", "[e2e]") {
  Cluster c;
  c.setup(std::string(kNamespace) + "---" + kConfigMap);
  CHECK_THAT(c.kubectl({"label", "configmap", "settings", "-n", "w", "env=prod"}), Succeeded());
  CHECK(jsonpath(c, {"configmap", "settings"}, "{.metadata.labels}") ==
        R"({"app":"demo","env":"prod"})");
  CHECK_THAT(c.kubectl({"label", "configmap", "settings", "-n", "w", "env=dev"}),
             FailedWith("'env' already has a value (prod), and --overwrite is false"));
  CHECK_THAT(c.kubectl({"label", "configmap", "settings", "-n", "w", "--overwrite", "env=dev"}),
             Succeeded());
  CHECK(jsonpath(c, {"configmap", "settings"}, "{.metadata.labels.env}") == "dev");
  CHECK_THAT(c.kubectl({"label", "configmap", "settings", "-n", "w", "app-"}), Succeeded());
  CHECK(jsonpath(c, {"configmap", "settings"}, "{.metadata.labels}") == R"({"env":"dev"})");
  // The new labels select.
  CHECK(lines(c.kubectl({"get", "cm", "-n", "w", "-l", "env=dev", "-o", "name"}).out) ==
        Names{"configmap/settings"});

  Result a = c.kubectl({"annotate", "configmap", "settings", "-n", "w", "owner=team-a"});
  REQUIRE_THAT(a, Succeeded());
  CHECK(a.out == "configmap/settings annotated\n");
  CHECK(jsonpath(c, {"configmap", "settings"}, "{.metadata.annotations.owner}") == "team-a");
  CHECK_THAT(c.kubectl({"annotate", "configmap", "settings", "-n", "w", "owner-"}), Succeeded());
  CHECK(jsonpath(c, {"configmap", "settings"}, "{.metadata.annotations.owner}").empty());
  CHECK_FALSE(c.get_json({"configmap", "settings", "-n", "w"})["metadata"]
                  .value("annotations", nlohmann::json::object())
                  .contains("owner"));
  CHECK_THAT(c.kubectl({"label", "configmap", "nope", "-n", "w", "x=y"}),
             FailedWith("configmaps \"nope\" not found"));
}

TEST_CASE("kubectl patch with merge and JSON and strategic-merge patches", "[e2e]") {
  Cluster c;
  c.setup(std::string(kNamespace) + "---" + kConfigMap + "---" + kDeployment);

  Result merge = c.kubectl({"patch", "configmap", "settings", "-n", "w", "--type=merge", "-p",
                            R"({"data":{"size":null,"shape":"round"}})"});
  REQUIRE_THAT(merge, Succeeded());
  CHECK(merge.out == "configmap/settings patched\n");
  CHECK(jsonpath(c, {"configmap", "settings"}, "{.data}") == R"({"color":"blue","shape":"round"})");

  Result json = c.kubectl({"patch", "configmap", "settings", "-n", "w", "--type=json", "-p",
                           R"([{"op":"replace","path":"/data/color","value":"red"},)"
                           R"({"op":"remove","path":"/data/shape"},)"
                           R"({"op":"add","path":"/metadata/labels/patched","value":"yes"}])"});
  REQUIRE_THAT(json, Succeeded());
  CHECK(jsonpath(c, {"configmap", "settings"}, "{.data}") == R"({"color":"red"})");
  CHECK(jsonpath(c, {"configmap", "settings"}, "{.metadata.labels.patched}") == "yes");

  // A failed "test" operation is 422 and changes nothing.
  const std::string rv = jsonpath(c, {"configmap", "settings"}, "{.metadata.resourceVersion}");
  Result failed =
      c.kubectl({"patch", "configmap", "settings", "-n", "w", "--type=json", "-v=6", "-p",
                 R"([{"op":"test","path":"/data/color","value":"blue"},)"
                 R"({"op":"replace","path":"/data/color","value":"black"}])"});
  CHECK_THAT(failed, FailedWith("is invalid"));
  CHECK_THAT(failed.err, Catch::Contains(" 422 Unprocessable Entity "));
  CHECK(jsonpath(c, {"configmap", "settings"}, "{.data.color}") == "red");
  CHECK(jsonpath(c, {"configmap", "settings"}, "{.metadata.resourceVersion}") == rv);

  // kubectl's default: strategic merge, containers merged by name.
  Result sm = c.kubectl({"patch", "deployment", "web", "-n", "w", "-p",
                         R"({"spec":{"template":{"spec":{"containers":[)"
                         R"({"name":"nginx","image":"nginx:1.28"}]}}}})"});
  REQUIRE_THAT(sm, Succeeded());
  CHECK(jsonpath(c, {"deployment", "web"}, "{.spec.template.spec.containers[*].image}") ==
        "nginx:1.28 busybox:1.36");
  CHECK(jsonpath(c, {"deployment", "web"}, "{.spec.template.spec.containers[0].env[0].value}") ==
        "1");
  CHECK(jsonpath(c, {"deployment", "web"}, "{.metadata.generation}") == "2");

  CHECK_THAT(c.kubectl({"patch", "configmap", "nope", "-n", "w", "--type=merge", "-p", "{}"}),
             FailedWith("configmaps \"nope\" not found"));
}

TEST_CASE("kubectl scale a deployment created from YAML", "[e2e]") {
  Cluster c;
  c.setup(std::string(kNamespace) + "---" + kDeployment);
  Result r = c.kubectl({"scale", "deployment", "web", "-n", "w", "--replicas=3"});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.out == "deployment.apps/web scaled\n");
  CHECK(jsonpath(c, {"deployment", "web"}, "{.spec.replicas}") == "3");
  // Scaling changes the spec, so the generation moves on.
  CHECK(jsonpath(c, {"deployment", "web"}, "{.metadata.generation}") == "2");
  nlohmann::json scale = c.raw_json("/apis/apps/v1/namespaces/w/deployments/web/scale");
  CHECK(scale["kind"] == "Scale");
  CHECK(scale["apiVersion"] == "autoscaling/v1");
  CHECK(scale["spec"]["replicas"] == 3);
  CHECK(scale["status"]["selector"] == "app=web");

  // --current-replicas is a precondition kubectl checks against the scale.
  CHECK_THAT(
      c.kubectl({"scale", "deployment", "web", "-n", "w", "--current-replicas=1", "--replicas=5"}),
      FailedWith("Expected replicas to be 1, was 3"));
  CHECK(jsonpath(c, {"deployment", "web"}, "{.spec.replicas}") == "3");
  CHECK_THAT(c.kubectl({"scale", "deployment", "nope", "-n", "w", "--replicas=1"}),
             FailedWith("deployments.apps \"nope\" not found"));
}

// kubectl 1.32 sends protobuf bodies for these (Content-Type
// application/vnd.kubernetes.protobuf, decoded through the type registry).
TEST_CASE("kubectl create namespace and configmap and secret and deployment and service",
          "[e2e]") {
  Cluster c;
  CHECK_THAT(c.kubectl({"create", "namespace", "imp"}), Succeeded());
  CHECK_THAT(c.kubectl({"create", "configmap", "cfg", "-n", "imp", "--from-literal=a=b"}),
             Succeeded());
  CHECK_THAT(c.kubectl({"create", "secret", "generic", "sec", "-n", "imp", "--from-literal=a=b"}),
             Succeeded());
  CHECK_THAT(c.kubectl({"create", "deployment", "dep", "-n", "imp", "--image=nginx:1.27"}),
             Succeeded());
  CHECK_THAT(c.kubectl({"create", "service", "clusterip", "svc", "-n", "imp", "--tcp=80:8080"}),
             Succeeded());
  Result all = c.kubectl(
      {"get", "configmap/cfg", "secret/sec", "deployment/dep", "service/svc", "-n", "imp", "-o", "name"});
  CHECK(lines(all.out) ==
        Names{"configmap/cfg", "secret/sec", "deployment.apps/dep", "service/svc"});
  CHECK(c.kubectl({"get", "secret", "sec", "-n", "imp", "-o", "jsonpath={.data.a}"}).out == "Yg==");
  CHECK(c.kubectl({"get", "configmap", "cfg", "-n", "imp", "-o", "jsonpath={.data.a}"}).out == "b");
  // The Deployment kubectl built: its pod template and container came through.
  CHECK(c.kubectl({"get", "deployment", "dep", "-n", "imp", "-o",
                   "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} "
                   "{.spec.selector.matchLabels.app}"})
            .out == "1 nginx:1.27 dep");
  CHECK(c.kubectl({"get", "service", "svc", "-n", "imp", "-o",
                   "jsonpath={.spec.ports[0].port}/{.spec.ports[0].targetPort}"})
            .out == "80/8080");
  // Zero replicas is a value, not an unset field.
  CHECK_THAT(c.kubectl({"create", "deployment", "zero", "-n", "imp", "--image=nginx", "--replicas=0"}),
             Succeeded());
  CHECK(c.kubectl({"get", "deployment", "zero", "-n", "imp", "-o", "jsonpath={.spec.replicas}"}).out ==
        "0");
  CHECK_THAT(c.kubectl({"create", "serviceaccount", "robot", "-n", "imp"}), Succeeded());
  CHECK_THAT(c.kubectl({"create", "secret", "docker-registry", "pull", "-n", "imp",
                        "--docker-server=r.example", "--docker-username=u", "--docker-password=p"}),
             Succeeded());
  CHECK(c.kubectl({"get", "secret", "pull", "-n", "imp", "-o", "jsonpath={.type}"}).out ==
        "kubernetes.io/dockerconfigjson");
}

// Every `kubectl create <kind>` generator, with default (strict) validation.
TEST_CASE("every kubectl create subcommand works with default validation", "[e2e]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "namespace", "gen"}), Succeeded());
  const std::string tls_dir = c.dir();
  REQUIRE_THAT(c.run({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                      "-subj", "/CN=example.com", "-keyout", tls_dir + "/tls.key", "-out",
                      tls_dir + "/tls.crt"}),
               Succeeded());
  std::vector<std::vector<std::string>> commands = {
      {"clusterrole", "reader", "--verb=get,list", "--resource=pods"},
      {"clusterrolebinding", "reader", "--clusterrole=reader", "--user=alice"},
      {"configmap", "cfg", "--from-literal=a=b"},
      {"cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", "--", "date"},
      {"deployment", "dep", "--image=nginx", "--replicas=3", "--port=80"},
      {"ingress", "ing", "--rule=example.com/=svc:80"},
      {"job", "job", "--image=busybox", "--", "date"},
      {"poddisruptionbudget", "pdb", "--selector=app=dep", "--min-available=1"},
      {"priorityclass", "high", "--value=1000", "--description=high"},
      {"quota", "q", "--hard=pods=10,requests.nvidia.com/gpu=4"},
      {"role", "r", "--verb=get", "--resource=configmaps"},
      {"rolebinding", "rb", "--role=r", "--serviceaccount=gen:robot"},
      {"secret", "generic", "gs", "--from-literal=k=v"},
      {"secret", "docker-registry", "ds", "--docker-server=r.example", "--docker-username=u",
       "--docker-password=p"},
      {"secret", "tls", "ts", "--cert=" + tls_dir + "/tls.crt", "--key=" + tls_dir + "/tls.key"},
      {"service", "clusterip", "sc", "--tcp=80:8080"},
      {"service", "nodeport", "sn", "--tcp=80:8080"},
      {"service", "loadbalancer", "sl", "--tcp=80:8080"},
      {"service", "externalname", "se", "--external-name=example.com"},
      {"serviceaccount", "robot"},
  };
  for (auto args : commands) {
    args.insert(args.begin(), {"create", "-n", "gen"});  // before any "--"
    INFO(args[3] + " " + args[4]);
    CHECK_THAT(c.kubectl(args), Succeeded());
  }
  CHECK(c.kubectl({"get", "deployment", "dep", "-n", "gen", "-o",
                   "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].ports[0].containerPort}"})
            .out == "3 80");
  CHECK(c.kubectl({"get", "cronjob", "cj", "-n", "gen", "-o", "jsonpath={.spec.schedule}"}).out == "*/5 * * * *");
  CHECK(c.kubectl({"get", "ingress", "ing", "-n", "gen", "-o",
                   "jsonpath={.spec.rules[0].host} {.spec.rules[0].http.paths[0].backend.service.name}"})
            .out == "example.com svc");
  CHECK(c.kubectl({"get", "resourcequota", "q", "-n", "gen", "-o",
                   "jsonpath={.spec.hard.requests\\.nvidia\\.com/gpu}"})
            .out == "4");
  CHECK(c.kubectl({"get", "secret", "ts", "-n", "gen", "-o", "jsonpath={.type}"}).out == "kubernetes.io/tls");
  CHECK(c.kubectl({"get", "service", "sn", "-n", "gen", "-o", "jsonpath={.spec.type}"}).out == "NodePort");
  CHECK(c.kubectl({"get", "service", "se", "-n", "gen", "-o", "jsonpath={.spec.externalName}"}).out ==
        "example.com");
  CHECK(c.kubectl({"get", "poddisruptionbudget", "pdb", "-n", "gen", "-o", "jsonpath={.spec.minAvailable}"})
            .out == "1");
}

}  // namespace
}  // namespace vkube::e2e
