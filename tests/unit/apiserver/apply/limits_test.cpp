// JSON that hides in strings (FieldsV1 keys, the last-applied annotation)
// passes no request depth check: server-side apply measures it before it
// walks or prints it.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "apply.h"
#include "fieldset.h"
#include "vkube/schema/schema.h"

namespace vkube::apiserver::apply {
namespace {

std::string nested_arrays(size_t depth) {
  return std::string(depth, '[') + "1" + std::string(depth, ']');
}

TEST_CASE("a FieldsV1 key holding deeply nested JSON is refused", "[apiserver][limits][apply]") {
  json fields = json::object();
  fields["k:{\"name\":" + nested_arrays(100000) + "}"] = json::object();
  auto s = FieldSet::from_json(fields);
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.status().code() == Code::kBadRequest);
  // A key of ordinary depth still reads.
  CHECK(FieldSet::from_json(json::parse(R"({"k:{\"name\":[[1]]}":{}})")).is_ok());
}

TEST_CASE("a deeply nested last-applied annotation is not walked", "[apiserver][limits][apply]") {
  const schema::Message* cm = schema::Registry::get().find_kind("", "v1", "ConfigMap");
  REQUIRE(cm != nullptr);
  // Another manager owns data.k; "kubectl" changes it: the conflict check
  // reads the annotation to see whether client-side apply set it.
  json live = json::parse(R"({"apiVersion":"v1","kind":"ConfigMap",
      "metadata":{"name":"cm","namespace":"w","managedFields":[{"manager":"other",
        "operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1",
        "fieldsV1":{"f:data":{"f:k":{}}}}]},"data":{"k":"v"}})");
  live["metadata"]["annotations"][kLastAppliedAnnotation] =
      R"({"apiVersion":"v1","kind":"ConfigMap","data":)" + nested_arrays(100000) + "}";
  json config = json::parse(R"({"apiVersion":"v1","kind":"ConfigMap",
      "metadata":{"name":"cm"},"data":{"k":"w"}})");
  ApplyRequest r;
  r.live = &live;
  r.config = &config;
  r.type = object_type(cm);
  r.writer = {"kubectl", "v1", "", "2024-01-01T00:00:00Z"};
  auto out = run_apply(r);
  REQUIRE(out.is_ok());
  REQUIRE(out->conflicts.size() == 1);
  CHECK(out->conflicts[0].path == ".data.k");
}

TEST_CASE("run_apply refuses a configuration nested past the limit", "[apiserver][limits][apply]") {
  json config = json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}})");
  config["data"] = json::parse(nested_arrays(5000));
  ApplyRequest r;
  r.config = &config;
  r.writer = {"t", "v1", "", "2024-01-01T00:00:00Z"};
  auto out = run_apply(r);
  REQUIRE_FALSE(out.is_ok());
  CHECK(out.status().code() == Code::kBadRequest);
}

}  // namespace
}  // namespace vkube::apiserver::apply
