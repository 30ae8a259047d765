// Field sets and the schema-driven walks of server-side apply: the FieldsV1
// form, what an applied configuration owns, what a write changes, merging.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "fieldset.h"
#include "typed.h"
#include "vkube/schema/schema.h"
#include "yaml_json.h"

namespace vkube::apiserver::apply {
namespace {

const schema::Message* deployment() {
  return schema::Registry::get().find_kind("apps", "v1", "Deployment");
}

FieldSet set_of(const char* fields_v1) {
  auto s = FieldSet::from_json(json::parse(fields_v1));
  REQUIRE(s.is_ok());
  return std::move(s).value();
}

std::vector<std::string> paths(const FieldSet& s) {
  std::vector<std::string> out;
  s.for_each([&](const FieldSet::Path& p) { out.push_back(path_string(p)); });
  return out;
}

TEST_CASE("FieldsV1 converts to and from field sets", "[apiserver][apply]") {
  const char* v1 = R"({"f:metadata":{"f:labels":{".":{},"f:app":{}}},
    "f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}},
              "f:finalizers":{"v:\"a/b\"":{}}}})";
  FieldSet s = set_of(v1);
  CHECK(s.to_json() == json::parse(v1));
  CHECK(s.size() == 5);
  CHECK(s.contains({"f:metadata", "f:labels"}));
  CHECK_FALSE(s.contains({"f:metadata"}));
  CHECK(paths(s) == std::vector<std::string>{".metadata.labels", ".metadata.labels.app",
                                             R"(.spec.containers[name="app"])",
                                             R"(.spec.containers[name="app"].image)",
                                             R"(.spec.finalizers[="a/b"])"});

  SECTION("keys are normalized: sorted, compact") {
    FieldSet k = set_of(R"({"k:{ \"protocol\": \"TCP\", \"containerPort\": 80 }":{}})");
    CHECK(k.to_json() == json::parse(R"({"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{}})"));
    CHECK(paths(k) == std::vector<std::string>{R"([containerPort=80,protocol="TCP"])"});
  }
  SECTION("keys read without parsing are spelled as parsing would spell them") {
    for (std::string text :
         {R"({"containerPort":8000,"protocol":"TCP"})", R"({"b":1,"a":2})", R"({"a":1,"a":2})",
          R"({"a":-0})", R"({"a":1.0})", R"({"a":-12})", R"({"a":"\u00e9"})", R"({"a":"x\"y"})",
          R"({"a":123456789012345678901})", R"({"a":null,"b":true,"c":false})", R"({})"}) {
      INFO(text);
      auto k = FieldSet::from_json(json{{"k:" + text, json::object()}});
      REQUIRE(k.is_ok());
      REQUIRE(k->children().size() == 1);
      CHECK(k->children()[0].first == "k:" + json::parse(text).dump());
    }
    for (std::string text : {R"("a/b")", "-0", "true", "1e3", "007", R"("\t")"}) {
      INFO(text);
      auto v = FieldSet::from_json(json{{"v:" + text, json::object()}});
      if (!json::accept(text)) {
        CHECK_FALSE(v.is_ok());
        continue;
      }
      REQUIRE(v.is_ok());
      CHECK(v->children()[0].first == "v:" + json::parse(text).dump());
    }
    CHECK_FALSE(FieldSet::from_json(json::parse(R"({"k:{\"a\":01}":{}})")).is_ok());
  }
  SECTION("malformed FieldsV1 is refused") {
    CHECK_FALSE(FieldSet::from_json(json::parse(R"({"x:y":{}})")).is_ok());
    CHECK_FALSE(FieldSet::from_json(json::parse(R"({"k:[1]":{}})")).is_ok());
    CHECK_FALSE(FieldSet::from_json(json::array()).is_ok());
  }
}

TEST_CASE("field sets unite, subtract members and intersect", "[apiserver][apply]") {
  FieldSet a =
      set_of(R"({"f:data":{"f:a":{},"f:b":{}},"f:metadata":{"f:labels":{".":{},"f:x":{}}}})");
  FieldSet b = set_of(R"({"f:data":{"f:b":{},"f:c":{}},"f:metadata":{"f:labels":{".":{}}}})");

  FieldSet u = a;
  u.unite(b);
  CHECK(
      u.to_json() ==
      json::parse(
          R"({"f:data":{"f:a":{},"f:b":{},"f:c":{}},"f:metadata":{"f:labels":{".":{},"f:x":{}}}})"));

  FieldSet d = a;
  d.subtract(b);  // members only: labels.x stays although labels goes
  CHECK(d.to_json() ==
        json::parse(R"({"f:data":{"f:a":{}},"f:metadata":{"f:labels":{"f:x":{}}}})"));

  CHECK(a.intersect(b).to_json() ==
        json::parse(R"({"f:data":{"f:b":{}},"f:metadata":{"f:labels":{}}})"));
  FieldSet gone = a;
  gone.subtract(a);
  CHECK(gone.empty());
}

TEST_CASE("an applied Deployment owns its leaves, list elements and map keys",
          "[apiserver][apply]") {
  json config = json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "w", "labels": {"app": "web"}},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
      "strategy": {},
      "template": {"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx",
                                 "ports": [{"containerPort": 80}],
                                 "env": [{"name": "A", "value": "1"}]}],
                 "tolerations": [{"key": "gpu", "operator": "Exists"}]}}}})");
  auto set = fields_of(config, object_type(deployment()), Scope::kNoStatus);
  REQUIRE(set.is_ok());
  // The selector is atomic (a leaf), strategy is empty (a member), tolerations
  // are atomic, ports are keyed with the default protocol.
  CHECK(set->to_json() == json::parse(R"({
    "f:metadata": {"f:labels": {"f:app": {}}},
    "f:spec": {"f:replicas": {}, "f:selector": {}, "f:strategy": {},
      "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {},
            "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}},
            "f:image": {}, "f:name": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}},
          "f:tolerations": {}}}}})"));

  SECTION("a value of the wrong type is refused with its path") {
    config["spec"]["replicas"] = "two";
    auto bad = fields_of(config, object_type(deployment()), Scope::kAll);
    REQUIRE_FALSE(bad.is_ok());
    CHECK(bad.status().message() == ".spec.replicas: expected numeric (int or float), got string");
    config["spec"]["replicas"] = 2;
    config["spec"]["template"]["spec"]["containers"][0].erase("name");
    bad = fields_of(config, object_type(deployment()), Scope::kAll);
    REQUIRE_FALSE(bad.is_ok());
    CHECK_THAT(bad.status().message(),
               Catch::StartsWith(".spec.template.spec.containers: element 0: associative list"));
  }
  SECTION("custom resources: every key is a member, lists are atomic") {
    json cr = {{"apiVersion", "x.io/v1"},
               {"kind", "Foo"},
               {"metadata", {{"name", "f"}, {"labels", {{"a", "b"}}}}},
               {"spec", {{"size", 3}, {"items", {1, 2}}}}};
    auto s = fields_of(cr, object_type(nullptr), Scope::kAll);
    REQUIRE(s.is_ok());
    CHECK(
        s->to_json() ==
        json::parse(
            R"({"f:metadata":{"f:labels":{"f:a":{}}},"f:spec":{".":{},"f:items":{},"f:size":{}}})"));
  }
}

TEST_CASE("a create owns what it sets; structs Go always writes are not added",
          "[apiserver][apply]") {
  json d = json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web","labels":{"app":"web"},"uid":"u"},
    "spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},
      "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%"}},
      "template":{"metadata":{"labels":{"app":"web"}},
        "spec":{"containers":[{"name":"app","image":"nginx","resources":{}}]}}},
    "status":{}})");
  Comparison c = compare(nullptr, d, object_type(deployment()), Scope::kNoStatus);
  CHECK(c.removed.empty());
  // What kube-apiserver records for kubectl create: no "." on spec, strategy,
  // template or containers; "." on the labels map, rollingUpdate and the
  // container.
  CHECK(c.changed.to_json() == json::parse(R"({
    "f:metadata":{"f:labels":{".":{},"f:app":{}}},
    "f:spec":{"f:replicas":{},"f:selector":{},
      "f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{}},"f:type":{}},
      "f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},
        "f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},
                                                         "f:resources":{}}}}}}})"));

  SECTION("an update changes only what differs") {
    json next = d;
    next["spec"]["replicas"] = 3;
    next["metadata"]["labels"].erase("app");
    next["metadata"]["resourceVersion"] = "9";
    Comparison u = compare(&d, next, object_type(deployment()), Scope::kNoStatus);
    CHECK(u.changed.to_json() == json::parse(R"({"f:spec":{"f:replicas":{}}})"));
    CHECK(u.removed.to_json() == json::parse(R"({"f:metadata":{"f:labels":{"f:app":{}}}})"));
  }
}

TEST_CASE("merge follows the schema: keyed lists by key, sets by value, atomic whole",
          "[apiserver][apply]") {
  json live = json::parse(R"({"metadata":{"labels":{"a":"1","b":"2"},"finalizers":["x/a"]},
    "spec":{"selector":{"matchLabels":{"app":"web","tier":"fe"}},
      "template":{"spec":{"containers":[
        {"name":"app","image":"app:1","env":[{"name":"A","value":"1"}]},
        {"name":"side","image":"side:1"}],
      "tolerations":[{"key":"a"}]}}}})");
  json config = json::parse(R"({"metadata":{"labels":{"b":"3"},"finalizers":["x/b"]},
    "spec":{"selector":{"matchLabels":{"app":"web"}},
      "template":{"spec":{"containers":[
        {"name":"new","image":"new:1"},
        {"name":"app","image":"app:2","env":[{"name":"B","value":"2"}]}],
      "tolerations":[{"key":"b"}]}}}})");
  json out = merge(&live, config, object_type(deployment()));
  CHECK(out["metadata"]["labels"] == json::parse(R"({"a":"1","b":"3"})"));
  CHECK(out["metadata"]["finalizers"] == json::parse(R"(["x/a","x/b"])"));
  CHECK(out["spec"]["selector"] == json::parse(R"({"matchLabels":{"app":"web"}})"));
  CHECK(out["spec"]["template"]["spec"]["tolerations"] == json::parse(R"([{"key":"b"}])"));
  CHECK(out["spec"]["template"]["spec"]["containers"] == json::parse(R"([
    {"name":"new","image":"new:1"},
    {"name":"app","image":"app:2","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]},
    {"name":"side","image":"side:1"}])"));
}

TEST_CASE("prune removes what the applier dropped and nobody else keeps", "[apiserver][apply]") {
  json obj = json::parse(R"({"metadata":{"labels":{"a":"1","b":"2"}},
    "spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"app","image":"x"},
                                                          {"name":"side","image":"y"}]}}}})");
  FieldSet last = set_of(R"({"f:metadata":{"f:labels":{"f:a":{},"f:b":{}}},
    "f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{
      "k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}},
      "k:{\"name\":\"side\"}":{".":{},"f:image":{},"f:name":{}}}}}}})");
  // Still applied: label a, the app container; another manager has replicas.
  FieldSet keep = set_of(R"({"f:metadata":{"f:labels":{"f:a":{}}},"f:spec":{"f:replicas":{},
    "f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{}}}}}}})");
  prune(obj, last, keep, object_type(deployment()));
  CHECK(obj == json::parse(R"({"metadata":{"labels":{"a":"1"}},
    "spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"app"}]}}}})"));

  SECTION("an emptied map goes") {
    json o = json::parse(R"({"metadata":{"labels":{"a":"1"}}})");
    prune(o, set_of(R"({"f:metadata":{"f:labels":{"f:a":{}}}})"), FieldSet(),
          object_type(deployment()));
    CHECK(o == json::parse(R"({"metadata":{}})"));
  }
}

TEST_CASE("YAML bodies keep their scalar types", "[apiserver][apply]") {
  auto j = yaml_to_json(R"(
a: 1
b: "1"
c: 1.5
d: true
e: yes
f: ~
g: 'null'
h: 0x1F
i: -7
j: 1e3
k: 08
l: [x, "y", 2]
m: {n: v}
o: 12345678901234567890
)");
  REQUIRE(j.is_ok());
  CHECK((*j)["a"] == 1);
  CHECK((*j)["a"].is_number_integer());
  CHECK((*j)["b"] == "1");
  CHECK((*j)["c"] == 1.5);
  CHECK((*j)["d"] == true);
  CHECK((*j)["e"] == true);
  CHECK((*j)["f"].is_null());
  CHECK((*j)["g"] == "null");
  CHECK((*j)["h"] == 31);
  CHECK((*j)["i"] == -7);
  CHECK((*j)["j"] == 1000.0);
  CHECK((*j)["k"] == 8.0);
  CHECK((*j)["l"] == json::parse(R"(["x","y",2])"));
  CHECK((*j)["m"] == json::parse(R"({"n":"v"})"));
  CHECK((*j)["o"].is_number_unsigned());
  CHECK(yaml_to_json(R"({"json": [1, "2"]})")->at("json") == json::parse(R"([1,"2"])"));
  auto bad = yaml_to_json("a: [1, 2");
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().code() == Code::kBadRequest);
  CHECK_THAT(bad.status().message(), Catch::StartsWith("error decoding YAML: "));
}

// Found by fuzz_yaml: a scalar of bytes that are not UTF-8 reached JSON,
// which cannot serialise it (a 500 wherever it was dumped); go-yaml refuses
// such input before parsing it.
TEST_CASE("YAML bodies that are not UTF-8 are a 400, as go-yaml says", "[apiserver][apply]") {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"e: 1_\x96"
       "000\n",
       "yaml: invalid leading UTF-8 octet"},
      {"e: \xC3\n", "yaml: invalid trailing UTF-8 octet"},
      {"e: \xE2\x82", "yaml: incomplete UTF-8 octet sequence"},
      {"e: \xC0\x80\n", "yaml: invalid length of a UTF-8 sequence"},
      {"e: \xED\xA0\x80\n", "yaml: invalid Unicode character"},
      {std::string("__.05\0_caspecbia:ca:cabia:", 27), "yaml: control characters are not allowed"},
      {"e: \x1b[31m\n", "yaml: control characters are not allowed"},
      {std::string("{}\0junk", 7), "yaml: control characters are not allowed"},
  };
  for (const auto& [text, want] : rows) {
    auto r = yaml_to_json(text);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kBadRequest);
    CHECK_THAT(r.status().message(), Catch::EndsWith(want));
  }
  auto ok = yaml_to_json("e: \"caf\xC3\xA9 \xF0\x9F\x9A\x80\"\n");
  REQUIRE(ok.is_ok());
  CHECK((*ok)["e"].dump() == "\"caf\xC3\xA9 \xF0\x9F\x9A\x80\"");
}

}  // namespace
}  // namespace vkube::apiserver::apply
