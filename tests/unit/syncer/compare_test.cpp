// When the syncer writes to the host at all: the comparison behind "a
// restart with nothing changed makes zero writes" and "a host object changed
// behind vkube's back is repaired".
#include <catch2/catch.hpp>

#include "vkube/syncer/compare.h"

using nlohmann::json;
using namespace vkube::syncer;

TEST_CASE("covers ignores what the host adds and sees what it changed", "[syncer]") {
  json want = {{"spec", {{"containers", {{{"name", "a"}, {"image", "nginx:1"}}}}}}};
  json have = {{"spec",
                {{"containers",
                  {{{"name", "a"},
                    {"image", "nginx:1"},
                    {"imagePullPolicy", "IfNotPresent"},
                    {"terminationMessagePath", "/dev/termination-log"}}}},
                 {"restartPolicy", "Always"}}}};
  CHECK(covers(have, want));
  have["spec"]["containers"][0]["image"] = "nginx:2";
  CHECK_FALSE(covers(have, want));
  // A container added or removed is a difference, not a default.
  have["spec"]["containers"][0]["image"] = "nginx:1";
  have["spec"]["containers"].push_back({{"name", "b"}});
  CHECK_FALSE(covers(have, want));
}

TEST_CASE("covers compares quantities by value and tolerates dropped empties", "[syncer]") {
  auto requests = [](json r) { return json{{"resources", {{"requests", std::move(r)}}}}; };
  CHECK(covers(requests({{"cpu", "500m"}}), requests({{"cpu", "0.5"}})));
  CHECK(covers(requests({{"memory", "1Gi"}}), requests({{"memory", "1024Mi"}})));
  CHECK_FALSE(covers(requests({{"cpu", "1"}}), requests({{"cpu", "0.5"}})));
  // Outside resource maps a string is a string: a version "1.10" is not "1.1".
  CHECK_FALSE(covers(json{{"data", {{"VERSION", "1.10"}}}}, json{{"data", {{"VERSION", "1.1"}}}}));
  CHECK_FALSE(covers(json{{"selector", {{"v", "1k"}}}}, json{{"selector", {{"v", "1000"}}}}));
  CHECK_FALSE(covers(json{{"image", "a"}}, json{{"image", "b"}}));
  CHECK(covers(json::object(), json{{"labels", json::object()}, {"x", nullptr}}));
  CHECK(covers(json{{"port", 80}}, json{{"port", 80.0}}));
}

TEST_CASE("metadata_patch: labels exact, annotations the syncer's only", "[syncer]") {
  json want = {
      {"metadata",
       {{"labels", {{"app", "web"}, {"vkube.io/tenant", "a"}}}, {"annotations", {{"note", "x"}}}}}};
  record_managed_annotations(want);
  json have = want;
  CHECK(metadata_patch(have, want).is_null());

  // The host's scheduler annotates the pod: not ours to remove.
  have["metadata"]["annotations"]["gpu.vkube.io/allocation"] = "0=1000";
  CHECK(metadata_patch(have, want).is_null());

  // Someone relabels the host pod behind vkube's back: repaired; a label
  // the host adds (a webhook's) is not the syncer's to remove.
  have["metadata"]["labels"]["app"] = "other";
  have["metadata"]["labels"]["sidecar.io/injected"] = "1";
  json p = metadata_patch(have, want);
  REQUIRE(p.is_object());
  CHECK(p["metadata"]["labels"]["app"] == "web");
  CHECK_FALSE(p["metadata"]["labels"].contains("sidecar.io/injected"));

  // The tenant drops a label it had: dropped on the host too.
  json fewer = {
      {"metadata", {{"labels", {{"vkube.io/tenant", "a"}}}, {"annotations", {{"note", "x"}}}}}};
  record_managed_annotations(fewer);
  CHECK(metadata_patch(want, fewer)["metadata"]["labels"]["app"].is_null());

  // The tenant removes its annotation: removed on the host, the host's kept.
  json want2 = {{"metadata", {{"labels", want["metadata"]["labels"]}}}};
  record_managed_annotations(want2);
  json p2 = metadata_patch(have, want2);
  CHECK(p2["metadata"]["annotations"]["note"].is_null());
  CHECK_FALSE(p2["metadata"]["annotations"].contains("gpu.vkube.io/allocation"));
}

TEST_CASE("replacement keeps the host's identity and its own annotations", "[syncer]") {
  json want = {{"metadata", {{"name", "c"}, {"annotations", {{"a", "1"}}}}},
               {"data", {{"k", "v2"}}}};
  record_managed_annotations(want);
  json have = {{"metadata",
                {{"name", "c"},
                 {"uid", "u1"},
                 {"resourceVersion", "7"},
                 {"annotations",
                  {{"a", "1"},
                   {"old", "x"},
                   {"host.io/note", "y"},
                   {std::string(kManagedAnnotations), "a,old"}}}}},
               {"data", {{"k", "v1"}}}};
  json body = replacement(have, want);
  CHECK(body["metadata"]["resourceVersion"] == "7");
  CHECK(body["metadata"]["uid"] == "u1");
  CHECK(body["metadata"]["annotations"]["host.io/note"] == "y");
  CHECK_FALSE(body["metadata"]["annotations"].contains("old"));
  CHECK(body["data"]["k"] == "v2");
}
