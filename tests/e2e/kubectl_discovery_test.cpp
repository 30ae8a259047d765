// kubectl version, api-resources, get of every built-in kind, explain.
#include <cstring>
#include <set>
#include <utility>

#include "fixture.h"

namespace vkube::e2e {
namespace {

// resource.group as `kubectl get` takes it, and the APIVERSION that
// `kubectl api-resources` must show for it: every built-in kind of issue 3.
const std::vector<std::pair<std::string, std::string>> kBuiltins = {
    {"namespaces", "v1"},
    {"pods", "v1"},
    {"services", "v1"},
    {"endpoints", "v1"},
    {"configmaps", "v1"},
    {"secrets", "v1"},
    {"serviceaccounts", "v1"},
    {"events", "v1"},
    {"nodes", "v1"},
    {"persistentvolumeclaims", "v1"},
    {"persistentvolumes", "v1"},
    {"resourcequotas", "v1"},
    {"limitranges", "v1"},
    {"replicationcontrollers", "v1"},
    {"podtemplates", "v1"},
    {"deployments.apps", "apps/v1"},
    {"replicasets.apps", "apps/v1"},
    {"statefulsets.apps", "apps/v1"},
    {"daemonsets.apps", "apps/v1"},
    {"controllerrevisions.apps", "apps/v1"},
    {"jobs.batch", "batch/v1"},
    {"cronjobs.batch", "batch/v1"},
    {"roles.rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1"},
    {"rolebindings.rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1"},
    {"clusterroles.rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1"},
    {"clusterrolebindings.rbac.authorization.k8s.io", "rbac.authorization.k8s.io/v1"},
    {"ingresses.networking.k8s.io", "networking.k8s.io/v1"},
    {"ingressclasses.networking.k8s.io", "networking.k8s.io/v1"},
    {"networkpolicies.networking.k8s.io", "networking.k8s.io/v1"},
    {"poddisruptionbudgets.policy", "policy/v1"},
    {"storageclasses.storage.k8s.io", "storage.k8s.io/v1"},
    {"csidrivers.storage.k8s.io", "storage.k8s.io/v1"},
    {"csinodes.storage.k8s.io", "storage.k8s.io/v1"},
    {"volumeattachments.storage.k8s.io", "storage.k8s.io/v1"},
    {"priorityclasses.scheduling.k8s.io", "scheduling.k8s.io/v1"},
    {"leases.coordination.k8s.io", "coordination.k8s.io/v1"},
    {"endpointslices.discovery.k8s.io", "discovery.k8s.io/v1"},
    {"events.events.k8s.io", "events.k8s.io/v1"},
    {"horizontalpodautoscalers.autoscaling", "autoscaling/v2"},
    {"customresourcedefinitions.apiextensions.k8s.io", "apiextensions.k8s.io/v1"},
};

TEST_CASE("kubectl version shows the server's version", "[e2e]") {
  Cluster c;
  Result r = c.kubectl({"version"});
  REQUIRE_THAT(r, Succeeded());
  CHECK_THAT(r.out,
             Catch::Contains("Client Version: v1.") && Catch::Contains("Server Version: v1."));

  nlohmann::json v = c.raw_json("/version");
  CHECK(v["major"] == "1");
  CHECK(v["gitVersion"].get<std::string>().rfind("v1.", 0) == 0);
  CHECK(v["platform"].get<std::string>().find('/') != std::string::npos);
}

TEST_CASE("kubectl api-resources lists every built-in kind", "[e2e]") {
  Cluster c;
  Result r = c.kubectl({"api-resources", "-o", "wide"});
  REQUIRE_THAT(r, Succeeded());
  std::set<std::pair<std::string, std::string>> listed;  // (name.group, apiVersion)
  for (const auto& line : lines(r.out)) {
    auto cols = columns(line);
    if (cols.empty() || cols[0] == "NAME") continue;
    // NAME [SHORTNAMES] APIVERSION NAMESPACED KIND VERBS [CATEGORIES]: find
    // APIVERSION as the column before "true"/"false".
    for (size_t i = 2; i < cols.size(); ++i) {
      if (cols[i] != "true" && cols[i] != "false") continue;
      const std::string& gv = cols[i - 1];
      const size_t slash = gv.find('/');
      std::string name = cols[0];
      if (slash != std::string::npos) name += "." + gv.substr(0, slash);
      listed.emplace(name, gv);
      break;
    }
  }
  for (const auto& [resource, version] : kBuiltins) {
    INFO(resource << " " << version << "\n" << r.out);
    CHECK(listed.contains({resource, version}));
  }

  // Short names, namespacing and verbs, as kubectl shows them.
  auto row = [&](const std::string& name) {
    for (const auto& line : lines(r.out)) {
      if (columns(line).at(0) == name) return columns(line);
    }
    return std::vector<std::string>{};
  };
  CHECK(row("deployments") ==
        std::vector<std::string>{"deployments", "deploy", "apps/v1", "true", "Deployment",
                                 "create,delete,deletecollection,get,list,patch,update,watch",
                                 "all"});
  CHECK(row("namespaces").at(1) == "ns");
  CHECK(row("configmaps") ==
        std::vector<std::string>{"configmaps", "cm", "v1", "true", "ConfigMap",
                                 "create,delete,deletecollection,get,list,patch,update,watch"});

  Result apps = c.kubectl({"api-resources", "--api-group=apps", "-o", "name"});
  REQUIRE_THAT(apps, Succeeded());
  CHECK(lines(apps.out) == std::vector<std::string>{"controllerrevisions.apps", "daemonsets.apps",
                                                    "deployments.apps", "replicasets.apps",
                                                    "statefulsets.apps"});
  Result cluster_scoped = c.kubectl({"api-resources", "--namespaced=false", "-o", "name"});
  REQUIRE_THAT(cluster_scoped, Succeeded());
  CHECK_THAT(cluster_scoped.out, Catch::Contains("namespaces\n") && Catch::Contains("nodes\n") &&
                                     !Catch::Contains("configmaps"));
}

TEST_CASE("kubectl get answers for every built-in kind", "[e2e]") {
  Cluster c;
  // One kubectl for all kinds (as `kubectl get a,b,c` does it: one list each);
  // a kind that does not answer makes it print the error and exit 1.
  std::string all;
  for (const auto& [resource, version] : kBuiltins) all += (all.empty() ? "" : ",") + resource;
  // Tables (the default output) and plain lists (-o name).
  Result tables = c.kubectl({"get", all, "-A"});
  REQUIRE_THAT(tables, Succeeded());
  CHECK(tables.err.empty());
  Result r = c.kubectl({"get", all, "-A", "-o", "name"});
  REQUIRE_THAT(r, Succeeded());
  CHECK(r.err.empty());
  // Both autoscaling versions are served.
  CHECK_THAT(c.kubectl({"get", "horizontalpodautoscalers.v1.autoscaling", "-A"}), Succeeded());
  CHECK_THAT(c.kubectl({"get", "horizontalpodautoscalers.v2.autoscaling", "-A"}), Succeeded());
  // A fresh tenant has the namespaces kube-apiserver creates.
  CHECK_THAT(r.out, Catch::Contains("namespace/default\n") &&
                        Catch::Contains("namespace/kube-system\n") &&
                        Catch::Contains("namespace/kube-public\n") &&
                        Catch::Contains("namespace/kube-node-lease\n"));
  CHECK_THAT(c.kubectl({"get", "nosuchkinds"}),
             FailedWith("the server doesn't have a resource type \"nosuchkinds\""));
}

// The OpenAPI v3 schemas come from the type registry (nested fields are
// covered in kubectl_apply_test.cpp).
TEST_CASE("kubectl explain describes built-in kinds from the OpenAPI v3 documents", "[e2e]") {
  Cluster c;
  Result pod = c.kubectl({"explain", "pod"});
  REQUIRE_THAT(pod, Succeeded());
  CHECK_THAT(pod.out, Catch::StartsWith("KIND:       Pod\nVERSION:    v1\n"));
  CHECK_THAT(pod.out, Catch::Contains("FIELDS:") && Catch::Contains("  metadata\t<ObjectMeta>") &&
                          Catch::Contains("  spec\t<PodSpec>"));
  Result deploy = c.kubectl({"explain", "deployments.spec"});
  REQUIRE_THAT(deploy, Succeeded());
  CHECK_THAT(deploy.out, Catch::StartsWith("GROUP:      apps\nKIND:       Deployment\n") &&
                             Catch::Contains("FIELD: spec <DeploymentSpec>"));
  CHECK_THAT(c.kubectl({"explain", "nosuchkinds"}),
             FailedWith("the server doesn't have a resource type \"nosuchkinds\""));
}

TEST_CASE("vkube serve stops cleanly on SIGTERM", "[e2e]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"get", "namespaces"}), Succeeded());
  CHECK(c.stop() == 0);
  // Clients then see a refused connection, not a hang.
  CHECK_THAT(c.kubectl({"get", "namespaces"}, seconds(20)), FailedWith("refused"));
}

}  // namespace
}  // namespace vkube::e2e

namespace vkube::e2e {
namespace {

// /openapi/v2 for the clients that still read Swagger 2.0: every kind's
// schema under definitions with its group-version-kind, references that
// resolve there, and operations as v2 spells them.
TEST_CASE("/openapi/v2 serves Swagger 2.0 made from the v3 documents", "[e2e]") {
  Cluster c;
  nlohmann::json doc = c.raw_json("/openapi/v2");
  CHECK(doc["swagger"] == "2.0");
  const nlohmann::json& defs = doc["definitions"];
  REQUIRE(defs.contains("io.k8s.api.core.v1.Pod"));
  CHECK(defs["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"][0]["kind"] == "Pod");
  CHECK(defs.contains("io.k8s.api.apps.v1.Deployment"));
  const std::string text = doc.dump();
  CHECK(text.find("#/components/") == std::string::npos);
  // Every reference names a definition that is there.
  for (size_t at = text.find("\"#/definitions/"); at != std::string::npos;
       at = text.find("\"#/definitions/", at + 1)) {
    const size_t from = at + 15;
    const std::string name = text.substr(from, text.find('"', from) - from);
    INFO(name);
    REQUIRE(defs.contains(name));
  }
  const nlohmann::json& create = doc["paths"]["/api/v1/namespaces/{namespace}/pods"]["post"];
  bool body = false, ns = false;
  for (nlohmann::json p : create["parameters"]) {
    if (p.contains("$ref"))  // shared under "parameters", as kube's are
      p = doc["parameters"][p["$ref"].get<std::string>().substr(std::strlen("#/parameters/"))];
    if (p["in"] == "body") body = p["schema"].contains("$ref");
    if (p["in"] == "path" && p["name"] == "namespace") ns = p.value("required", false);
  }
  CHECK(body);
  CHECK(ns);
}

// kubectl asks for /openapi/v2 only in gnostic's protobuf form, and reads it
// to validate the kinds its OpenAPI v3 check cannot place: the create-only
// reviews. With it, `kubectl create -f` works for them with default
// validation, and an unknown field is reported as kubectl reports it.
TEST_CASE("kubectl create -f of create-only kinds validates with /openapi/v2 protobuf", "[e2e]") {
  Cluster c;
  const std::vector<std::pair<std::string, std::string>> reviews = {
      {"tr.yaml", "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n"
                  "  token: not-a-token\n"},
      {"ssr.yaml", "apiVersion: authentication.k8s.io/v1\nkind: SelfSubjectReview\n"},
      {"ssar.yaml", "apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\n"
                    "spec:\n  resourceAttributes: {verb: get, resource: pods}\n"},
      {"sar.yaml", "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n"
                   "  user: alice\n  resourceAttributes: {verb: get, resource: pods}\n"},
      {"lsar.yaml", "apiVersion: authorization.k8s.io/v1\nkind: LocalSubjectAccessReview\n"
                    "metadata: {namespace: default}\nspec:\n  user: alice\n"
                    "  resourceAttributes: {verb: get, resource: pods, namespace: default}\n"},
      {"ssrr.yaml", "apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectRulesReview\n"
                    "spec:\n  namespace: default\n"},
  };
  for (const auto& [file, yaml] : reviews) {
    Result r = c.kubectl({"create", "-f", c.file(file, yaml), "-o", "json"});
    INFO(file << "\n" << r);
    REQUIRE_THAT(r, Succeeded());
    CHECK(nlohmann::json::parse(r.out).contains("status"));
  }
  Result bad = c.kubectl(
      {"create", "-f",
       c.file("bad.yaml", "apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\n"
                          "spec:\n  resourceAttributes: {verb: get, resource: pods}\n"
                          "  bogus: 1\n")});
  CHECK_THAT(bad, FailedWith("unknown field \"bogus\" in "
                             "io.k8s.api.authorization.v1.SelfSubjectAccessReviewSpec"));
}

}  // namespace
}  // namespace vkube::e2e
