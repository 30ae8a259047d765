// The garbage collector and the namespace controller over a real API server:
// ownerReferences with Background, Foreground and Orphan deletes, and a
// namespace's contents going with it.
#include <catch2/catch.hpp>

#include "support/control_plane.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;
using testing::ControlPlane;

json config_map(const std::string& name, const json& owners = nullptr) {
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", name}, {"namespace", "w"}}},
             {"data", {{"k", "v"}}}};
  if (!owners.is_null()) cm["metadata"]["ownerReferences"] = owners;
  return cm;
}

json owner_ref(const json& owner, bool block = false) {
  return {{"apiVersion", owner["apiVersion"]}, {"kind", owner["kind"]},
          {"name", owner["metadata"]["name"]}, {"uid", owner["metadata"]["uid"]},
          {"blockOwnerDeletion", block}};
}

const std::string kCms = "/api/v1/namespaces/w/configmaps";

int status_of(ControlPlane& cp, const std::string& name) {
  return cp.call("GET", kCms + "/" + name).code;
}

TEST_CASE("deleting an owner deletes its dependents in the background", "[controllers][gc]") {
  ControlPlane cp({"garbage-collector"});
  json owner = cp.create(kCms, config_map("owner"));
  cp.create(kCms, config_map("child", json::array({owner_ref(owner)})));
  json grandchild_owner = cp.get(kCms + "/child");
  cp.create(kCms, config_map("grandchild", json::array({owner_ref(grandchild_owner)})));
  REQUIRE(cp.call("DELETE", kCms + "/owner").code == 200);
  CHECK(ControlPlane::eventually([&] { return status_of(cp, "child") == 404; }));
  CHECK(ControlPlane::eventually([&] { return status_of(cp, "grandchild") == 404; }));
}

TEST_CASE("a dependent with another live owner only loses the reference", "[controllers][gc]") {
  ControlPlane cp({"garbage-collector"});
  json a = cp.create(kCms, config_map("a"));
  json b = cp.create(kCms, config_map("b"));
  cp.create(kCms, config_map("shared", json::array({owner_ref(a), owner_ref(b)})));
  REQUIRE(cp.call("DELETE", kCms + "/a").code == 200);
  CHECK(ControlPlane::eventually([&] {
    json s = cp.get(kCms + "/shared");
    return s["metadata"]["ownerReferences"].size() == 1;
  }));
  CHECK(cp.get(kCms + "/shared")["metadata"]["ownerReferences"][0]["name"] == "b");
}

TEST_CASE("an orphan delete keeps dependents and strips their references", "[controllers][gc]") {
  ControlPlane cp({"garbage-collector"});
  json owner = cp.create(kCms, config_map("owner"));
  cp.create(kCms, config_map("child", json::array({owner_ref(owner)})));
  auto del = cp.call("DELETE", kCms + "/owner", {{"propagationPolicy", "Orphan"}});
  REQUIRE(del.code == 200);
  CHECK(ControlPlane::eventually([&] { return status_of(cp, "owner") == 404; }));
  json child = cp.get(kCms + "/child");
  CHECK_FALSE(child["metadata"].contains("ownerReferences"));
}

TEST_CASE("a foreground delete removes blocking dependents before the owner",
          "[controllers][gc]") {
  ControlPlane cp({"garbage-collector"});
  json owner = cp.create(kCms, config_map("owner"));
  // A finalizer holds the dependent: the owner must wait for it.
  json child = config_map("child", json::array({owner_ref(owner, true)}));
  child["metadata"]["finalizers"] = {"example.com/hold"};
  cp.create(kCms, child);
  auto del = cp.call("DELETE", kCms + "/owner", {{"propagationPolicy", "Foreground"}});
  REQUIRE(del.code == 200);
  CHECK(ControlPlane::eventually([&] {
    return cp.get(kCms + "/child")["metadata"].contains("deletionTimestamp");
  }));
  REQUIRE(cp.manager->wait_idle(std::chrono::seconds(5)));
  json o = cp.get(kCms + "/owner");  // still there, waiting
  CHECK(o["metadata"]["finalizers"] == json::array({"foregroundDeletion"}));
  auto release = cp.call("PATCH", kCms + "/child", {{"metadata", {{"finalizers", nullptr}}}},
                         "application/merge-patch+json");
  REQUIRE(release.code == 200);
  CHECK(ControlPlane::eventually([&] { return status_of(cp, "child") == 404; }));
  CHECK(ControlPlane::eventually([&] { return status_of(cp, "owner") == 404; }));
}

TEST_CASE("an object whose owner never existed is collected", "[controllers][gc]") {
  ControlPlane cp({"garbage-collector"});
  json ghost = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "ghost"},
                {"uid", "00000000-0000-0000-0000-000000000001"}};
  cp.create(kCms, config_map("dangling", json::array({ghost})));
  CHECK(ControlPlane::eventually([&] { return status_of(cp, "dangling") == 404; }));
}

TEST_CASE("deleting a namespace deletes what is in it, then the namespace",
          "[controllers][namespace]") {
  ControlPlane cp({"namespace", "garbage-collector"});
  cp.create("/api/v1/namespaces", {{"metadata", {{"name", "gone"}}}});
  for (int i = 0; i < 3; ++i)
    cp.create("/api/v1/namespaces/gone/configmaps",
              {{"metadata", {{"name", "cm" + std::to_string(i)}}}});
  cp.create("/api/v1/namespaces/gone/secrets", {{"metadata", {{"name", "s"}}}});
  REQUIRE(cp.call("DELETE", "/api/v1/namespaces/gone").code == 200);
  CHECK(ControlPlane::eventually(
      [&] { return cp.call("GET", "/api/v1/namespaces/gone").code == 404; }));
  CHECK(cp.items("/api/v1/namespaces/gone/configmaps").empty());
  CHECK(cp.items("/api/v1/namespaces/gone/secrets").empty());
}

TEST_CASE("a terminating namespace reports the content that holds it", "[controllers][namespace]") {
  ControlPlane cp({"namespace"});
  cp.create("/api/v1/namespaces", {{"metadata", {{"name", "held"}}}});
  cp.create("/api/v1/namespaces/held/configmaps",
            {{"metadata", {{"name", "cm"}, {"finalizers", {"example.com/hold"}}}}});
  REQUIRE(cp.call("DELETE", "/api/v1/namespaces/held").code == 200);
  CHECK(ControlPlane::eventually([&] {
    for (const json& c : cp.get("/api/v1/namespaces/held")["status"].value("conditions", json::array()))
      if (c["type"] == "NamespaceContentRemaining" && c["status"] == "True") return true;
    return false;
  }));
  CHECK(cp.get("/api/v1/namespaces/held")["status"]["phase"] == "Terminating");
  cp.call("PATCH", "/api/v1/namespaces/held/configmaps/cm", {{"metadata", {{"finalizers", nullptr}}}},
          "application/merge-patch+json");
  CHECK(ControlPlane::eventually(
      [&] { return cp.call("GET", "/api/v1/namespaces/held").code == 404; }));
}

}  // namespace
}  // namespace vkube::controllers
