// LISTs as Tables (what `kubectl get` asks for): the rows a LIST writes from
// stored text are the rows of the decoded objects, in kube's field order,
// with every includeObject, with selectors and with pages.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "apiserver/errors.h"
#include "apiserver/list_common.h"
#include "apiserver/table.h"
#include "kinds.h"
#include "support/api_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

constexpr const char* kTableAccept =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
constexpr const char* kPods = "/api/v1/namespaces/w/pods";

struct Server : testing::ApiServerOverStore {
  Server() {
    REQUIRE(call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"w"}})").status == 201);
  }
  http::Response call(const std::string& method, const std::string& target, std::string body = "",
                      const std::string& accept = "") {
    return testing::admin_call(*api, method, target, std::move(body), accept);
  }
  void create_pods() {
    // Labels, annotations, owners, an escaped string and a quantity: what
    // the stored text holds beyond the printer's fields.
    for (int i = 0; i < 3; ++i) {
      json pod = json::parse(R"({"metadata":{"labels":{"app":"web","tier":"a-b"},
        "annotations":{"note":"line\nbreak é","q":"a\"b\\"},
        "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u-1"}]},
        "spec":{"containers":[{"name":"app","image":"nginx",
          "resources":{"limits":{"cpu":"500m"}}},{"name":"side","image":"busybox"}],
          "initContainers":[{"name":"proxy","image":"envoy","restartPolicy":"Always"}],
          "readinessGates":[{"conditionType":"example.com/ready"}],
          "nodeName":"node-1"}})");
      pod["metadata"]["name"] = "pod-" + std::to_string(i);
      REQUIRE(call("POST", kPods, pod.dump()).status == 201);
    }
  }
};

const Kind& pods_kind() {
  for (const Kind& k : builtin::builtin_kinds())
    if (k.resource.gv.group.empty() && k.resource.plural == "pods") return k;
  FAIL("no pods kind");
  throw;
}

// The Table the decoded objects make, as json_response writes it: what
// LISTs as Tables answered before rows were written from stored text.
std::string decoded_table(Server& s, const std::string& query, IncludeObject include) {
  auto listed = s.call("GET", std::string(kPods) + query);
  REQUIRE(listed.status == 200);
  json list = json::parse(listed.body);
  std::vector<json> items;
  for (json& item : list["items"]) items.push_back(std::move(item));
  return encode_json(make_table(pods_kind(), items, include, list["metadata"]));
}

TEST_CASE("a LIST as a Table is what the decoded objects give", "[apiserver][table]") {
  Server s;
  s.create_pods();
  for (auto [param, include] : {std::pair{"", IncludeObject::kMetadata},
                                std::pair{"?includeObject=None", IncludeObject::kNone},
                                std::pair{"?includeObject=Object", IncludeObject::kObject}}) {
    CAPTURE(param);
    auto r = s.call("GET", std::string(kPods) + param, "", kTableAccept);
    REQUIRE(r.status == 200);
    CHECK(r.body == decoded_table(s, "", include));
    json table = json::parse(r.body);
    REQUIRE(table["rows"].size() == 3);
    const json& row = table["rows"][0];
    CHECK(row["cells"][0] == "pod-0");
    CHECK(row["cells"][1] == "0/3");  // READY of two containers and a sidecar
    if (include == IncludeObject::kNone) CHECK_FALSE(row.contains("object"));
    if (include != IncludeObject::kNone) {
      const json& meta = row["object"]["metadata"];
      CHECK(meta["annotations"]["note"] == "line\nbreak é");
      CHECK(meta["labels"]["tier"] == "a-b");
      CHECK(meta["annotations"]["q"] == "a\"b\\");
      CHECK(meta["resourceVersion"].is_string());
      CHECK(meta.contains("managedFields"));
    }
    if (include == IncludeObject::kObject) {
      CHECK(row["object"]["kind"] == "Pod");
      CHECK(row["object"]["apiVersion"] == "v1");
      CHECK(row["object"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "500m");
      CHECK(
          r.body.find(R"("object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"pod-0",)") !=
          std::string::npos);
    }
  }
}

TEST_CASE("a Table with a selector or a page has the same rows", "[apiserver][table]") {
  Server s;
  s.create_pods();
  auto all = s.call("GET", kPods, "", kTableAccept);
  // A label selector decodes every object to match it; its rows must not differ.
  auto selected = s.call("GET", std::string(kPods) + "?labelSelector=app%3Dweb", "", kTableAccept);
  REQUIRE(all.status == 200);
  REQUIRE(selected.status == 200);
  CHECK(selected.body == all.body);

  auto page = s.call("GET", std::string(kPods) + "?limit=2", "", kTableAccept);
  REQUIRE(page.status == 200);
  json first = json::parse(page.body);
  REQUIRE(first["rows"].size() == 2);
  REQUIRE(first["metadata"].contains("continue"));
  std::string token = first["metadata"]["continue"];
  auto rest = s.call("GET", std::string(kPods) + "?limit=2&continue=" + token, "", kTableAccept);
  REQUIRE(rest.status == 200);
  json second = json::parse(rest.body);
  REQUIRE(second["rows"].size() == 1);
  CHECK(second["rows"][0]["cells"][0] == "pod-2");
  CHECK_FALSE(second["metadata"].contains("continue"));
  CHECK(second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]);
}

TEST_CASE("an empty LIST as a Table has no rows", "[apiserver][table]") {
  Server s;
  auto r = s.call("GET", kPods, "", kTableAccept);
  REQUIRE(r.status == 200);
  json table = json::parse(r.body);
  CHECK(table["kind"] == "Table");
  CHECK(table["rows"] == json::array());
  CHECK(table["columnDefinitions"][0]["name"] == "Name");
  CHECK(r.body.ends_with("\"rows\":[]}\n"));
}

// A JSON LIST writes each stored object with its resourceVersion put into
// its metadata without decoding it: strings holding quotes, backslashes or
// the word "metadata" must not mislead the scan.
TEST_CASE("a JSON LIST writes resourceVersion into objects with odd strings", "[apiserver][list]") {
  Server s;
  const std::string cms = "/api/v1/namespaces/w/configmaps";
  json cm = {{"metadata", {{"name", "odd"}}},
             {"data",
              {{"a", "ends with a backslash \\"},
               {"b", "quote \" then \"metadata\":{"},
               {"c", "\\\""},
               {"metadata", "{\"x\":1}"}}}};
  REQUIRE(s.call("POST", cms, cm.dump()).status == 201);
  auto r = s.call("GET", cms);
  REQUIRE(r.status == 200);
  json list = json::parse(r.body);
  REQUIRE(list["items"].size() == 1);
  const json& item = list["items"][0];
  CHECK(item["data"] == cm["data"]);
  CHECK(item["metadata"]["name"] == "odd");
  REQUIRE(item["metadata"]["resourceVersion"].is_string());
  CHECK(std::stoll(item["metadata"]["resourceVersion"].get<std::string>()) > 0);
  CHECK(splice_resource_version(R"({"a":"\\","metadata":{}})", 7) ==
        R"({"a":"\\","metadata":{"resourceVersion":"7"}})");
  CHECK(splice_resource_version(R"({"a":"\"metadata\":{","metadata":{"n":1}})", 8) ==
        R"({"a":"\"metadata\":{","metadata":{"resourceVersion":"8","n":1}})");
  CHECK_FALSE(splice_resource_version(R"({"a":{"metadata":{}}})", 9).has_value());
}

}  // namespace
}  // namespace vkube::apiserver
