// managedFields on every write and server-side apply (PATCH
// application/apply-patch+yaml), through the API server's whole chain over
// a real store.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/api_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

const char* kApply = "application/apply-patch+yaml";
const char* kKubectl = "kubectl/v1.32.3 (linux/amd64) kubernetes/0000000";

struct Server : testing::ApiServerOverStore {
  Server() {
    REQUIRE(call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"w"}})").status == 201);
  }

  http::Response call(const std::string& method, const std::string& target, std::string body = "",
                      std::string content_type = "application/json", std::string agent = kKubectl) {
    http::Request req = testing::request(method, target);
    req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    if (!agent.empty()) req.headers.push_back({"User-Agent", agent});
    if (!body.empty()) {
      req.body = std::move(body);
      req.headers.push_back({"Content-Type", content_type});
    }
    return api->handle(req);
  }
  json ok(const http::Response& r, int want = 200) {
    INFO(r.body);
    REQUIRE(r.status == want);
    return json::parse(r.body);
  }
  json apply(const std::string& path, const std::string& body, const std::string& manager,
             int want = 200, const std::string& extra = "") {
    return ok(call("PATCH", path + "?fieldManager=" + manager + extra, body, kApply), want);
  }
  json get(const std::string& path) { return ok(call("GET", path)); }
};

// manager/operation -> fieldsV1 of an object's managedFields.
std::map<std::string, json> owners(const json& obj) {
  std::map<std::string, json> out;
  for (const json& e : obj["metadata"].value("managedFields", json::array())) {
    std::string id = e["manager"].get<std::string>() + "/" + e["operation"].get<std::string>();
    if (e.contains("subresource")) id += "/" + e["subresource"].get<std::string>();
    out[id] = e["fieldsV1"];
  }
  return out;
}

const std::string kCms = "/api/v1/namespaces/w/configmaps";
const std::string kCm = "/api/v1/namespaces/w/configmaps/c";

TEST_CASE("writes record their managers in managedFields", "[apiserver][apply]") {
  Server s;
  json created = s.ok(s.call("POST", kCms, R"({"metadata":{"name":"c","labels":{"app":"x"}},
                                               "data":{"a":"1"}})"),
                      201);
  REQUIRE(created["metadata"]["managedFields"].size() == 1);
  const json& entry = created["metadata"]["managedFields"][0];
  CHECK(entry["manager"] == "kubectl");  // the User-Agent up to its first '/'
  CHECK(entry["operation"] == "Update");
  CHECK(entry["apiVersion"] == "v1");
  CHECK(entry["fieldsType"] == "FieldsV1");
  CHECK(entry["time"].is_string());
  CHECK(
      entry["fieldsV1"] ==
      json::parse(R"({"f:data":{".":{},"f:a":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}})"));

  SECTION("an update takes the fields it changes from their owners") {
    json cur = s.get(kCm);
    cur["data"]["a"] = "2";
    cur["data"]["b"] = "3";
    json updated = s.ok(s.call("PUT", kCm + "?fieldManager=editor", cur.dump()));
    auto o = owners(updated);
    // A member without members below it is {} in FieldsV1.
    CHECK(o["kubectl/Update"] ==
          json::parse(R"({"f:data":{},"f:metadata":{"f:labels":{".":{},"f:app":{}}}})"));
    CHECK(o["editor/Update"] == json::parse(R"({"f:data":{"f:a":{},"f:b":{}}})"));

    // A write that changes nothing is not made.
    json again = s.ok(s.call("PUT", kCm + "?fieldManager=editor", updated.dump()));
    CHECK(again["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]);
    CHECK(again["metadata"]["managedFields"] == updated["metadata"]["managedFields"]);
  }
  SECTION("a merge patch by another manager, and removal drops ownership") {
    json p = s.ok(s.call("PATCH", kCm + "?fieldManager=kubectl-label",
                         R"({"metadata":{"labels":{"app":null,"t":"1"}}})",
                         "application/merge-patch+json"));
    auto o = owners(p);
    CHECK(o["kubectl/Update"] ==
          json::parse(R"({"f:data":{".":{},"f:a":{}},"f:metadata":{"f:labels":{}}})"));
    CHECK(o["kubectl-label/Update"] == json::parse(R"({"f:metadata":{"f:labels":{"f:t":{}}}})"));
  }
  SECTION("clients may reset managedFields with one empty entry, not with an empty list") {
    json p = s.ok(s.call("PATCH", kCm, R"({"metadata":{"managedFields":[]}})",
                         "application/merge-patch+json"));
    CHECK(p["metadata"]["managedFields"].size() == 1);
    p = s.ok(s.call("PATCH", kCm,
                    R"([{"op":"replace","path":"/metadata/managedFields","value":[{}]}])",
                    "application/json-patch+json"));
    CHECK_FALSE(p["metadata"].contains("managedFields"));
    // ... or replace them with valid entries (kubectl's client-side to server-side migration).
    json mine = json::parse(R"([{"manager":"kubectl","operation":"Apply","apiVersion":"v1",
        "time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}])");
    p = s.ok(s.call(
        "PATCH", kCm,
        json::array({{{"op", "add"}, {"path", "/metadata/managedFields"}, {"value", mine}}}).dump(),
        "application/json-patch+json"));
    CHECK(p["metadata"]["managedFields"] == mine);
  }
  SECTION("status writes are recorded for their subresource") {
    s.ok(s.call("POST", "/apis/apps/v1/namespaces/w/deployments", R"({"metadata":{"name":"d"},
        "spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},
        "spec":{"containers":[{"name":"c","image":"i"}]}}}})"),
         201);
    json st =
        s.ok(s.call("PATCH", "/apis/apps/v1/namespaces/w/deployments/d/status?fieldManager=ctl",
                    R"({"status":{"replicas":2}})", "application/merge-patch+json"));
    CHECK(owners(st)["ctl/Update/status"] == json::parse(R"({"f:status":{"f:replicas":{}}})"));
    json sc = s.ok(s.call("PATCH", "/apis/apps/v1/namespaces/w/deployments/d/scale",
                          R"({"spec":{"replicas":4}})", "application/merge-patch+json"));
    CHECK(sc["spec"]["replicas"] == 4);
    json d = s.get("/apis/apps/v1/namespaces/w/deployments/d");
    CHECK(owners(d)["kubectl/Update/scale"] == json::parse(R"({"f:spec":{"f:replicas":{}}})"));
    CHECK_FALSE(owners(d)["kubectl/Update"]["f:spec"].contains("f:replicas"));
  }
}

TEST_CASE("fieldManager and force are validated as kube validates them", "[apiserver][apply]") {
  Server s;
  auto long_name = s.call("POST", kCms + "?fieldManager=" + std::string(129, 'm'),
                          R"({"metadata":{"name":"c"}})");
  CHECK(long_name.status == 422);
  json body = json::parse(long_name.body);
  CHECK(body["message"] ==
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than "
        "128 bytes");
  CHECK(body["details"]["kind"] == "CreateOptions");
  CHECK(body["details"]["group"] == "meta.k8s.io");

  s.ok(s.call("POST", kCms, R"({"metadata":{"name":"c"}})"), 201);
  auto no_manager = s.call("PATCH", kCm, "data: {a: b}", kApply);
  CHECK(no_manager.status == 422);
  CHECK(json::parse(no_manager.body)["message"] ==
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for "
        "apply patch");
  auto force =
      s.call("PATCH", kCm + "?force=true", R"({"data":{"a":"b"}})", "application/merge-patch+json");
  CHECK(force.status == 422);
  CHECK_THAT(force.body,
             Catch::Contains("force: Forbidden: may not be specified for non-apply patch"));
  // The manager from a long User-Agent is cut to 128 bytes.
  json p = s.ok(s.call("PATCH", kCm, R"({"data":{"x":"y"}})", "application/merge-patch+json",
                       std::string(200, 'u') + "/1.0"));
  bool found = false;
  for (const json& e : p["metadata"]["managedFields"])
    found = found || e["manager"] == std::string(128, 'u');
  CHECK(found);
}

TEST_CASE("server-side apply creates, merges, conflicts, forces and prunes", "[apiserver][apply]") {
  Server s;
  const std::string v1 = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  labels: {app: web}
data:
  a: "1"
  b: "2"
)";
  json created = s.apply(kCm, v1, "mgr", 201);
  CHECK(created["data"] == json::parse(R"({"a":"1","b":"2"})"));
  CHECK(created["metadata"]["uid"].is_string());
  auto o = owners(created);
  REQUIRE(o.size() == 1);
  CHECK(o["mgr/Apply"] ==
        json::parse(R"({"f:data":{"f:a":{},"f:b":{}},"f:metadata":{"f:labels":{"f:app":{}}}})"));

  // Applying the same again changes nothing, not even the resourceVersion.
  json again = s.apply(kCm, v1, "mgr");
  CHECK(again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]);

  // Another applier agreeing on a value shares it; changing one conflicts.
  json shared = s.apply(
      kCm, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}})",
      "other");
  CHECK(owners(shared)["other/Apply"] == json::parse(R"({"f:data":{"f:a":{}}})"));
  auto refused = s.call("PATCH", kCm + "?fieldManager=other",
                        "apiVersion: v1\nkind: ConfigMap\ndata: {a: '9', b: '9'}\n", kApply);
  REQUIRE(refused.status == 409);
  json status = json::parse(refused.body);
  CHECK(status["reason"] == "Conflict");
  CHECK(status["message"] ==
        "Apply failed with 2 conflicts: conflicts with \"mgr\":\n- .data.a\n- .data.b");
  CHECK(status["details"]["causes"] == json::parse(R"([
      {"reason":"FieldManagerConflict","message":"conflict with \"mgr\"","field":".data.a"},
      {"reason":"FieldManagerConflict","message":"conflict with \"mgr\"","field":".data.b"}])"));
  CHECK(s.get(kCm)["data"]["a"] == "1");

  SECTION("dryRun runs the apply and stores nothing") {
    json before = s.get(kCm);
    json dry = s.apply(kCm, "apiVersion: v1\nkind: ConfigMap\ndata: {a: '9'}\n", "other", 200,
                       "&force=true&dryRun=All");
    CHECK(dry["data"]["a"] == "9");
    json live = s.get(kCm);
    CHECK(live["data"]["a"] == "1");
    CHECK(live["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]);
  }
  SECTION("force takes the fields over") {
    json forced = s.apply(kCm, "apiVersion: v1\nkind: ConfigMap\ndata: {a: '9'}\n", "other", 200,
                          "&force=true");
    CHECK(forced["data"]["a"] == "9");
    auto fo = owners(forced);
    CHECK(fo["other/Apply"] == json::parse(R"({"f:data":{"f:a":{}}})"));
    CHECK(fo["mgr/Apply"] ==
          json::parse(R"({"f:data":{"f:b":{}},"f:metadata":{"f:labels":{"f:app":{}}}})"));
  }
  SECTION("fields the applier drops go unless someone else owns them") {
    json pruned =
        s.apply(kCm, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {}\n", "mgr");
    CHECK(pruned["data"] == json::parse(R"({"a":"1"})"));  // "other" still owns a
    CHECK_FALSE(pruned["metadata"].contains("labels"));
  }
  SECTION("an Update owner is named with its apiVersion") {
    s.ok(s.call("PATCH", kCm + "?fieldManager=editor", R"({"data":{"e":"1"}})",
                "application/merge-patch+json"));
    auto r = s.call("PATCH", kCm + "?fieldManager=mgr",
                    "apiVersion: v1\nkind: ConfigMap\ndata: {e: '2'}\n", kApply);
    REQUIRE(r.status == 409);
    CHECK(json::parse(r.body)["message"] ==
          "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.e");
  }
}

TEST_CASE("apply checks what it is given", "[apiserver][apply]") {
  Server s;
  auto wrong_kind =
      s.call("PATCH", kCm + "?fieldManager=m", "apiVersion: v1\nkind: Secret\n", kApply);
  CHECK(wrong_kind.status == 400);
  CHECK(json::parse(wrong_kind.body)["message"] == "invalid object type: /v1, Kind=Secret");
  auto managed =
      s.call("PATCH", kCm + "?fieldManager=m",
             "apiVersion: v1\nkind: ConfigMap\nmetadata: {managedFields: [{}]}\n", kApply);
  CHECK(managed.status == 400);
  CHECK(json::parse(managed.body)["message"] == "metadata.managedFields must be nil");
  auto yaml = s.call("PATCH", kCm + "?fieldManager=m", "apiVersion: v1\nkind: [", kApply);
  CHECK(yaml.status == 400);
  auto strict = s.call("PATCH", kCm + "?fieldManager=m&fieldValidation=Strict",
                       "apiVersion: v1\nkind: ConfigMap\ndta: {}\n", kApply);
  CHECK(strict.status == 400);
  CHECK_THAT(strict.body, Catch::Contains("unknown field \\\"dta\\\""));
  auto typed = s.call("PATCH", "/apis/apps/v1/namespaces/w/deployments/d?fieldManager=m",
                      "apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: two}\n", kApply);
  CHECK(typed.status == 500);
  CHECK(json::parse(typed.body)["message"] ==
        "failed to create typed patch object (w/d; apps/v1, Kind=Deployment): .spec.replicas: "
        "expected numeric (int or float), got string");
  CHECK(s.call("GET", kCm).status == 404);
}

TEST_CASE("apply of a Deployment: defaults, keyed lists and reset fields", "[apiserver][apply]") {
  Server s;
  const std::string path = "/apis/apps/v1/namespaces/w/deployments/web";
  const std::string v1 = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1
        ports: [{containerPort: 80}]
      - name: side
        image: busybox
)";
  json d = s.apply(path, v1, "kubectl", 201);
  CHECK(d["spec"]["strategy"]["type"] == "RollingUpdate");  // defaulted, owned by nobody
  CHECK(d["metadata"]["generation"] == 1);
  auto o = owners(d);
  CHECK(o["kubectl/Apply"]["f:spec"]["f:template"]["f:spec"]["f:containers"].contains(
      R"(k:{"name":"side"})"));
  CHECK_FALSE(o["kubectl/Apply"]["f:spec"].contains("f:strategy"));

  // Another manager scales; the applier then drops replicas and the sidecar.
  s.ok(s.call("PATCH", path + "/scale?fieldManager=hpa", R"({"spec":{"replicas":5}})",
              "application/merge-patch+json"));
  std::string v2 = v1;
  v2.erase(v2.find("  replicas: 3\n"), 14);
  v2.erase(v2.find("      - name: side"));
  json d2 = s.apply(path, v2, "kubectl");
  CHECK(d2["spec"]["replicas"] == 5);  // hpa owns it now
  REQUIRE(d2["spec"]["template"]["spec"]["containers"].size() == 1);
  CHECK(d2["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] == "TCP");
  CHECK(d2["metadata"]["generation"] == 3);
}

}  // namespace
}  // namespace vkube::apiserver
