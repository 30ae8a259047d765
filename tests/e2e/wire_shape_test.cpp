// What real clients read as text: YAML bodies both ways (the Python client),
// discovery and Status bodies in kube's field order with a final newline and
// storageVersionHash (kubectl get --raw), the wording kubectl's own command
// tests match for a patch that does not decode, and /openapi/v2 with the
// parameters and descriptions `kubectl explain` reads.
#include "fixture.h"

namespace vkube::e2e {
namespace {

TEST_CASE("discovery read raw is in kube's field order with storageVersionHash", "[e2e][wire]") {
  Cluster c;
  Result r = c.kubectl({"get", "--raw", "/api/v1"});
  REQUIRE_THAT(r, Succeeded());
  CHECK_THAT(r.out, Catch::StartsWith(R"({"kind":"APIResourceList","apiVersion":"v1",)"
                                      R"("groupVersion":"v1","resources":[)"));
  CHECK_THAT(r.out, Catch::EndsWith("]}\n"));
  CHECK_THAT(r.out, Catch::Contains(R"("shortNames":["po"],"categories":["all"],)"
                                    R"("storageVersionHash":"xPOwRZ+Yhw8="})"));
  r = c.kubectl({"get", "--raw", "/apis/apps/v1"});
  CHECK_THAT(r.out, Catch::Contains(R"("kind":"Deployment","verbs":)"));
  CHECK_THAT(r.out, Catch::Contains(R"("storageVersionHash":"8aSe+NMegvE=")"));
  // kubectl's discovery, aggregated and legacy, still reads them.
  CHECK_THAT(c.kubectl({"api-resources"}), Succeeded());
}

TEST_CASE("YAML request and response bodies through the Python client", "[e2e][wire]") {
  Cluster c;
  Result r =
      c.run({kPython, std::string(VKUBE_SOURCE_DIR) + "/tests/e2e/python_wire.py"}, seconds(60));
  REQUIRE_THAT(r, Succeeded());
  CHECK_THAT(r.out, Catch::EndsWith("PASS\n"));
}

TEST_CASE("kubectl patch that does not decode fails as kubectl's command tests expect",
          "[e2e][wire]") {
  Cluster c;
  c.setup("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\n  labels:\n    a: b\n");
  CHECK_THAT(c.kubectl({"patch", "configmap", "p", "-p", R"({"metadata":{"labels":"invalid"}})"}),
             FailedWith("cannot restore map from string"));
  CHECK_THAT(c.kubectl({"patch", "configmap", "p", "--type", "merge", "-p",
                        R"({"metadata":{"labels":"invalid"}})"}),
             FailedWith("json: cannot unmarshal string into Go struct field ObjectMeta.metadata."
                        "labels of type map[string]string"));
  // Unchanged, and a patch that decodes still applies.
  CHECK_THAT(c.kubectl({"patch", "configmap", "p", "-p", R"({"metadata":{"labels":{"c":"d"}}})"}),
             Succeeded());
  CHECK(c.get_json({"configmap", "p"})["metadata"]["labels"] ==
        nlohmann::json{{"a", "b"}, {"c", "d"}});
}

TEST_CASE("kubectl explain reads list parameters and descriptions from /openapi/v2",
          "[e2e][wire]") {
  Cluster c;
  // The protobuf v2 document (kubectl asks for no other) with the shared parameters.
  Result r = c.kubectl({"explain", "pods.spec.containers", "--output=plaintext-openapiv2"});
  REQUIRE_THAT(r, Succeeded());
  CHECK_THAT(r.out, Catch::Contains("KIND:") && Catch::Contains("Pod"));
  auto doc = c.raw_json("/openapi/v2");
  const auto& list = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["get"];
  CHECK(list["description"] == "list or watch objects of kind Deployment");
  bool watch = false;
  for (const auto& p : list["parameters"]) {
    std::string ref = p.value("$ref", "");
    if (ref.starts_with("#/parameters/watch-"))
      watch = doc["parameters"][ref.substr(13)]["type"] == "boolean";
  }
  CHECK(watch);
  CHECK(doc["paths"].contains("/apis/apps/v1/watch/namespaces/{namespace}/deployments/{name}"));
}

}  // namespace
}  // namespace vkube::e2e
