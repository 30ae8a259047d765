// The GPU request of a tenant pod in each host GPU stack's terms: a table of
// tenant pod in, host pod out.
#include <catch2/catch.hpp>

#include "vkube/gpu/translate.h"

using json = nlohmann::json;
using vkube::gpu::FractionMode;
using vkube::gpu::HostGpuPolicy;
using vkube::gpu::MigMode;

namespace {

json pod(json limits, json annotations = json::object(), json extra_container = nullptr) {
  json p = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
    "spec":{"containers":[{"name":"main","image":"cuda"}]}})");
  if (!annotations.empty()) p["metadata"]["annotations"] = annotations;
  if (!limits.empty())
    p["spec"]["containers"][0]["resources"] = {{"limits", limits}, {"requests", limits}};
  if (!extra_container.is_null()) p["spec"]["containers"].push_back(extra_container);
  return p;
}

json both(json r) {
  return {{"limits", r}, {"requests", r}};
}

struct Row {
  const char* name;
  HostGpuPolicy policy;
  json in;
  json want;
};

HostGpuPolicy policy(FractionMode f, MigMode m = MigMode::kAsIs) {
  HostGpuPolicy p;
  p.fractions = f;
  p.mig = m;
  p.host_mig_profiles = {"1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"};
  return p;
}

}  // namespace

TEST_CASE("tenant GPU requests translate to each host GPU stack", "[gpu]") {
  HostGpuPolicy kai = policy(FractionMode::kKai);
  const std::vector<Row> rows = {
      {"whole GPUs stay as they are", policy(FractionMode::kHami), pod({{"nvidia.com/gpu", "2"}}),
       pod({{"nvidia.com/gpu", "2"}})},
      {"milli on the embedded host", policy(FractionMode::kMilli),
       pod({{"vkube.io/gpu-milli", "250"}}), pod({{"vkube.io/gpu-milli", "250"}})},
      {"KAI's fraction annotation becomes milli", policy(FractionMode::kMilli),
       pod(json::object(), {{"gpu-fraction", "0.5"}}), pod({{"vkube.io/gpu-milli", "500"}})},
      {"memory becomes milli of the host GPU", policy(FractionMode::kMilli),
       pod(json::object(), {{"gpu-memory", "20480"}}), pod({{"vkube.io/gpu-milli", "250"}})},
      {"a share is one time-sliced replica", policy(FractionMode::kTimeSlicing),
       pod({{"vkube.io/gpu-milli", "300"}}), pod({{"nvidia.com/gpu.shared", "1"}})},
      {"HAMi: one vGPU with memory and cores", policy(FractionMode::kHami),
       pod({{"vkube.io/gpu-milli", "250"}}),
       pod({{"nvidia.com/gpu", "1"},
            {"nvidia.com/gpumem", "20480"},
            {"nvidia.com/gpucores", "25"}})},
      {"HAMi keeps memory asked in MiB", policy(FractionMode::kHami),
       pod(json::object(), {{"gpu-memory", "8000"}}),
       pod({{"nvidia.com/gpu", "1"},
            {"nvidia.com/gpumem", "8000"},
            {"nvidia.com/gpucores", "10"}})},
      {"KAI: its annotation (scheduler and queue are the host policy's)", kai, pod({{"vkube.io/gpu-milli", "250"}}),
       [] {
         json p = pod(json::object(), {{"gpu-fraction", "0.25"}});
         p["spec"]["containers"][0]["resources"] = both(json::object());
         return p;
       }()},
      {"KAI names the container when there are several", policy(FractionMode::kKai),
       pod(json::object(), json::object(),
           {{"name", "gpu"},
            {"image", "cuda"},
            {"resources", both({{"vkube.io/gpu-milli", "500"}})}}),
       [] {
         json p =
             pod(json::object(), {{"gpu-fraction", "0.5"}, {"gpu-fraction-container-name", "gpu"}},
                 {{"name", "gpu"}, {"image", "cuda"}, {"resources", both(json::object())}});
         return p;
       }()},
      {"MIG as it is", policy(FractionMode::kMilli), pod({{"nvidia.com/mig-1g.5gb", "1"}}),
       pod({{"nvidia.com/mig-1g.5gb", "1"}})},
      {"MIG: the smallest host profile that holds it",
       policy(FractionMode::kMilli, MigMode::kSmallestFit), pod({{"nvidia.com/mig-2g.10gb", "2"}}),
       pod({{"nvidia.com/mig-2g.20gb", "2"}})},
      {"host-owned annotations never come from the tenant", policy(FractionMode::kMilli),
       pod({{"nvidia.com/gpu", "1"}}, {{"gpu.vkube.io/allocation", "0=1000"},
                                       {"hami.io/vgpu-devices-to-allocate", "x"},
                                       {"runai-gpu-group", "g"},
                                       {"team", "a"}}),
       pod({{"nvidia.com/gpu", "1"}}, {{"team", "a"}})},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    json got = row.in;
    REQUIRE(vkube::gpu::translate_for_host(got, row.policy).is_ok());
    CHECK(got == row.want);
  }
}

TEST_CASE("GPU requests the host cannot serve are refused with a reason", "[gpu]") {
  json big = pod({{"nvidia.com/mig-3g.40gb", "1"}});
  HostGpuPolicy small = policy(FractionMode::kMilli, MigMode::kSmallestFit);
  small.host_mig_profiles = {"1g.10gb", "2g.20gb"};
  vkube::Status s = vkube::gpu::translate_for_host(big, small);
  REQUIRE_FALSE(s.is_ok());
  CHECK_THAT(s.message(), Catch::Contains("no MIG profile on the host holds 3g.40gb"));
  CHECK_THAT(s.message(), Catch::Contains("1g.10gb, 2g.20gb"));
  json bad = pod(json::object(), {{"gpu-fraction", "2"}});
  CHECK_FALSE(vkube::gpu::translate_for_host(bad, policy(FractionMode::kHami)).is_ok());
}
