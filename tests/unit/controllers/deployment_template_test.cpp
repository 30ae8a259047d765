// Which ReplicaSet is a Deployment's new one: its template equals the
// Deployment's as Kubernetes' semantic equality has it (nil and empty lists,
// empty label maps alike), the pod-template-hash label aside. The
// comparison walks both templates in place; these pin what it ignores.
#include <catch2/catch.hpp>

#include "controllers/deployment_util.h"

namespace vkube::controllers::deploy {
namespace {

using json = nlohmann::json;

json tmpl() {
  return json::parse(R"({"metadata":{"labels":{"app":"web"}},
    "spec":{"containers":[{"name":"c0","image":"img:1","env":[{"name":"E","value":"v"}]},
                          {"name":"c1","image":"img:0"}]}})");
}

TEST_CASE("equal_ignore_hash ignores only the template's own hash label",
          "[deployment][template]") {
  json a = tmpl(), b = tmpl();
  b["metadata"]["labels"][kHashLabel] = "abc123";
  CHECK(equal_ignore_hash(a, b));
  CHECK(equal_ignore_hash(b, a));
  // A label of that name anywhere else is content.
  json c = tmpl(), d = tmpl();
  d["spec"]["containers"][0]["labels"] = {{kHashLabel, "x"}};
  CHECK_FALSE(equal_ignore_hash(c, d));
  // Another label is a different template.
  b["metadata"]["labels"]["tier"] = "x";
  CHECK_FALSE(equal_ignore_hash(a, b));
}

TEST_CASE("equal_ignore_hash treats nil and empty alike", "[deployment][template]") {
  json a = tmpl(), b = tmpl();
  b["spec"]["volumes"] = json::array();
  b["spec"]["nodeSelector"] = nullptr;
  b["spec"]["containers"][1]["ports"] = json::array();
  CHECK(equal_ignore_hash(a, b));
  CHECK(equal_ignore_hash(b, a));
  // Labels of nothing but the hash are no labels; then no metadata.
  json only_hash = tmpl(), none = tmpl();
  only_hash["metadata"]["labels"] = {{kHashLabel, "h"}};
  none.erase("metadata");
  CHECK(equal_ignore_hash(only_hash, none));
  CHECK(equal_ignore_hash(none, only_hash));
  // An empty map that is not metadata is content.
  json e = tmpl(), f = tmpl();
  f["spec"]["securityContext"] = json::object();
  CHECK_FALSE(equal_ignore_hash(e, f));
}

TEST_CASE("equal_ignore_hash sees every change in a container", "[deployment][template]") {
  json a = tmpl(), b = tmpl();
  b["spec"]["containers"][1]["image"] = "img:2";
  CHECK_FALSE(equal_ignore_hash(a, b));
  json c = tmpl();
  c["spec"]["containers"][0]["env"][0]["value"] = "w";
  CHECK_FALSE(equal_ignore_hash(a, c));
  json d = tmpl();
  d["spec"]["containers"].erase(1);
  CHECK_FALSE(equal_ignore_hash(a, d));
  // List order is content.
  json e = tmpl();
  std::swap(e["spec"]["containers"][0], e["spec"]["containers"][1]);
  CHECK_FALSE(equal_ignore_hash(a, e));
}

}  // namespace
}  // namespace vkube::controllers::deploy
