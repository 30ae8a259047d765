// Generic metadata validation on every kind: finalizer names, owner
// references and the one-controller rule refused with 422 and kube's field
// paths, on create and on update, for built-in and custom resources.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/admin_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;
using testing::message;

struct Server : testing::AdminApiServer {
  Server() { make_namespace("t"); }
};

json config_map(json meta) {
  meta["name"] = "c";
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", meta}};
}

json owner(const std::string& name, const std::string& uid, bool controller) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"name", name},
          {"uid", uid},
          {"controller", controller}};
}

}  // namespace

TEST_CASE("bad finalizers and owner references are refused with 422", "[apiserver]") {
  Server s;
  const std::string cms = "/api/v1/namespaces/t/configmaps";
  auto fin = s.call("POST", cms, config_map({{"finalizers", {"bad finalizer!"}}}));
  CHECK(fin.status == 422);
  CHECK(message(fin) ==
        "ConfigMap \"c\" is invalid: metadata.finalizers: Invalid value: \"bad finalizer!\": name "
        "part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
        "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
  CHECK(json::parse(fin.body)["details"]["causes"][0]["field"] == "metadata.finalizers");

  auto uid =
      s.call("POST", cms, config_map({{"ownerReferences", json::array({owner("a", "", false)})}}));
  CHECK(uid.status == 422);
  CHECK(message(uid) ==
        "ConfigMap \"c\" is invalid: metadata.ownerReferences.uid: Invalid value: \"\": must not "
        "be empty");

  auto two = s.call("POST", cms,
                    config_map({{"ownerReferences",
                                 json::array({owner("a", "1", true), owner("b", "2", true)})}}));
  CHECK(two.status == 422);
  CHECK(message(two).find("metadata.ownerReferences: Invalid value: ") != std::string::npos);
  CHECK(message(two).find(": Only one reference can have Controller set to true. Found \"true\" "
                          "in references for ConfigMap/a and ConfigMap/b") != std::string::npos);

  // Nothing was stored; a good object is, with a warning for a bare finalizer name.
  CHECK(s.call("GET", cms + "/c", nullptr).status == 404);
  auto ok = s.call("POST", cms,
                   config_map({{"finalizers", {"example.com/keep", "keep"}},
                               {"ownerReferences", json::array({owner("a", "1", true)})}}));
  CHECK(ok.status == 201);
  bool warned = false;
  for (const auto& h : ok.headers)
    warned |=
        h.name == "Warning" && h.value.find(
                                   "metadata.finalizers: \\\"keep\\\": prefer a domain-qualified "
                                   "finalizer name including a path (/)") != std::string::npos;
  CHECK(warned);

  // An update is held to the same rules.
  auto upd = s.call("PATCH", cms + "/c",
                    {{"metadata", {{"finalizers", {"orphan", "foregroundDeletion"}}}}},
                    "application/merge-patch+json");
  CHECK(upd.status == 422);
  CHECK(message(upd).find("finalizer orphan and foregroundDeletion cannot be both set") !=
        std::string::npos);
}

TEST_CASE("custom resources get the same metadata validation", "[apiserver]") {
  Server s;
  REQUIRE(s.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                 testing::boxes_crd())
              .status == 201);
  json box = {{"apiVersion", "example.com/v1"},
              {"kind", "Box"},
              {"metadata", {{"name", "b"}, {"finalizers", {"no spaces allowed"}}}}};
  auto r = s.call("POST", "/apis/example.com/v1/namespaces/t/boxes", box);
  CHECK(r.status == 422);
  CHECK(message(r).find("metadata.finalizers: Invalid value: \"no spaces allowed\"") !=
        std::string::npos);
}

}  // namespace vkube::apiserver
