// What clients parse as text: Status, discovery and Table bodies in the field
// order of kube's Go types with a trailing newline, storageVersionHash,
// YAML bodies both ways, the wording of patches that do not decode, and the
// list parameters of /openapi/v2.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "apiserver/yaml_encode.h"
#include "support/api_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

struct Server : testing::ApiServerOverStore {
  Server() {
    REQUIRE(call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"w"}})").status == 201);
  }

  http::Response call(const std::string& method, const std::string& target, std::string body = "",
                      std::string content_type = "application/json", std::string accept = "") {
    http::Request req = testing::request(method, target);
    req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    if (!body.empty()) {
      req.body = std::move(body);
      req.headers.push_back({"Content-Type", content_type});
    }
    if (!accept.empty()) req.headers.push_back({"Accept", accept});
    return api->handle(req);
  }
  http::Response get(const std::string& target, const std::string& accept) {
    return call("GET", target, "", "", accept);
  }
};

std::string header(const http::Response& r, std::string_view name) {
  for (const auto& h : r.headers)
    if (h.name == name) return h.value;
  return {};
}

const std::string kCms = "/api/v1/namespaces/w/configmaps";

TEST_CASE("a Status body is written in kube's field order with a final newline",
          "[apiserver][wire]") {
  Server s;
  auto r = s.get(kCms + "/nope", "");
  CHECK(r.status == 404);
  CHECK(r.body == R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                  R"("message":"configmaps \"nope\" not found","reason":"NotFound",)"
                  R"("details":{"name":"nope","kind":"configmaps"},"code":404})"
                  "\n");
}

TEST_CASE("legacy discovery is in kube's field order and carries storageVersionHash",
          "[apiserver][wire]") {
  Server s;
  auto r = s.get("/api/v1", "application/json");
  REQUIRE(r.status == 200);
  CHECK(r.body.starts_with(
      R"({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[)"));
  CHECK(r.body.ends_with("]}\n"));
  // kube's hash of "/v1/Pod"; subresources have none.
  CHECK(r.body.find(R"({"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod",)"
                    R"("verbs":["create","delete","deletecollection","get","list","patch",)"
                    R"("update","watch"],"shortNames":["po"],"categories":["all"],)"
                    R"("storageVersionHash":"xPOwRZ+Yhw8="})") != std::string::npos);
  CHECK(r.body.find(R"({"name":"pods/status","singularName":"","namespaced":true,)"
                    R"("kind":"Pod","verbs":["get","patch","update"]})") != std::string::npos);

  // autoscaling/v1 and v2 share storage, kept in v2: one hash for both.
  const std::string v2_hash = R"("storageVersionHash":"qwQve8ut294=")";
  CHECK(s.get("/apis/autoscaling/v1", "").body.find(v2_hash) != std::string::npos);
  CHECK(s.get("/apis/autoscaling/v2", "").body.find(v2_hash) != std::string::npos);
  // Never stored: no hash.
  CHECK(s.get("/apis/authorization.k8s.io/v1", "").body.find("storageVersionHash") ==
        std::string::npos);

  CHECK(s.get("/api", "").body ==
        R"({"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":)"
        R"([{"clientCIDR":"0.0.0.0/0","serverAddress":""}]})"
        "\n");
  auto apps = s.get("/apis/apps", "");
  CHECK(apps.body == R"({"kind":"APIGroup","apiVersion":"v1","name":"apps","versions":)"
                     R"([{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":)"
                     R"({"groupVersion":"apps/v1","version":"v1"}})"
                     "\n");
  CHECK(s.get("/apis", "")
            .body.starts_with(R"({"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":)"));
}

TEST_CASE("aggregated discovery is in kube's field order", "[apiserver][wire]") {
  Server s;
  auto r = s.get("/api", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  REQUIRE(r.status == 200);
  CHECK(r.body.starts_with(
      R"({"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},)"
      R"("items":[{"metadata":{"name":"","creationTimestamp":null},"versions":[{"version":"v1",)"
      R"("resources":[{"resource":)"));
  CHECK(r.body.find(R"({"resource":"pods","responseKind":{"group":"","version":"v1","kind":"Pod"},)"
                    R"("scope":"Namespaced","singularResource":"pod","verbs":[)") !=
        std::string::npos);
  CHECK(r.body.ends_with(R"("freshness":"Current"}]}]})"
                         "\n"));
}

TEST_CASE("a Table is in kube's field order", "[apiserver][wire]") {
  Server s;
  REQUIRE(s.call("POST", kCms, R"({"metadata":{"name":"a"},"data":{"k":"v"}})").status == 201);
  auto r = s.get(kCms, "application/json;as=Table;v=v1;g=meta.k8s.io");
  REQUIRE(r.status == 200);
  CHECK(r.body.starts_with(
      R"({"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":")"));
  CHECK(r.body.find(R"(,"columnDefinitions":[{"name":"Name","type":"string","format":"name",)"
                    R"("description":)") != std::string::npos);
  CHECK(r.body.find(R"(,"rows":[{"cells":["a",1,)") != std::string::npos);
  CHECK(r.body.find(R"("object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",)"
                    R"("metadata":{"name":"a","namespace":"w","uid":")") != std::string::npos);
  CHECK(r.body.ends_with("}]}\n"));
}

TEST_CASE("YAML is written as sigs.k8s.io/yaml writes it", "[apiserver][wire][yaml]") {
  json v = json::parse(R"({"a":"true","b":"123","c":"","d":"x: y","e":"multi\nline\n",
    "f":[{"g":1},{"h":[1,2]}],"i":{},"j":1.5,"k":"- x","l":"2024-01-02T03:04:05Z",
    "m":"no","n":"plain text","o":"tab\there","p":"end\nnone","q":[[1,2],[]],"r":1e21,
    "s":null,"t":false,"u":"0x1F","v":"1_000","w":"#c","x":"a #b"})");
  CHECK(json_to_yaml(v) ==
        "a: \"true\"\n"
        "b: \"123\"\n"
        "c: \"\"\n"
        "d: 'x: y'\n"
        "e: |\n"
        "  multi\n"
        "  line\n"
        "f:\n"
        "- g: 1\n"
        "- h:\n"
        "  - 1\n"
        "  - 2\n"
        "i: {}\n"
        "j: 1.5\n"
        "k: '- x'\n"
        "l: \"2024-01-02T03:04:05Z\"\n"
        "m: \"no\"\n"
        "\"n\": plain text\n"  // "n" reads as a boolean in YAML 1.1
        "o: \"tab\\there\"\n"
        "p: |-\n"
        "  end\n"
        "  none\n"
        "q:\n"
        "- - 1\n"
        "  - 2\n"
        "- []\n"
        "r: 1e+21\n"
        "s: null\n"
        "t: false\n"
        "u: \"0x1F\"\n"
        "v: \"1_000\"\n"
        "w: '#c'\n"
        "x: 'a #b'\n");
  // go-yaml's key order: other characters before letters, digit runs as numbers.
  CHECK(json_to_yaml(json::parse(R"({"a10":1,"a9":1,"B":1,"_x":1})")) ==
        "_x: 1\nB: 1\na9: 1\na10: 1\n");
  // Past column 80 a space becomes a line break, continued 2 columns in.
  std::string words;
  for (int i = 0; i < 20; ++i) words += "word ";
  words += "end";
  CHECK(json_to_yaml(json{{"message", words}}) ==
        "message: word word word word word word word word word word word word word word word\n"
        "  word word word word word end\n");
}

TEST_CASE("Accept: application/yaml answers objects, lists and errors in YAML; watch is 406",
          "[apiserver][wire][yaml]") {
  Server s;
  auto created = s.call("POST", kCms, "metadata:\n  name: yml\ndata:\n  k: v\n", "application/yaml",
                        "application/yaml");
  REQUIRE(created.status == 201);
  CHECK(header(created, "Content-Type") == "application/yaml");
  CHECK(
      created.body.starts_with("apiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n"
                               "  creationTimestamp: \""));

  auto got = s.get(kCms + "/yml", "application/yaml");
  CHECK(header(got, "Content-Type") == "application/yaml");
  CHECK(got.body.find("\n  name: yml\n  namespace: w\n") != std::string::npos);

  // A YAML update.
  auto obj = json::parse(s.get(kCms + "/yml", "").body);
  auto put =
      s.call("PUT", kCms + "/yml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\n  resourceVersion: \"" +
                 obj["metadata"]["resourceVersion"].get<std::string>() + "\"\ndata:\n  k: w\n",
             "application/yaml");
  CHECK(put.status == 200);
  CHECK(json::parse(put.body)["data"]["k"] == "w");

  auto list = s.get(kCms, "application/yaml");
  CHECK(list.body.starts_with("apiVersion: v1\nitems:\n- apiVersion: v1\n"));

  CHECK(s.get(kCms + "/nope", "application/yaml").body ==
        "apiVersion: v1\ncode: 404\ndetails:\n  kind: configmaps\n  name: nope\nkind: Status\n"
        "message: configmaps \"nope\" not found\nmetadata: {}\nreason: NotFound\n"
        "status: Failure\n");

  auto watch = s.get(kCms + "?watch=true", "application/yaml");
  CHECK(watch.status == 406);
  CHECK(watch.body.starts_with("apiVersion: v1\ncode: 406\n"));
  CHECK(watch.body.find("application/vnd.kubernetes.protobuf;stream=watch") != std::string::npos);
  // A PATCH has its own media types.
  auto patch = s.call("PATCH", kCms + "/yml", "data: {}\n", "application/yaml");
  CHECK(patch.status == 415);
  CHECK(json::parse(patch.body)["message"] ==
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json, application/apply-patch+yaml");
}

TEST_CASE("a patch whose result does not decode is refused in kube's words",
          "[apiserver][wire][patch]") {
  Server s;
  REQUIRE(s.call("POST", kCms, R"({"metadata":{"name":"p","labels":{"a":"b"}}})").status == 201);
  auto smp = s.call("PATCH", kCms + "/p", R"({"metadata":{"labels":"invalid"}})",
                    "application/strategic-merge-patch+json");
  CHECK(smp.status == 422);
  auto status = json::parse(smp.body);
  CHECK(status["message"] ==
        R"( "" is invalid: patch: Invalid value: "map[metadata:map[labels:invalid]]": )"
        "cannot restore map from string");
  CHECK(status["details"] ==
        json::parse(R"({"causes":[{"reason":"FieldValueInvalid","field":"patch",)"
                    R"("message":"Invalid value: \"map[metadata:map[labels:invalid]]\": )"
                    R"(cannot restore map from string"}]})"));

  auto merge = s.call("PATCH", kCms + "/p", R"({"metadata":{"labels":"invalid"}})",
                      "application/merge-patch+json");
  CHECK(merge.status == 422);
  CHECK(json::parse(merge.body)["message"].get<std::string>().ends_with(
      "\": json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type "
      "map[string]string"));

  auto jp = s.call("PATCH", kCms + "/p", R"([{"op":"add","path":"/data","value":[1]}])",
                   "application/json-patch+json");
  CHECK(jp.status == 422);
  CHECK(json::parse(jp.body)["message"].get<std::string>().ends_with(
      "json: cannot unmarshal array into Go struct field ConfigMap.data of type "
      "map[string]string"));

  auto num =
      s.call("PATCH", kCms + "/p", R"({"data":{"k":5}})", "application/strategic-merge-patch+json");
  CHECK(json::parse(num.body)["message"].get<std::string>().ends_with(
      ": cannot convert int64 to string"));
  // Patches of the wrong shape: 400 in the words of kube's decoders.
  auto message = [&](const char* body, const char* type) {
    auto r = s.call("PATCH", kCms + "/p", body, type);
    CHECK(r.status == 400);
    return json::parse(r.body)["message"].get<std::string>();
  };
  CHECK(message("[1]", "application/strategic-merge-patch+json") ==
        "json: cannot unmarshal array into Go value of type map[string]interface {}");
  CHECK(message(R"("x")", "application/merge-patch+json") == "Invalid JSON Patch");
  CHECK(message(R"({"metadata":{"$patch":"nope","name":"p"}})",
                "application/strategic-merge-patch+json") ==
        "unknown patch type: nope in map: map[$patch:nope name:p]");
  // The object is unchanged.
  CHECK(json::parse(s.get(kCms + "/p", "").body)["metadata"]["labels"] == json{{"a", "b"}});
}

TEST_CASE("/openapi/v2 lists and watches take kube's parameters", "[apiserver][wire][openapi]") {
  Server s;
  auto r = s.get("/openapi/v2", "application/json");
  REQUIRE(r.status == 200);
  json doc = json::parse(r.body);
  const json& list = doc["paths"]["/api/v1/namespaces/{namespace}/pods"]["get"];
  CHECK(list["description"] == "list or watch objects of kind Pod");
  std::vector<std::string> names;
  for (const json& p : list["parameters"]) {
    REQUIRE(p.contains("$ref"));
    std::string ref = p["$ref"];
    REQUIRE(ref.starts_with("#/parameters/"));
    const json& shared = doc["parameters"][ref.substr(13)];
    names.push_back(shared["name"]);
    CHECK(shared["in"] == (names.back() == "namespace" ? "path" : "query"));
  }
  for (const char* want : {"watch", "labelSelector", "fieldSelector", "limit", "continue",
                           "resourceVersion", "resourceVersionMatch", "timeoutSeconds",
                           "allowWatchBookmarks", "sendInitialEvents", "pretty"})
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  CHECK(doc["paths"].contains("/api/v1/watch/namespaces/{namespace}/pods"));
  CHECK(doc["paths"]["/api/v1/pods"]["get"]["operationId"] == "listCoreV1PodForAllNamespaces");
  CHECK(doc["paths"]["/api/v1/namespaces/{namespace}/pods"]["delete"]["x-kubernetes-action"] ==
        "deletecollection");

  auto v3 = json::parse(s.get("/openapi/v3/api/v1", "").body);
  bool limit = false;
  for (const json& p : v3["paths"]["/api/v1/namespaces/{namespace}/pods"]["get"]["parameters"])
    limit = limit || p["name"] == "limit";
  CHECK(limit);
}

}  // namespace
}  // namespace vkube::apiserver
