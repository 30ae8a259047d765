// A CRD's served kinds, status and validation, and the printer-column
// JSONPath (src/apiserver/crd/definition.*, jsonpath.*).
#include <catch2/catch.hpp>

#include "definition.h"
#include "jsonpath.h"

namespace vkube::apiserver::crd {
namespace {

json crontabs() {
  return json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "crontabs.stable.example.com"},
    "spec": {"group": "stable.example.com", "scope": "Namespaced",
      "names": {"plural": "crontabs", "kind": "CronTab", "shortNames": ["ct"], "categories": ["all"]},
      "versions": [
        {"name": "v1beta1", "served": true, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v1", "served": true, "storage": true,
         "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                  "statusReplicasPath": ".status.replicas"}},
         "additionalPrinterColumns": [{"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}],
         "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v2alpha1", "served": false, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object"}}}]}})");
}

std::string condition(const json& status, const std::string& type, const char* field) {
  for (const json& c : status["conditions"])
    if (c["type"] == type) return c[field];
  return "";
}

TEST_CASE("a CRD is accepted, established and serves its versions by priority",
          "[apiserver][crd]") {
  json crd = crontabs();
  apply_definition_defaults(crd);
  CHECK(crd["spec"]["names"]["singular"] == "crontab");
  CHECK(crd["spec"]["names"]["listKind"] == "CronTabList");
  CHECK(crd["spec"]["conversion"]["strategy"] == "None");

  CHECK(kinds_of(crd).empty());  // not established yet: nothing served
  crd["status"] = compute_status(crd, {}, "2026-12-03T00:00:00Z");
  CHECK(condition(crd["status"], "NamesAccepted", "status") == "True");
  CHECK(condition(crd["status"], "Established", "status") == "True");
  CHECK(crd["status"]["storedVersions"] == json::array({"v1"}));

  auto kinds = kinds_of(crd);
  REQUIRE(kinds.size() == 2);  // v2alpha1 is not served
  CHECK(kinds[0].resource.gv.version == "v1");
  CHECK(kinds[1].resource.gv.version == "v1beta1");
  const auto& v1 = kinds[0];
  CHECK(v1.resource.is_custom);
  CHECK(v1.resource.short_names == std::vector<std::string>{"ct"});
  CHECK(v1.resource.categories == std::vector<std::string>{"all"});
  CHECK(v1.resource.status_subresource);
  CHECK(v1.resource.scale_subresource);
  CHECK_FALSE(kinds[1].resource.status_subresource);
  // Both versions store their objects in one place.
  CHECK(v1.resource.storage_of == "stable.example.com/crontabs");
  CHECK(kinds[1].resource.storage_of == v1.resource.storage_of);
  REQUIRE(v1.custom);
  CHECK(v1.custom->storage_version == "v1");
  CHECK(v1.custom->spec_replicas_path == ".spec.replicas");
  REQUIRE(v1.resource.columns.size() == 2);
  CHECK(v1.resource.columns[1].name == "Spec");
  CHECK(v1.custom->deprecation_warning.empty());
  // Without printer columns a version shows its age.
  REQUIRE(kinds[1].custom->columns.size() == 1);
  CHECK(kinds[1].custom->columns[0].json_path == ".metadata.creationTimestamp");
}

TEST_CASE("a deprecated version warns whoever uses it", "[apiserver][crd]") {
  json crd = crontabs();
  crd["spec"]["versions"][0]["deprecated"] = true;
  apply_definition_defaults(crd);
  crd["status"] = compute_status(crd, {}, "t");
  CHECK(kinds_of(crd).at(1).custom->deprecation_warning ==
        "stable.example.com/v1beta1 CronTab is deprecated");
  crd["spec"]["versions"][0]["deprecationWarning"] = "use stable.example.com/v1";
  CHECK(kinds_of(crd).at(1).custom->deprecation_warning == "use stable.example.com/v1");
}

TEST_CASE("conflicting names are reported and the loser is not served", "[apiserver][crd]") {
  json first = crontabs();
  apply_definition_defaults(first);
  first["status"] = compute_status(first, {}, "t");
  json second = crontabs();
  second["metadata"]["name"] = "crontables.stable.example.com";
  second["spec"]["names"] = {
      {"plural", "crontables"}, {"singular", "crontable"}, {"kind", "CronTab"}};
  apply_definition_defaults(second);
  second["status"] = compute_status(second, {first}, "t");
  CHECK(condition(second["status"], "NamesAccepted", "reason") == "KindConflict");
  CHECK(condition(second["status"], "NamesAccepted", "message") == "\"CronTab\" is already in use");
  CHECK(condition(second["status"], "Established", "status") == "False");
  CHECK(kinds_of(second).empty());

  // A short name another CRD took.
  second["spec"]["names"] = {
      {"plural", "crontables"}, {"kind", "CronTable"}, {"shortNames", {"ct"}}};
  apply_definition_defaults(second);
  second["status"] = compute_status(second, {first}, "t");
  CHECK(condition(second["status"], "NamesAccepted", "reason") == "ShortNamesConflict");
}

TEST_CASE("a CRD being deleted says so and refuses new objects", "[apiserver][crd]") {
  json crd = crontabs();
  apply_definition_defaults(crd);
  crd["status"] = compute_status(crd, {}, "t1");
  crd["metadata"]["deletionTimestamp"] = "2026-12-03T00:00:00Z";
  json status = compute_status(crd, {}, "t2");
  CHECK(condition(status, "Terminating", "status") == "True");
  CHECK(condition(status, "Terminating", "reason") == "InstanceDeletionInProgress");
  // Unchanged conditions keep their transition time.
  CHECK(condition(status, "Established", "lastTransitionTime") == "t1");
  crd["status"] = status;
  CHECK(kinds_of(crd).at(0).custom->terminating);
}

TEST_CASE("CRD validation in kube's words", "[apiserver][crd]") {
  json crd = crontabs();
  apply_definition_defaults(crd);
  FieldErrors errs;
  validate_definition(crd, nullptr, errs);
  CHECK(errs.empty());

  crd["metadata"]["name"] = "crontab.stable.example.com";
  crd["spec"]["scope"] = "Regional";
  crd["spec"]["versions"][0]["storage"] = true;  // two storage versions
  crd["spec"]["versions"][1].erase("schema");
  crd["spec"]["versions"][1]["additionalPrinterColumns"][0]["type"] = "float";
  errs.clear();
  validate_definition(crd, nullptr, errs);
  std::string all;
  for (const auto& e : errs) all += e.to_string() + "\n";
  CHECK(all.find("metadata.name: Invalid value: \"crontab.stable.example.com\": must be "
                 "spec.names.plural+\".\"+spec.group") != std::string::npos);
  CHECK(all.find("spec.scope: Unsupported value: \"Regional\"") != std::string::npos);
  CHECK(all.find("must have exactly one version marked as storage version") != std::string::npos);
  CHECK(all.find("spec.versions[1].schema.openAPIV3Schema: Required value") != std::string::npos);
  CHECK(
      all.find("spec.versions[1].additionalPrinterColumns[0].type: Unsupported value: \"float\"") !=
      std::string::npos);

  json group = crontabs();
  group["spec"]["group"] = "apps";
  group["metadata"]["name"] = "crontabs.apps";
  errs.clear();
  validate_definition(group, nullptr, errs);
  CHECK_FALSE(errs.empty());  // a built-in group, and no dot in it

  json k8s = crontabs();
  k8s["spec"]["group"] = "stable.k8s.io";
  k8s["metadata"]["name"] = "crontabs.stable.k8s.io";
  errs.clear();
  validate_definition(k8s, nullptr, errs);
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].field == "metadata.annotations[api-approved.kubernetes.io]");

  json changed = crontabs();
  changed["spec"]["scope"] = "Cluster";
  errs.clear();
  json old = crontabs();
  validate_definition(changed, &old, errs);
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].to_string() == "spec.scope: Invalid value: \"Cluster\": field is immutable");
}

TEST_CASE("versions sort as kube orders them", "[apiserver][crd]") {
  CHECK(version_before("v2", "v1"));
  CHECK(version_before("v1", "v2beta1"));
  CHECK(version_before("v1beta2", "v1beta1"));
  CHECK(version_before("v1beta1", "v1alpha1"));
  CHECK(version_before("v1alpha1", "foo"));
  CHECK_FALSE(version_before("v1", "v1"));
}

TEST_CASE("printer-column JSONPath", "[apiserver][crd]") {
  json obj = json::parse(R"({"spec": {"n": 3, "items": [{"name": "a"}, {"name": "b"}],
    "labels": {"a.b/c": "x"}},
    "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]}})");
  std::string error;
  auto find = [&](const char* path) {
    auto p = JsonPath::parse(path, &error);
    REQUIRE(p);
    std::vector<json> out;
    for (const json* v : p->find(obj)) out.push_back(*v);
    return out;
  };
  CHECK(find(".spec.n") == std::vector<json>{3});
  CHECK(find(".spec.items[1].name") == std::vector<json>{"b"});
  CHECK(find(".spec.items[-1].name") == std::vector<json>{"b"});
  CHECK(find(".spec.items[*].name") == std::vector<json>{"a", "b"});
  CHECK(find(".spec.labels['a.b/c']") == std::vector<json>{"x"});
  CHECK(find(R"(.status.conditions[?(@.type=="Ready")].status)") == std::vector<json>{"True"});
  CHECK(find(R"({.status.conditions[?(@.type!="Ready")].type})") == std::vector<json>{"Synced"});
  CHECK(find(".spec.missing").empty());
  CHECK(JsonPath::parse(".spec.n", &error)->is_simple_field());
  CHECK_FALSE(JsonPath::parse(".spec.items[0]", &error)->is_simple_field());
  CHECK(JsonPath::parse("spec.n", &error) == nullptr);
  CHECK(JsonPath::parse(".spec..n", &error) == nullptr);

  json target;
  set_field(target, ".spec.replicas", 4);
  CHECK(target["spec"]["replicas"] == 4);
  CHECK(*find_field(target, ".spec.replicas") == 4);
  CHECK(find_field(target, ".status.replicas") == nullptr);
}

}  // namespace
}  // namespace vkube::apiserver::crd

namespace vkube::apiserver::crd {
namespace {

TEST_CASE("rules vkube cannot evaluate are warned about, never silently ignored",
          "[apiserver][crd]") {
  json crd = crontabs();
  crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"] = json::parse(R"js({
    "type": "object",
    "properties": {"spec": {"type": "object",
      "x-kubernetes-validations": [{"rule": "isSemver(self.memory)"},
                                   {"rule": "self.memory != ''"}],
      "properties": {"memory": {"type": "string"}}}}})js");
  auto warnings = definition_warnings(crd);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("not enforced by vkube") != std::string::npos);
  CHECK(warnings[0].find("x-kubernetes-validations[0]") != std::string::npos);
}

}  // namespace
}  // namespace vkube::apiserver::crd
