// Structural schemas of CustomResourceDefinitions: what a user sees when a custom resource is
// created (the 422 field errors worded as kube-apiserver words them, the defaults filled in,
// the unknown fields dropped) and when a CRD with a bad schema is refused.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "structural.h"

namespace vkube::apiserver::crd {
namespace {

using Strings = std::vector<std::string>;

Strings messages_of(const FieldErrors& errs) {
  Strings out;
  for (const FieldError& e : errs) out.push_back(e.to_string());
  return out;
}

Strings errors_for(const json& schema, const json& object) {
  FieldErrors errs;
  validate(schema, object, errs);
  return messages_of(errs);
}

Strings schema_errors(const json& schema) {
  FieldErrors errs;
  check_schema(schema, "spec.versions[0].schema.openAPIV3Schema", errs);
  return messages_of(errs);
}

// A CronTab-like schema: the root object with a typed spec.
json with_spec(json spec_properties, json spec_extra = json::object()) {
  json spec = {{"type", "object"}, {"properties", std::move(spec_properties)}};
  spec.update(spec_extra);
  return {{"type", "object"}, {"properties", {{"spec", spec}}}};
}

json resource(json spec) {
  return {{"apiVersion", "stable.example.com/v1"},
          {"kind", "CronTab"},
          {"metadata", {{"name", "my-cron"}, {"namespace", "default"}}},
          {"spec", std::move(spec)}};
}

TEST_CASE("a custom resource with a wrongly typed field is refused in kube's words",
          "[apiserver][crd]") {
  json schema = with_spec({{"replicas", {{"type", "integer"}}}, {"image", {{"type", "string"}}}});
  CHECK(errors_for(schema, resource({{"replicas", "three"}})) ==
        Strings{"spec.replicas: Invalid value: \"string\": spec.replicas in body must be of "
                "type integer: \"string\""});
  CHECK(errors_for(schema, resource({{"image", 5}})) ==
        Strings{"spec.image: Invalid value: \"integer\": spec.image in body must be of type "
                "string: \"integer\""});
  CHECK(errors_for(schema, resource({{"replicas", 3}, {"image", "nginx"}})).empty());
}

TEST_CASE("integral numbers count as integers, fractions do not", "[apiserver][crd]") {
  json schema = with_spec({{"replicas", {{"type", "integer"}}}, {"ratio", {{"type", "number"}}}});
  CHECK(errors_for(schema, resource({{"replicas", 5.0}, {"ratio", 2}})).empty());
  CHECK(errors_for(schema, resource({{"replicas", 5.5}})) ==
        Strings{"spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type "
                "integer: \"number\"",
                "<nil>: Invalid value: \"\": Checked value must be of type integer (default "
                "format) in spec.replicas"});
}

TEST_CASE("numeric bounds and multipleOf are reported per kube-openapi", "[apiserver][crd]") {
  json schema =
      with_spec({{"replicas", {{"type", "integer"}, {"minimum", 1}, {"maximum", 10}}},
                 {"step", {{"type", "integer"}, {"multipleOf", 3}}},
                 {"ratio", {{"type", "number"}, {"maximum", 0.00001}, {"exclusiveMaximum", true}}},
                 {"count", {{"type", "integer"}, {"format", "int32"}}}});
  CHECK(errors_for(schema, resource({{"replicas", 11}})) ==
        Strings{"spec.replicas: Invalid value: 11: spec.replicas in body should be less than or "
                "equal to 10"});
  CHECK(errors_for(schema, resource({{"replicas", 0}})) ==
        Strings{"spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or "
                "equal to 1"});
  CHECK(errors_for(schema, resource({{"step", 7}})) ==
        Strings{"spec.step: Invalid value: 7: spec.step in body should be a multiple of 3"});
  // Go prints the float64 bound as %v does.
  CHECK(errors_for(schema, resource({{"ratio", 0.5}})) ==
        Strings{"spec.ratio: Invalid value: 0.5: spec.ratio in body should be less than 1e-05"});
  CHECK(errors_for(schema, resource({{"count", 3000000000LL}})) ==
        Strings{"<nil>: Invalid value: \"\": Checked value must be of type integer with format "
                "int32 in spec.count"});
}

TEST_CASE("string lengths count characters and patterns are Go regular expressions",
          "[apiserver][crd]") {
  json schema = with_spec({{"name", {{"type", "string"}, {"minLength", 3}, {"maxLength", 5}}},
                           {"code", {{"type", "string"}, {"pattern", "^a+$"}}},
                           {"tag", {{"type", "string"}, {"pattern", "(?i)^v[0-9]+\\z"}}}});
  CHECK(errors_for(schema, resource({{"name", "h\xC3\xA9llo"}})).empty());  // 5 runes, 6 bytes
  CHECK(errors_for(schema, resource({{"name", "ab"}})) ==
        Strings{"spec.name: Invalid value: \"ab\": spec.name in body should be at least 3 chars "
                "long"});
  CHECK(errors_for(schema, resource({{"name", "abcdef"}})) ==
        Strings{"spec.name: Too long: may not be more than 5 bytes"});
  CHECK(errors_for(schema, resource({{"code", "bbb"}})) ==
        Strings{"spec.code: Invalid value: \"bbb\": spec.code in body should match '^a+$'"});
  CHECK(errors_for(schema, resource({{"code", "aaa"}, {"tag", "V12"}})).empty());
  CHECK(errors_for(schema, resource({{"tag", "v1x"}})).size() == 1);
}

TEST_CASE("array and object sizes, enums and required fields", "[apiserver][crd]") {
  json schema = with_spec(
      {{"items",
        {{"type", "array"}, {"minItems", 2}, {"maxItems", 2}, {"items", {{"type", "string"}}}}},
       {"mode", {{"type", "string"}, {"enum", {"a", "b"}}}},
       {"level", {{"type", "integer"}, {"enum", {1, 2}}}},
       {"env",
        {{"type", "object"}, {"maxProperties", 1}, {"additionalProperties", {{"type", "string"}}}}},
       {"name", {{"type", "string"}}}},
      {{"required", {"name"}}});
  json ok = {{"name", "x"}};
  json three = ok;
  three["items"] = {"a", "b", "c"};
  CHECK(errors_for(schema, resource(three)) ==
        Strings{"spec.items: Too many: 3: must have at most 2 items"});
  json one = ok;
  one["items"] = {"a"};
  CHECK(errors_for(schema, resource(one)) ==
        Strings{"spec.items: Invalid value: 1: spec.items in body should have at least 2 items"});
  json mode = ok;
  mode["mode"] = "c";
  mode["level"] = 3;
  CHECK(errors_for(schema, resource(mode)) ==
        Strings{"spec.level: Unsupported value: 3: supported values: \"1\", \"2\"",
                "spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\""});
  json env = ok;
  env["env"] = {{"A", "1"}, {"B", 2}};
  CHECK(errors_for(schema, resource(env)) ==
        Strings{"spec.env: Too many: 2: must have at most 1 item",
                "spec.env.B: Invalid value: \"integer\": spec.env.B in body must be of type "
                "string: \"integer\""});
  CHECK(errors_for(schema, resource(json::object())) == Strings{"spec.name: Required value"});
  json root_required = {
      {"type", "object"}, {"required", {"spec"}}, {"properties", {{"spec", {{"type", "object"}}}}}};
  CHECK(errors_for(root_required, {{"kind", "CronTab"}}) == Strings{"spec: Required value"});
}

TEST_CASE("additionalProperties: false forbids undeclared entries", "[apiserver][crd]") {
  json schema = with_spec({{"opts", {{"type", "object"}, {"additionalProperties", false}}}});
  CHECK(errors_for(schema, resource({{"opts", {{"debug", true}}}})) ==
        Strings{"spec.opts: Invalid value: \"debug\": spec.opts.debug in body is a forbidden "
                "property"});
}

TEST_CASE("null is accepted only where the schema is nullable", "[apiserver][crd]") {
  json schema =
      with_spec({{"a", {{"type", "string"}, {"nullable", true}}}, {"b", {{"type", "string"}}}});
  CHECK(errors_for(schema, resource({{"a", nullptr}})).empty());
  CHECK(
      errors_for(schema, resource({{"b", nullptr}})) ==
      Strings{"spec.b: Invalid value: \"null\": spec.b in body must be of type string: \"null\""});
}

TEST_CASE("formats kube validates are checked, unknown formats are ignored", "[apiserver][crd]") {
  auto str = [](const char* format) { return json{{"type", "string"}, {"format", format}}; };
  json schema = with_spec({{"day", str("date")},
                           {"at", str("date-time")},
                           {"id", str("uuid")},
                           {"data", str("byte")},
                           {"ip", str("ipv4")},
                           {"host", str("hostname")},
                           {"mail", str("email")},
                           {"wait", str("duration")},
                           {"other", str("my-own-format")}});
  json good = {{"day", "2024-02-29"},
               {"at", "2024-02-29T10:00:00Z"},
               {"id", "123e4567-e89b-12d3-a456-426614174000"},
               {"data", "aGVsbG8="},
               {"ip", "10.0.0.1"},
               {"host", "example.com"},
               {"mail", "Jane <jane@example.com>"},
               {"wait", "1h30m"},
               {"other", "anything"}};
  CHECK(errors_for(schema, resource(good)).empty());
  CHECK(errors_for(schema, resource({{"day", "2023-02-29"}})) ==
        Strings{"spec.day: Invalid value: \"2023-02-29\": spec.day in body must be of type date: "
                "\"2023-02-29\""});
  CHECK(errors_for(schema, resource({{"at", "2024-02-29 10:00"}})) ==
        Strings{"spec.at: Invalid value: \"2024-02-29 10:00\": spec.at in body must be of type "
                "date-time: \"2024-02-29 10:00\""});
  for (const char* field : {"id", "data", "ip", "host", "mail", "wait"}) {
    INFO(field);
    CHECK(errors_for(schema, resource({{field, "not valid!"}})).size() == 1);
  }
}

TEST_CASE("int-or-string fields take either, and nothing else", "[apiserver][crd]") {
  json port = {{"x-kubernetes-int-or-string", true},
               {"anyOf", {{{"type", "integer"}}, {{"type", "string"}}}}};
  json schema = with_spec({{"port", port}});
  CHECK(errors_for(schema, resource({{"port", 80}})).empty());
  CHECK(errors_for(schema, resource({{"port", "http"}})).empty());
  Strings errs = errors_for(schema, resource({{"port", true}}));
  REQUIRE(errs.size() == 3);
  CHECK(errs[0] ==
        "spec.port: Invalid value: \"boolean\": spec.port in body must be of type "
        "integer,string: \"boolean\"");
  CHECK(errs[1] ==
        "<nil>: Invalid value: \"\": \"spec.port\" must validate at least one schema "
        "(anyOf)");
  CHECK(errs[2] ==
        "spec.port: Invalid value: \"boolean\": spec.port in body must be of type "
        "integer: \"boolean\"");
}

TEST_CASE("oneOf and not refuse as kube-openapi does", "[apiserver][crd]") {
  json schema = with_spec({{"size",
                            {{"type", "integer"},
                             {"oneOf", {{{"minimum", 0}}, {{"maximum", 10}}}},
                             {"not", {{"enum", {13}}}}}}});
  CHECK(errors_for(schema, resource({{"size", 20}})).empty());
  CHECK(errors_for(schema, resource({{"size", 5}})) ==
        Strings{"<nil>: Invalid value: \"\": \"spec.size\" must validate one and only one schema "
                "(oneOf). Found 2 valid alternatives"});
  CHECK(errors_for(schema, resource({{"size", 13}})) ==
        Strings{"<nil>: Invalid value: \"\": \"spec.size\" must not validate the schema (not)"});
}

TEST_CASE("errors inside arrays name the item", "[apiserver][crd]") {
  json item = {{"type", "object"},
               {"required", {"name"}},
               {"properties", {{"name", {{"type", "string"}}}, {"port", {{"type", "integer"}}}}}};
  json schema = with_spec({{"ports", {{"type", "array"}, {"items", item}}}});
  CHECK(errors_for(schema, resource({{"ports", {{{"name", "a"}}, {{"port", "x"}}}}})) ==
        Strings{"spec.ports[1].port: Invalid value: \"string\": spec.ports[1].port in body must "
                "be of type integer: \"string\"",
                "spec.ports[1].name: Required value"});
}

TEST_CASE("embedded resources need a well-formed apiVersion and kind", "[apiserver][crd]") {
  json embedded = {{"type", "object"},
                   {"x-kubernetes-embedded-resource", true},
                   {"x-kubernetes-preserve-unknown-fields", true}};
  json schema = with_spec({{"template", embedded}});
  CHECK(errors_for(schema, resource({{"template", {{"apiVersion", "v1"}, {"kind", "Pod"}}}}))
            .empty());
  CHECK(errors_for(schema, resource({{"template", json::object()}})) ==
        Strings{"spec.template.apiVersion: Required value", "spec.template.kind: Required value"});
  Strings bad =
      errors_for(schema, resource({{"template", {{"apiVersion", "a/b/c"}, {"kind", "my_kind"}}}}));
  REQUIRE(bad.size() == 2);
  CHECK(bad[0] ==
        "spec.template.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion "
        "string: a/b/c");
  CHECK(bad[1].rfind("spec.template.kind: Invalid value: \"my_kind\": may have mixed case, but "
                     "should otherwise match: a DNS-1035 label must consist of",
                     0) == 0);
}

TEST_CASE("embedded resources' metadata is checked as ObjectMeta", "[apiserver][crd]") {
  json embedded = {{"type", "object"},
                   {"x-kubernetes-embedded-resource", true},
                   {"x-kubernetes-preserve-unknown-fields", true}};
  json schema = with_spec({{"template", embedded}});
  json bad_label = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", "a/b"}, {"labels", {{"app", "not ok"}}}}}};
  Strings errs = errors_for(schema, resource({{"template", bad_label}}));
  REQUIRE(errs.size() == 2);
  CHECK(errs[0] == "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'");
  CHECK(errs[1].rfind("spec.template.metadata.labels: Invalid value: \"not ok\": a valid label "
                      "must be an empty string or consist of alphanumeric characters",
                      0) == 0);
  json not_object = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", "x"}};
  CHECK(errors_for(schema, resource({{"template", not_object}})) ==
        Strings{"spec.template.metadata: Invalid value: \"x\": json: cannot unmarshal string into "
                "Go value of type v1.ObjectMeta"});
}

TEST_CASE("list-type set and map arrays refuse repeated items and keys", "[apiserver][crd]") {
  json set = {
      {"type", "array"}, {"x-kubernetes-list-type", "set"}, {"items", {{"type", "string"}}}};
  json map = {
      {"type", "array"},
      {"x-kubernetes-list-type", "map"},
      {"x-kubernetes-list-map-keys", {"name"}},
      {"items",
       {{"type", "object"},
        {"required", {"name"}},
        {"properties", {{"name", {{"type", "string"}}}, {"port", {{"type", "integer"}}}}}}}};
  json schema = with_spec({{"tags", set}, {"ports", map}});
  CHECK(errors_for(schema, resource({{"tags", {"a", "b", "a", "a"}}})) ==
        Strings{"spec.tags[2]: Duplicate value: \"a\""});
  json ports = {
      {{"name", "a"}, {"port", 1}}, {{"name", "b"}, {"port", 2}}, {{"name", "a"}, {"port", 3}}};
  CHECK(errors_for(schema, resource({{"ports", ports}})) ==
        Strings{"spec.ports[2]: Duplicate value: {\"name\":\"a\"}"});
}

TEST_CASE("defaults fill absent fields, nulls and the objects defaults create",
          "[apiserver][crd]") {
  json schema =
      with_spec({{"replicas", {{"type", "integer"}, {"default", 1}}},
                 {"mode", {{"type", "string"}, {"default", "fast"}}},
                 {"note", {{"type", "string"}, {"nullable", true}, {"default", "n"}}},
                 {"strategy",
                  {{"type", "object"},
                   {"default", json::object()},
                   {"properties", {{"type", {{"type", "string"}, {"default", "Rolling"}}}}}}},
                 {"ports",
                  {{"type", "array"},
                   {"items",
                    {{"type", "object"},
                     {"properties", {{"protocol", {{"type", "string"}, {"default", "TCP"}}}}}}}}},
                 {"limits",
                  {{"type", "object"},
                   {"additionalProperties",
                    {{"type", "object"},
                     {"properties", {{"unit", {{"type", "string"}, {"default", "Mi"}}}}}}}}}});
  json cr = resource({{"mode", nullptr},
                      {"note", nullptr},
                      {"ports", {{{"port", 80}}, {{"protocol", "UDP"}}}},
                      {"limits", {{"memory", json::object()}}}});
  apply_defaults(schema, cr);
  const json& spec = cr["spec"];
  CHECK(spec["replicas"] == 1);
  CHECK(spec["mode"] == "fast");  // null of a non-nullable field takes the default
  CHECK(spec["note"].is_null());  // a nullable null stays
  CHECK(spec["strategy"] == json{{"type", "Rolling"}});  // nested default of a defaulted object
  CHECK(spec["ports"][0]["protocol"] == "TCP");
  CHECK(spec["ports"][1]["protocol"] == "UDP");
  CHECK(spec["limits"]["memory"]["unit"] == "Mi");
}

TEST_CASE("pruning drops unknown fields and reports them as kube does", "[apiserver][crd]") {
  json item = {{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}}}};
  json schema = with_spec(
      {{"name", {{"type", "string"}}},
       {"items", {{"type", "array"}, {"items", item}}},
       {"free", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}},
       {"template",
        {{"type", "object"},
         {"x-kubernetes-embedded-resource", true},
         {"properties",
          {{"spec", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}}},
       {"opt", {{"type", "string"}}},
       {"dflt", {{"type", "string"}, {"default", "d"}}},
       {"limits", {{"type", "object"}, {"additionalProperties", item}}},
       {"name2", {{"type", "string"}}}});
  json cr = resource({{"name", "x"},
                      {"bogus", 1},
                      {"items", {{{"name", "a"}, {"extra", true}}}},
                      {"free", {{"anything", {{"goes", 1}}}}},
                      {"template",
                       {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata", {{"name", "p"}, {"color", "red"}}},
                        {"spec", {{"containers", json::array()}}},
                        {"status", json::object()}}},
                      {"opt", nullptr},
                      {"dflt", nullptr},
                      {"limits", {{"cpu", {{"name", "c"}, {"unit", "m"}}}}},
                      {"name2", {{"nested", {{"deep", 1}}}}}});
  cr["metadata"]["shoeSize"] = 44;
  cr["status"] = {{"phase", "x"}};
  Strings unknown = prune(schema, cr);
  // A map entry's fields read "spec.limits.cpu.unit"; an object where the schema has a string
  // loses all its fields.
  CHECK(unknown == Strings{"metadata.shoeSize", "spec.bogus", "spec.items[0].extra",
                           "spec.limits.cpu.unit", "spec.name2.nested", "spec.template.status",
                           "status", "spec.template.metadata.color"});
  CHECK(cr["apiVersion"] == "stable.example.com/v1");
  CHECK(cr["metadata"] == json{{"name", "my-cron"}, {"namespace", "default"}});
  CHECK_FALSE(cr.contains("status"));
  const json& spec = cr["spec"];
  CHECK(spec["items"][0] == json{{"name", "a"}});
  CHECK(spec["limits"] == json{{"cpu", {{"name", "c"}}}});
  CHECK(spec["name2"] == json::object());
  CHECK(spec["free"] == json{{"anything", {{"goes", 1}}}});
  CHECK(spec["template"] == json{{"apiVersion", "v1"},
                                 {"kind", "Pod"},
                                 {"metadata", {{"name", "p"}}},
                                 {"spec", {{"containers", json::array()}}}});
  CHECK_FALSE(spec.contains("opt"));  // a non-nullable null without a default is dropped
  CHECK(spec.contains("dflt"));       // ...but kept for defaulting when there is a default
}

const json kValidSchema = {
    {"type", "object"},
    {"properties",
     {{"spec",
       {{"type", "object"},
        {"required", {"cronSpec"}},
        {"properties",
         {{"cronSpec",
           {{"type", "string"}, {"pattern", "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"}}},
          {"replicas", {{"type", "integer"}, {"minimum", 1}, {"maximum", 10}, {"default", 1}}},
          {"port",
           {{"x-kubernetes-int-or-string", true},
            {"anyOf", {{{"type", "integer"}}, {{"type", "string"}}}}}},
          {"labels", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
          {"ports",
           {{"type", "array"},
            {"x-kubernetes-list-type", "map"},
            {"x-kubernetes-list-map-keys", {"name"}},
            {"items",
             {{"type", "object"},
              {"required", {"name"}},
              {"properties", {{"name", {{"type", "string"}}}, {"port", {{"type", "integer"}}}}}}}}},
          {"raw", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}},
          {"anything", {{"x-kubernetes-preserve-unknown-fields", true}}}}}}},
      {"status", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}},
      {"metadata",
       {{"type", "object"},
        {"properties", {{"name", {{"type", "string"}, {"maxLength", 20}}}}}}}}}};

json with_field(const std::string& name, json field) {
  json s = kValidSchema;
  s["properties"]["spec"]["properties"][name] = std::move(field);
  return s;
}

const std::string kSpec = "spec.versions[0].schema.openAPIV3Schema.properties[spec]";

TEST_CASE("a structural schema passes the CRD checks", "[apiserver][crd]") {
  CHECK(schema_errors(kValidSchema).empty());
}

TEST_CASE("a CRD schema must type every field and be an object at the root", "[apiserver][crd]") {
  CHECK(schema_errors(with_field("x", {{"description", "untyped"}})) ==
        Strings{kSpec + ".properties[x].type: Required value: must not be empty for specified "
                        "object fields"});
  CHECK(schema_errors({{"type", "array"}, {"items", {{"type", "string"}}}}) ==
        Strings{"spec.versions[0].schema.openAPIV3Schema.type: Invalid value: \"array\": must be "
                "object at the root"});
  CHECK(schema_errors(with_field("list", {{"type", "array"}})) ==
        Strings{kSpec + ".properties[list].items: Required value: must be specified"});
  CHECK(schema_errors(with_field("x", {{"type", "foo"}})) ==
        Strings{kSpec + ".properties[x].type: Unsupported value: \"foo\": supported values: "
                        "\"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""});
}

TEST_CASE("a CRD schema keeps structure out of value validations", "[apiserver][crd]") {
  json s = with_field("x", {{"type", "object"},
                            {"properties", {{"a", {{"type", "string"}}}}},
                            {"anyOf",
                             {{{"type", "object"}, {"required", {"a"}}},
                              {{"properties", {{"b", {{"minLength", 1}}}}}}}}});
  CHECK(schema_errors(s) ==
        Strings{kSpec + ".properties[x].anyOf[0].type: Forbidden: must be empty to be structural"});
  json incomplete = kValidSchema;
  incomplete["allOf"] = {{{"properties", {{"nope", {{"minLength", 1}}}}}}};
  CHECK(schema_errors(incomplete) ==
        Strings{"spec.versions[0].schema.openAPIV3Schema.properties[nope]: Required value: "
                "because it is defined in "
                "spec.versions[0].schema.openAPIV3Schema.allOf[0].properties[nope]"});
}

TEST_CASE("a CRD schema's keyword combinations are checked", "[apiserver][crd]") {
  CHECK(schema_errors(with_field("m", {{"type", "object"},
                                       {"properties", {{"a", {{"type", "string"}}}}},
                                       {"additionalProperties", {{"type", "string"}}}})) ==
        Strings{kSpec + ".properties[m].additionalProperties: Forbidden: additionalProperties and "
                        "properties are mutual exclusive"});
  CHECK(schema_errors(with_field(
            "u", {{"type", "array"}, {"uniqueItems", true}, {"items", {{"type", "string"}}}})) ==
        Strings{kSpec + ".properties[u].uniqueItems: Forbidden: uniqueItems cannot be set to true "
                        "since the runtime complexity becomes quadratic"});
  CHECK(schema_errors(with_field("k", {{"type", "array"},
                                       {"x-kubernetes-list-map-keys", {"name"}},
                                       {"items", {{"type", "string"}}}})) ==
        Strings{kSpec + ".properties[k].x-kubernetes-list-type: Required value: must be map if "
                        "x-kubernetes-list-map-keys is non-empty"});
  json map = {{"type", "array"},
              {"x-kubernetes-list-type", "map"},
              {"x-kubernetes-list-map-keys", {"name"}},
              {"items", {{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}}}}}};
  CHECK(schema_errors(with_field("k", map)) ==
        Strings{kSpec + ".properties[k].items.properties[name].default: Required value: this "
                        "property is in x-kubernetes-list-map-keys, so it must have a default or "
                        "be a required property"});
  CHECK(schema_errors(with_field("p", {{"type", "string"}, {"pattern", "(a"}})) ==
        Strings{kSpec + ".properties[p].pattern: Invalid value: \"(a\": must be a valid regular "
                        "expression, but isn't: error parsing regexp: missing closing ): `(a`"});
}

TEST_CASE("a CRD schema's metadata may only constrain name and generateName", "[apiserver][crd]") {
  json s = kValidSchema;
  s["properties"]["metadata"]["properties"]["labels"] = {{"type", "object"}};
  CHECK(schema_errors(s) ==
        Strings{"spec.versions[0].schema.openAPIV3Schema.properties[metadata]: Forbidden: must not "
                "specify anything other than name and generateName, but metadata is implicitly "
                "specified"});
  json d = kValidSchema;
  d["properties"]["metadata"]["default"] = {{"name", "x"}};
  CHECK(schema_errors(d) == Strings{"spec.versions[0].schema.openAPIV3Schema.properties[metadata]."
                                    "default: Forbidden: must not be set in top-level metadata"});
}

TEST_CASE("a CRD schema's defaults must be pruned and valid", "[apiserver][crd]") {
  CHECK(schema_errors(with_field("r", {{"type", "integer"}, {"default", "one"}})) ==
        Strings{kSpec + ".properties[r].default: Invalid value: \"string\":  in body must be of "
                        "type integer: \"string\""});
  CHECK(schema_errors(with_field("o", {{"type", "object"},
                                       {"properties", {{"a", {{"type", "string"}}}}},
                                       {"default", {{"a", "x"}, {"b", "y"}}}})) ==
        Strings{kSpec +
                ".properties[o].default: Invalid value: {\"a\":\"x\",\"b\":\"y\"}: must not "
                "have unknown fields"});
  CHECK(schema_errors(with_field("n", {{"type", "integer"}, {"maximum", 3}, {"default", 5}})) ==
        Strings{kSpec + ".properties[n].default: Invalid value: 5:  in body should be less than or "
                        "equal to 3"});
}

TEST_CASE("keywords kube does not support are refused", "[apiserver][crd]") {
  CHECK(schema_errors(with_field("r", {{"$ref", "#/definitions/x"}})) ==
        Strings{kSpec + ".properties[r].$ref: Forbidden: $ref is not supported"});
  json root = kValidSchema;
  root["$schema"] = "http://json-schema.org/draft-04/schema#";
  CHECK(schema_errors(root) == Strings{"spec.versions[0].schema.openAPIV3Schema: Invalid value: "
                                       "\"\": OpenAPIV3Schema 'schema' is not supported"});
  json nullable_root = kValidSchema;
  nullable_root["nullable"] = true;
  CHECK(schema_errors(nullable_root) ==
        Strings{"spec.versions[0].schema.openAPIV3Schema.nullable: Forbidden: nullable cannot be "
                "true at the root"});
}

}  // namespace
}  // namespace vkube::apiserver::crd
