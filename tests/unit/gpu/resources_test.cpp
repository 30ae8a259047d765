#include <catch2/catch.hpp>

#include "vkube/gpu/resources.h"

using vkube::gpu::Allocation;
using vkube::gpu::DeviceState;
using vkube::gpu::Gpu;
using vkube::gpu::GpuRequest;
using vkube::gpu::NodeGpus;
using vkube::gpu::Policy;
using json = nlohmann::json;

namespace {

json pod_with(json resources, json annotations = json::object(), json init = nullptr) {
  json pod = {{"metadata", {{"name", "p"}, {"annotations", annotations}}},
              {"spec", {{"containers", json::array({{{"name", "c"}, {"resources", resources}}})}}}};
  if (!init.is_null())
    pod["spec"]["initContainers"] = json::array({{{"name", "i"}, {"resources", init}}});
  return pod;
}

NodeGpus gpus(int n, bool shareable = true, int64_t memory = 81920) {
  NodeGpus g;
  for (int i = 0; i < n; ++i) g.gpus.push_back({i, "NVIDIA-A100-SXM4-80GB", memory, {}});
  g.shareable = shareable;
  return g;
}

}  // namespace

TEST_CASE("a pod's GPU request in every accepted form", "[gpu]") {
  auto whole = vkube::gpu::request_of(pod_with({{"limits", {{"nvidia.com/gpu", "2"}}}}));
  REQUIRE(whole.is_ok());
  CHECK(whole->whole == 2);
  CHECK(whole->describe() == "2 GPUs");

  auto milli = vkube::gpu::request_of(pod_with({{"requests", {{"vkube.io/gpu-milli", "250"}}},
                                                {"limits", {{"vkube.io/gpu-milli", "250"}}}}));
  REQUIRE(milli.is_ok());
  CHECK(milli->milli == 250);
  CHECK(milli->shared());
  CHECK(milli->describe() == "0.25 GPU");

  auto fraction = vkube::gpu::request_of(pod_with(json::object(), {{"gpu-fraction", "0.5"}}));
  REQUIRE(fraction.is_ok());
  CHECK(fraction->milli == 500);

  auto memory = vkube::gpu::request_of(pod_with(json::object(), {{"gpu-memory", "20480"}}));
  REQUIRE(memory.is_ok());
  CHECK(memory->memory_mib == 20480);

  auto mig = vkube::gpu::request_of(pod_with({{"limits", {{"nvidia.com/mig-1g.10gb", 2}}}}));
  REQUIRE(mig.is_ok());
  CHECK(mig->mig == std::map<std::string, int>{{"1g.10gb", 2}});

  // A fraction of 1 is a whole GPU; init containers count by their maximum.
  auto one = vkube::gpu::request_of(pod_with(json::object(), {{"gpu-fraction", "1"}}));
  REQUIRE(one.is_ok());
  CHECK(one->whole == 1);
  CHECK(one->milli == 0);
  auto init =
      vkube::gpu::request_of(pod_with({{"limits", {{"nvidia.com/gpu", "1"}}}}, json::object(),
                                      {{"limits", {{"nvidia.com/gpu", "4"}}}}));
  REQUIRE(init.is_ok());
  CHECK(init->whole == 4);
  CHECK(vkube::gpu::request_of(pod_with(json::object()))->empty());
}

TEST_CASE("malformed GPU requests are refused with a reason", "[gpu]") {
  auto bad_fraction = vkube::gpu::request_of(pod_with(json::object(), {{"gpu-fraction", "1.5"}}));
  REQUIRE_FALSE(bad_fraction.is_ok());
  CHECK_THAT(bad_fraction.status().message(), Catch::Contains("at most 1"));
  CHECK_FALSE(vkube::gpu::request_of(pod_with(json::object(), {{"gpu-fraction", "half"}})).is_ok());
  CHECK_FALSE(vkube::gpu::request_of(pod_with(json::object(), {{"gpu-memory", "-5"}})).is_ok());
  auto both = vkube::gpu::request_of(
      pod_with({{"limits", {{"nvidia.com/gpu", "1"}}}}, {{"gpu-fraction", "0.5"}}));
  REQUIRE_FALSE(both.is_ok());
  CHECK_THAT(both.status().message(), Catch::Contains("not both"));
  auto too_much = vkube::gpu::request_of(pod_with({{"limits", {{"vkube.io/gpu-milli", "1500"}}}}));
  REQUIRE_FALSE(too_much.is_ok());
  CHECK_THAT(too_much.status().message(), Catch::Contains("more than one GPU"));
}

TEST_CASE("allocation annotations round-trip and reject garbage", "[gpu]") {
  Allocation a;
  a.shares = {{0, 1000}, {3, 250}};
  a.slices = {{7, 2, "1g.10gb"}};
  CHECK(a.format() == "0=1000,3=250,7/2=1g.10gb");
  auto back = Allocation::parse(a.format());
  REQUIRE(back.is_ok());
  CHECK(*back == a);
  CHECK(back->milli() == 1250);
  for (const char* bad : {"x", "0=", "0=2000", "a=5", "1/x=1g.10gb", "1/2="})
    CHECK_FALSE(Allocation::parse(bad).is_ok());
  CHECK(Allocation::parse("")->empty());
}

TEST_CASE("a node's GPUs come from its device annotation or its capacity", "[gpu]") {
  json node = {
      {"metadata",
       {{"name", "n"},
        {"labels", {{"nvidia.com/gpu.product", "Tesla-T4"}, {"nvidia.com/gpu.memory", "15360"}}},
        {"annotations", json::object()}}},
      {"status", {{"allocatable", {{"nvidia.com/gpu", "2"}, {"nvidia.com/mig-1g.5gb", "3"}}}}}};
  NodeGpus from_capacity = NodeGpus::of_node(node);
  REQUIRE(from_capacity.gpus.size() == 3);
  CHECK(from_capacity.gpus[0].model == "Tesla-T4");
  CHECK(from_capacity.gpus[1].memory_mib == 15360);
  CHECK(from_capacity.gpus[2].mig == std::vector<std::string>(3, "1g.5gb"));
  CHECK(from_capacity.whole_count() == 2);
  CHECK_FALSE(from_capacity.shareable);

  NodeGpus layout;
  layout.gpus = {{0, "H100", 81920, {}}, {1, "H100", 81920, {"3g.40gb", "1g.10gb"}}};
  node["metadata"]["annotations"]["gpu.vkube.io/devices"] = layout.to_json().dump();
  node["status"]["allocatable"]["vkube.io/gpu-milli"] = "1000";
  NodeGpus annotated = NodeGpus::of_node(node);
  CHECK(annotated.gpus == layout.gpus);
  CHECK(annotated.shareable);

  // Time-slicing: each replica is a device.
  node["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "4";
  node["status"]["allocatable"] = {{"nvidia.com/gpu", "8"}};
  CHECK(NodeGpus::of_node(node).gpus.size() == 8);
}

TEST_CASE("device bookkeeping refuses overlapping holds", "[gpu]") {
  DeviceState st(gpus(2));
  REQUIRE(st.take(*Allocation::parse("0=600")).is_ok());
  CHECK(st.free_milli(0) == 400);
  CHECK(st.take(*Allocation::parse("0=500")).code() == vkube::Code::kConflict);
  CHECK(st.used_milli(0) == 600);  // unchanged by the refused take
  CHECK(st.take(*Allocation::parse("5=100")).code() == vkube::Code::kInvalid);
  REQUIRE(st.take(*Allocation::parse("1=1000")).is_ok());
  CHECK(st.allocated_milli() == 1600);
  CHECK(st.whole_free() == 0);
  st.release(*Allocation::parse("0=600"));
  CHECK(st.whole_free() == 1);
  CHECK(st.capacity_milli() == 2000);
}

TEST_CASE("binpack, spread and fragmentation choose different devices", "[gpu]") {
  DeviceState st(gpus(2));
  REQUIRE(st.take(*Allocation::parse("0=400")).is_ok());  // GPU 0 has 600 free, GPU 1 1000
  GpuRequest share{0, 200, 0, {}};
  CHECK(vkube::gpu::choose(st, share, Policy::kBinpack)->format() == "0=200");
  CHECK(vkube::gpu::choose(st, share, Policy::kSpread)->format() == "1=200");
  // The workload is all half-GPU pods: 200 on GPU 0 would leave it 400
  // (useless to them); on GPU 1 it leaves 800 (still one half fits).
  std::vector<vkube::gpu::TaskClass> halves = {{1000, GpuRequest{0, 500, 0, {}}, 1.0}};
  double frag = -1;
  auto fgd = vkube::gpu::choose(st, share, Policy::kFragmentation, nullptr, 8000, &halves, &frag);
  REQUIRE(fgd);
  CHECK(fgd->format() == "1=200");
  CHECK(frag == Approx(0));
  DeviceState after = st;
  REQUIRE(after.take(*Allocation::parse("0=200")).is_ok());
  CHECK(vkube::gpu::fragmentation(after, 8000, halves) == Approx(400));
  // Too little CPU left: every free GPU share is stranded.
  CHECK(vkube::gpu::fragmentation(after, 500, halves) == Approx(400 + 1000));
}

TEST_CASE("whole GPUs are distinct free devices; MIG slices by profile", "[gpu]") {
  NodeGpus g = gpus(3);
  g.gpus[2].mig = {"3g.40gb", "1g.10gb", "1g.10gb"};
  DeviceState st(g);
  REQUIRE(st.take(*Allocation::parse("0=100")).is_ok());
  std::string why;
  CHECK_FALSE(vkube::gpu::choose(st, GpuRequest{2, 0, 0, {}}, Policy::kBinpack, &why));
  CHECK(why == "Insufficient nvidia.com/gpu");
  CHECK(vkube::gpu::choose(st, GpuRequest{1, 0, 0, {}}, Policy::kBinpack)->format() == "1=1000");
  auto mig = vkube::gpu::choose(st, GpuRequest{0, 0, 0, {{"1g.10gb", 2}}}, Policy::kBinpack);
  REQUIRE(mig);
  CHECK(mig->format() == "2/1=1g.10gb,2/2=1g.10gb");
  REQUIRE(st.take(*mig).is_ok());
  CHECK(st.slices_free("1g.10gb") == 0);
  CHECK_FALSE(
      vkube::gpu::choose(st, GpuRequest{0, 0, 0, {{"1g.10gb", 1}}}, Policy::kBinpack, &why));
  CHECK(why == "Insufficient nvidia.com/mig-1g.10gb");
  // A MIG GPU takes no shares; a node without gpu-milli takes none at all.
  CHECK(st.capacity_milli() == 2000);
  DeviceState exclusive(gpus(1, false));
  CHECK_FALSE(vkube::gpu::choose(exclusive, GpuRequest{0, 100, 0, {}}, Policy::kBinpack, &why));
  CHECK(why == "Insufficient vkube.io/gpu-milli");
  // A share by memory: 20 GiB of an 80 GiB GPU is 250 thousandths.
  CHECK(vkube::gpu::choose(st, GpuRequest{0, 0, 20480, {}}, Policy::kBinpack)->format() == "0=250");
  CHECK_FALSE(vkube::gpu::choose(st, GpuRequest{0, 0, 100000, {}}, Policy::kBinpack));
}

TEST_CASE("policies parse by name", "[gpu]") {
  CHECK(*vkube::gpu::parse_policy("binpack") == Policy::kBinpack);
  CHECK(*vkube::gpu::parse_policy("fragmentation") == Policy::kFragmentation);
  CHECK(vkube::gpu::policy_name(Policy::kSpread) == "spread");
  CHECK_FALSE(vkube::gpu::parse_policy("random").is_ok());
}
