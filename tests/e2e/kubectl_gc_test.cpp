// Garbage collection through kubectl: `kubectl delete --cascade=background,
// foreground, orphan` on objects linked by ownerReferences.
#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

// A ConfigMap "owner" and two dependents "child-a", "child-b" pointing at it
// (blockOwnerDeletion on child-a), in namespace gc.
void make_family(Cluster& c) {
  c.setup("apiVersion: v1\nkind: Namespace\nmetadata: {name: gc}\n---\n"
          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owner, namespace: gc}\n");
  json owner = c.get_json({"configmap", "owner", "-n", "gc"});
  std::string uid = owner["metadata"]["uid"];
  for (std::string child : {"child-a", "child-b"}) {
    std::string block = child == "child-a" ? "true" : "false";
    c.setup("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + child +
            "\n  namespace: gc\n  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: " +
            uid + ", blockOwnerDeletion: " + block + "}\n");
  }
}

bool gone(Cluster& c, const std::string& name) {
  Result r = c.kubectl({"get", "configmap", name, "-n", "gc"});
  return r.exit_code != 0 && r.output().find("NotFound") != std::string::npos;
}

TEST_CASE("kubectl delete cascades to dependents in the background", "[e2e][gc]") {
  Cluster c;
  make_family(c);
  REQUIRE_THAT(c.kubectl({"delete", "configmap", "owner", "-n", "gc"}), Succeeded());
  CHECK(eventually([&] { return gone(c, "child-a") && gone(c, "child-b"); }));
}

TEST_CASE("kubectl delete --cascade=foreground returns after the dependents are gone",
          "[e2e][gc]") {
  Cluster c;
  make_family(c);
  Result r = c.kubectl({"delete", "configmap", "owner", "-n", "gc", "--cascade=foreground"});
  INFO(r);
  REQUIRE_THAT(r, Succeeded());
  CHECK(gone(c, "owner"));
  CHECK(gone(c, "child-a"));  // blocking: deleted before the owner went
  CHECK(eventually([&] { return gone(c, "child-b"); }));
}

TEST_CASE("kubectl delete --cascade=orphan leaves the dependents without owner", "[e2e][gc]") {
  Cluster c;
  make_family(c);
  REQUIRE_THAT(c.kubectl({"delete", "configmap", "owner", "-n", "gc", "--cascade=orphan"}),
               Succeeded());
  CHECK(eventually([&] { return gone(c, "owner"); }));
  for (const char* child : {"child-a", "child-b"}) {
    json cm = c.get_json({"configmap", child, "-n", "gc"});
    CHECK_FALSE(cm["metadata"].contains("ownerReferences"));
  }
}

}  // namespace
}  // namespace vkube::e2e
