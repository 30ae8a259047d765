// `vkube create --node-selector`: the tenant's control plane gets the slice
// as --host-node-selector (and none without it).
#include <catch2/catch.hpp>

#include <algorithm>

#include "vkube/cli/manifests.h"

namespace vkube::cli {
namespace {

json serve_args(const TenantSpec& spec) {
  auto objects = tenant_objects(tenant_manifest(), spec);
  REQUIRE(objects.is_ok());
  for (const json& o : *objects)
    if (o.value("kind", "") == "StatefulSet")
      return o["spec"]["template"]["spec"]["containers"][0]["args"];
  FAIL("no StatefulSet");
  return nullptr;
}

bool selector_flag(const json& args) {
  return std::any_of(args.begin(), args.end(), [](const json& a) {
    return a.get<std::string>().rfind("--host-node-selector", 0) == 0;
  });
}

TEST_CASE("manifests: a dedicated tenant's control plane gets its node selector",
          "[cli][node-selector]") {
  TenantSpec spec;
  spec.name = "team-a";
  spec.ns = "vkube-team-a";
  CHECK_FALSE(selector_flag(serve_args(spec)));
  spec.host_node_selector = "vkube.io/pool=gpu,vkube.io/team=team-a";
  const json args = serve_args(spec);
  CHECK(std::count(args.begin(), args.end(),
                   json("--host-node-selector=vkube.io/pool=gpu,vkube.io/team=team-a")) == 1);
}

}  // namespace
}  // namespace vkube::cli
