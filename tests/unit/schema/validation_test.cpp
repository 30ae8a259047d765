// Strict field validation against the type registry.
#include <catch2/catch.hpp>

#include "vkube/schema/validation.h"

namespace vkube::schema {
namespace {

using json = nlohmann::json;
using Paths = std::vector<std::string>;

const Message& deployment() { return *Registry::get().find_kind("apps", "v1", "Deployment"); }

TEST_CASE("unknown fields are named by their path", "[schema]") {
  json d = json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "labelz": {}},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
      "template": {"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [
          {"name": "a", "image": "x"},
          {"name": "b", "image": "y", "imagePullPolcy": "Always",
           "resources": {"limits": {"cpu": "1"}}}],
          "volumes": [{"name": "v", "configMap": {"name": "c", "bogus": 1}}]}},
      "replica": 3}})");
  CHECK(unknown_fields(deployment(), d) ==
        Paths{"metadata.labelz", "spec.replica",
              "spec.template.spec.containers[1].imagePullPolcy",
              "spec.template.spec.volumes[0].configMap.bogus"});
}

TEST_CASE("a valid object has no unknown fields, inlined and embedded ones included", "[schema]") {
  json pod = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"a": "b"}},
    "spec": {"containers": [{"name": "c", "image": "i",
       "livenessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 3},
       "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}],
     "volumes": [{"name": "d", "emptyDir": {}}, {"name": "pvc", "persistentVolumeClaim": {"claimName": "c"}}]}})");
  CHECK(unknown_fields(*Registry::get().find_kind("", "v1", "Pod"), pod).empty());
  json crd = json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
      "names": {"plural": "widgets", "kind": "Widget"},
      "versions": [{"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object",
          "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
             "properties": {"size": {"type": "integer", "default": 1}}}}}}}]}})");
  CHECK(unknown_fields(*Registry::get().find_kind("apiextensions.k8s.io", "v1",
                                                  "CustomResourceDefinition"),
                       crd)
            .empty());
}

TEST_CASE("duplicate keys are found with their path", "[schema]") {
  CHECK(duplicate_fields(R"({"a": 1, "a": 2})") == Paths{"a"});
  CHECK(duplicate_fields(R"({"metadata": {"name": "x", "name": "y"},
                            "spec": {"containers": [{"name": "a"}, {"name": "b", "image": "i", "image": "j"}]}})") ==
        Paths{"metadata.name", "spec.containers[1].image"});
  CHECK(duplicate_fields(R"({"a": [1, 2, {"b": 1, "b": 2}]})") == Paths{"a[2].b"});
  CHECK(duplicate_fields(R"({"a": {"x": 1}, "b": {"x": 1}})").empty());
  // Colons and escaped quotes inside strings are not keys.
  CHECK(duplicate_fields(R"({"url": "http://a:1/\":x", "k:y": ["a:b", {"c": ":"}]})").empty());
  CHECK(duplicate_fields(R"({"url": "http://a:1", "q": {"t": "a\"b:", "t": 2}})") == Paths{"q.t"});
  // Empty containers, and a repeated key whose values differ in shape.
  CHECK(duplicate_fields(R"({"a": {}, "b": [], "c": [{}], "a": {"x": 1}})") == Paths{"a"});
  CHECK(duplicate_fields(R"([{"a": 1}, {"a": 1, "a": 1}])") == Paths{"[1].a"});
}

// Found by tests/fuzz/fuzz_json.cpp: nlohmann stops at a NUL byte, so a body
// with anything after "\0" was accepted as the value before it.
TEST_CASE("a NUL byte anywhere makes a JSON body invalid", "[schema]") {
  using namespace std::string_view_literals;
  CHECK(parse_json("{}\0"sv, nullptr).is_discarded());
  CHECK(parse_json("{\"a\": 1}\0{\"b\": 2}"sv, nullptr).is_discarded());
  std::vector<std::string> dups;
  CHECK(parse_json("{\"a\": 1, \"a\": 2}\0"sv, &dups).is_discarded());
  CHECK(parse_json("[1]\0"sv, nullptr).is_discarded());
  CHECK_FALSE(parse_json("{\"a\": \"\\u0000\"}"sv, nullptr).is_discarded());
}

}  // namespace
}  // namespace vkube::schema
