// The usage `vkube host` reports for a simulated pod: half of what each
// container requests (else of its limit), a floor when it asks for nothing,
// the sim.vkube.io/*-usage annotations as the pod's total, and nothing for a
// pod that is not running.
#include <catch2/catch.hpp>

#include "nodesim/sim_usage.h"

namespace vkube::nodesim {
namespace {

using json = nlohmann::json;
constexpr int64_t kMi = 1LL << 20;

json pod(json containers, json annotations = json::object(), const char* phase = "Running") {
  return {{"metadata", {{"name", "p"}, {"namespace", "d"}, {"annotations", annotations}}},
          {"spec", {{"containers", std::move(containers)}}},
          {"status", {{"phase", phase}}}};
}

json container(const char* name, json resources) {
  return {{"name", name}, {"image", "nginx"}, {"resources", std::move(resources)}};
}

TEST_CASE("a simulated container uses half of its requests, else of its limits", "[nodesim]") {
  auto u = simulated_usage(
      pod(json::array({container("web", {{"requests", {{"cpu", "200m"}, {"memory", "128Mi"}}}}),
                       container("side", {{"limits", {{"cpu", "1"}, {"memory", "1Gi"}}}})})));
  REQUIRE(u);
  REQUIRE(u->size() == 2);
  CHECK((*u)[0].millicores == 100);
  CHECK((*u)[0].bytes == 64 * kMi);
  CHECK((*u)[1].millicores == 500);
  CHECK((*u)[1].bytes == 512 * kMi);
  // Deterministic: the same pod reads the same every time.
  auto again = simulated_usage(
      pod(json::array({container("web", {{"requests", {{"cpu", "200m"}, {"memory", "128Mi"}}}}),
                       container("side", {{"limits", {{"cpu", "1"}, {"memory", "1Gi"}}}})})));
  CHECK((*again)[0].millicores == 100);
}

TEST_CASE("a simulated container that asks for nothing still shows a small usage", "[nodesim]") {
  auto u = simulated_usage(pod(json::array({container("c", json::object())})));
  REQUIRE(u);
  CHECK((*u)[0].millicores == 5);
  CHECK((*u)[0].bytes == 16 * kMi);
  auto tiny = simulated_usage(
      pod(json::array({container("c", {{"requests", {{"cpu", "1m"}, {"memory", "1Ki"}}}})})));
  CHECK((*tiny)[0].millicores == 1);
  CHECK((*tiny)[0].bytes == 4 * kMi);
}

TEST_CASE("the usage annotations set the pod's total, on its first container", "[nodesim]") {
  json two = json::array({container("a", {{"requests", {{"cpu", "2"}}}}),
                          container("b", {{"requests", {{"cpu", "2"}}}})});
  auto u = simulated_usage(
      pod(two, {{"sim.vkube.io/cpu-usage", "250m"}, {"sim.vkube.io/memory-usage", "64Mi"}}));
  REQUIRE(u);
  CHECK((*u)[0].millicores == 250);
  CHECK((*u)[0].bytes == 64 * kMi);
  CHECK((*u)[1].millicores == 0);
  CHECK((*u)[1].bytes == 0);

  SECTION("only the annotated resource is replaced") {
    auto cpu_only = simulated_usage(pod(two, {{"sim.vkube.io/cpu-usage", "1.5"}}));
    CHECK((*cpu_only)[0].millicores == 1500);
    CHECK((*cpu_only)[1].bytes == 16 * kMi);
  }
  SECTION("a malformed or negative annotation is ignored") {
    auto bad = simulated_usage(
        pod(two, {{"sim.vkube.io/cpu-usage", "lots"}, {"sim.vkube.io/memory-usage", "-1Mi"}}));
    CHECK((*bad)[0].millicores == 1000);
    CHECK((*bad)[1].millicores == 1000);
    CHECK((*bad)[0].bytes == 16 * kMi);
  }
}

TEST_CASE("a pod that is not running has no simulated usage", "[nodesim]") {
  json c = json::array({container("c", {{"requests", {{"cpu", "100m"}}}})});
  CHECK_FALSE(simulated_usage(pod(c, json::object(), "Pending")));
  CHECK_FALSE(simulated_usage(pod(c, json::object(), "Succeeded")));
  CHECK_FALSE(simulated_usage(json::array()));
  CHECK_FALSE(simulated_usage(pod(json::array())));
}

}  // namespace
}  // namespace vkube::nodesim
