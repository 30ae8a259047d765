// The tenant GPU quota: the --gpu-quota syntax, what pods count against it,
// kube ResourceQuota's refusal, and the ResourceQuota mirrored on the host.
#include <catch2/catch.hpp>

#include "vkube/gpu/quota.h"

using json = nlohmann::json;
using vkube::Code;
using vkube::gpu::FractionMode;
using vkube::gpu::GpuQuota;
using vkube::gpu::GpuUsage;
using vkube::gpu::HostGpuPolicy;
using vkube::gpu::MigMode;

namespace {

json pod(json limits, json annotations = json::object(), json spec_extra = json::object()) {
  json p = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
    "spec":{"containers":[{"name":"main","image":"cuda"}]}})");
  if (!annotations.empty()) p["metadata"]["annotations"] = annotations;
  if (!limits.empty()) p["spec"]["containers"][0]["resources"] = {{"limits", limits}};
  p["spec"].merge_patch(spec_extra);
  return p;
}

GpuUsage usage(const json& p) {
  auto r = vkube::gpu::request_of(p);
  REQUIRE(r.is_ok());
  return vkube::gpu::usage_of(p, *r);
}

GpuQuota quota(std::string_view text) {
  auto q = vkube::gpu::parse_gpu_quota(text);
  REQUIRE(q.is_ok());
  return *q;
}

json affinity(json terms) {
  return {{"affinity",
           {{"nodeAffinity",
             {{"requiredDuringSchedulingIgnoredDuringExecution",
               {{"nodeSelectorTerms", std::move(terms)}}}}}}}};
}

json in_models(std::vector<std::string> models) {
  return {{"matchExpressions",
           {{{"key", "nvidia.com/gpu.product"}, {"operator", "In"}, {"values", models}}}}};
}

}  // namespace

TEST_CASE("--gpu-quota parses limits on GPUs, milli and models", "[gpu]") {
  struct Row {
    const char* text;
    std::optional<int64_t> gpus, milli;
    std::map<std::string, int64_t> models;
  };
  const std::vector<Row> rows = {
      {"", {}, {}, {}},
      {"gpus=8", 8, {}, {}},
      {"milli=6000", {}, 6000, {}},
      {"gpus=0", 0, {}, {}},
      {"gpus=8,milli=6000,model:NVIDIA-H100-80GB-HBM3=2",
       8,
       6000,
       {{"NVIDIA-H100-80GB-HBM3", 2000}}},
      {"model:NVIDIA-A100-SXM4-80GB=1.5,model:Tesla-T4=500m",
       {},
       {},
       {{"NVIDIA-A100-SXM4-80GB", 1500}, {"Tesla-T4", 500}}},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    GpuQuota q = quota(row.text);
    CHECK(q.gpus == row.gpus);
    CHECK(q.milli == row.milli);
    CHECK(q.models == row.models);
    CHECK(quota(q.to_string()) == q);  // canonical text reads back the same
  }
  CHECK(quota("model:X=2,milli=10,gpus=1").to_string() == "gpus=1,milli=10,model:X=2");
  CHECK(quota("model:X=1500m").to_string() == "model:X=1500m");
}

TEST_CASE("--gpu-quota refuses bad syntax, saying what is wrong", "[gpu]") {
  const std::vector<std::pair<const char*, const char*>> rows = {
      {"gpus",
       "invalid GPU quota item \"gpus\": expected gpus=N, milli=N or "
       "model:<nvidia.com/gpu.product>=N"},
      {"gpus=x",
       "invalid GPU quota item \"gpus=x\": gpus must be a whole number, 0 or more, got "
       "\"x\""},
      {"gpus=-1", "gpus must be a whole number, 0 or more, got \"-1\""},
      {"gpus=1.5", "gpus must be a whole number"},
      {"milli=", "milli must be a whole number, 0 or more, got \"\""},
      {"gpus=8,", "invalid GPU quota \"gpus=8,\": empty item"},
      {",gpus=8", "empty item"},
      {"gpus=8,,milli=1", "empty item"},
      {"gpus=1,gpus=2", "invalid GPU quota item \"gpus=2\": gpus is given more than once"},
      {"cpus=4",
       "invalid GPU quota item \"cpus=4\": unknown limit \"cpus\" (known: gpus, milli, "
       "model:<nvidia.com/gpu.product value>)"},
      {"model:=2", "the model is missing"},
      {"model:NVIDIA A100=2", "model \"NVIDIA A100\" is not a label value"},
      {"model:X=two", "the limit must be a number of GPUs, 0 or more"},
      {"model:X=-1", "the limit must be a number of GPUs"},
      {"model:X=", "the limit must be a number of GPUs"},
      {"model:X=1,model:X=2", "model X is given more than once"},
      {"gpus = 8", "unknown limit \"gpus \""},
  };
  for (const auto& [text, want] : rows) {
    INFO(text);
    auto q = vkube::gpu::parse_gpu_quota(text);
    REQUIRE_FALSE(q.is_ok());
    CHECK(q.status().code() == Code::kInvalid);
    CHECK_THAT(q.status().message(), Catch::Contains(want));
  }
}

TEST_CASE("what a pod counts against a GPU quota", "[gpu]") {
  SECTION("whole GPUs count as GPUs and 1000 milli each") {
    GpuUsage u = usage(pod({{"nvidia.com/gpu", "2"}}));
    CHECK(u.gpus == 2);
    CHECK(u.milli == 2000);
    CHECK(u.models.empty());
  }
  SECTION("a share counts its milli, not a GPU") {
    CHECK(usage(pod({{"vkube.io/gpu-milli", "250"}})) == GpuUsage{0, 250, {}});
    CHECK(usage(pod(json::object(), {{"gpu-fraction", "0.5"}})) == GpuUsage{0, 500, {}});
  }
  SECTION("a share by memory counts memory over the model's memory, 80 GiB when unknown") {
    CHECK(usage(pod(json::object(), {{"gpu-memory", "20480"}})).milli == 250);
    json on_t4 = pod(json::object(), {{"gpu-memory", "4096"}},
                     {{"nodeSelector", {{"nvidia.com/gpu.product", "Tesla-T4"}}}});
    CHECK(usage(on_t4) == GpuUsage{0, 250, {{"Tesla-T4", 250}}});
  }
  SECTION("a MIG slice counts its compute fraction g/7, rounded up (g/4 on an A30)") {
    CHECK(usage(pod({{"nvidia.com/mig-1g.10gb", "2"}})).milli == 2 * 143);
    CHECK(usage(pod({{"nvidia.com/mig-3g.40gb", "1"}})).milli == 429);
    CHECK(usage(pod({{"nvidia.com/mig-7g.80gb", "1"}})).milli == 1000);
    json on_a30 = pod({{"nvidia.com/mig-1g.6gb", "1"}}, json::object(),
                      {{"nodeSelector", {{"nvidia.com/gpu.product", "NVIDIA-A30"}}}});
    CHECK(usage(on_a30).milli == 250);
    CHECK(usage(pod({{"nvidia.com/mig-odd", "1"}})).milli == 1000);  // unreadable: a whole GPU
    CHECK(usage(pod({{"nvidia.com/mig-1g.10gb", "1"}})).gpus == 0);
  }
  SECTION("no GPU counts nothing") {
    CHECK(usage(pod({{"cpu", "2"}})).empty());
  }
}

TEST_CASE("a pod counts against the models it is pinned to", "[gpu]") {
  const std::string a100 = "NVIDIA-A100-SXM4-80GB", h100 = "NVIDIA-H100-80GB-HBM3";
  SECTION("by nodeSelector") {
    json p = pod({{"nvidia.com/gpu", "2"}}, json::object(),
                 {{"nodeSelector", {{"nvidia.com/gpu.product", h100}}}});
    CHECK(usage(p) == GpuUsage{2, 2000, {{h100, 2000}}});
  }
  SECTION("by required node affinity: every term must name models; a choice counts on each") {
    CHECK(vkube::gpu::pinned_models(pod({}, {}, affinity({in_models({h100})}))) ==
          std::vector<std::string>{h100});
    CHECK(vkube::gpu::pinned_models(pod({}, {}, affinity({in_models({h100, a100})}))) ==
          std::vector<std::string>{a100, h100});
    CHECK(
        vkube::gpu::pinned_models(pod({}, {}, affinity({in_models({h100}), in_models({a100})}))) ==
        std::vector<std::string>{a100, h100});
    json any_term = {
        {"matchExpressions",
         {{{"key", "kubernetes.io/arch"}, {"operator", "In"}, {"values", {"amd64"}}}}}};
    CHECK(vkube::gpu::pinned_models(pod({}, {}, affinity({in_models({h100}), any_term}))).empty());
    json not_in = {
        {"matchExpressions",
         {{{"key", "nvidia.com/gpu.product"}, {"operator", "NotIn"}, {"values", {h100}}}}}};
    CHECK(vkube::gpu::pinned_models(pod({}, {}, affinity({not_in}))).empty());
    json p = pod({{"vkube.io/gpu-milli", "500"}}, {}, affinity({in_models({h100, a100})}));
    CHECK(usage(p) == GpuUsage{0, 500, {{a100, 500}, {h100, 500}}});
  }
  SECTION("nodeSelector and affinity together: both must hold") {
    json spec = affinity({in_models({h100, a100})});
    spec["nodeSelector"] = {{"nvidia.com/gpu.product", a100}};
    CHECK(vkube::gpu::pinned_models(pod({}, {}, spec)) == std::vector<std::string>{a100});
  }
  SECTION("not pinned") {
    CHECK(vkube::gpu::pinned_models(pod({{"nvidia.com/gpu", "1"}})).empty());
  }
}

TEST_CASE("usages add and subtract", "[gpu]") {
  GpuUsage a{1, 1000, {{"X", 1000}}}, b{0, 500, {{"X", 500}, {"Y", 500}}};
  GpuUsage sum = a;
  sum += b;
  CHECK(sum == GpuUsage{1, 1500, {{"X", 1500}, {"Y", 500}}});
  sum -= b;
  CHECK(sum == a);  // Y dropped at 0
  sum -= a;
  CHECK(sum.empty());
}

TEST_CASE("the quota refuses in kube ResourceQuota's words", "[gpu]") {
  GpuQuota q = quota("gpus=8,milli=9000,model:NVIDIA-H100-80GB-HBM3=2");
  SECTION("whole GPUs past the limit") {
    auto why = vkube::gpu::check_quota(q, GpuUsage{7, 7000, {}}, GpuUsage{2, 2000, {}});
    REQUIRE(why);
    CHECK(*why ==
          "exceeded quota: vkube-gpu-quota, requested: requests.nvidia.com/gpu=2, used: "
          "requests.nvidia.com/gpu=7, limited: requests.nvidia.com/gpu=8");
  }
  SECTION("exactly at the limit fits") {
    CHECK_FALSE(vkube::gpu::check_quota(q, GpuUsage{6, 6000, {}}, GpuUsage{2, 2000, {}}));
  }
  SECTION("several limits, named in sorted order") {
    auto why = vkube::gpu::check_quota(q, GpuUsage{6, 8500, {{"NVIDIA-H100-80GB-HBM3", 1500}}},
                                       GpuUsage{1, 1000, {{"NVIDIA-H100-80GB-HBM3", 1000}}});
    REQUIRE(why);
    CHECK(
        *why ==
        "exceeded quota: vkube-gpu-quota, requested: "
        "requests.nvidia.com/gpu[model=NVIDIA-H100-80GB-HBM3]=1,requests.vkube.io/gpu-milli=1000, "
        "used: requests.nvidia.com/gpu[model=NVIDIA-H100-80GB-HBM3]=1500m,"
        "requests.vkube.io/gpu-milli=8500, limited: "
        "requests.nvidia.com/gpu[model=NVIDIA-H100-80GB-HBM3]=2,requests.vkube.io/gpu-milli=9000");
  }
  SECTION("only what the pod asks for is checked") {
    // Over on whole GPUs already (the quota was lowered), but a share asks for none.
    CHECK_FALSE(vkube::gpu::check_quota(q, GpuUsage{9, 8000, {}}, GpuUsage{0, 500, {}}));
    CHECK_FALSE(vkube::gpu::check_quota(q, GpuUsage{9, 9000, {}}, GpuUsage{}));
  }
  SECTION("a limit of zero refuses any") {
    auto why = vkube::gpu::check_quota(quota("gpus=0"), GpuUsage{}, GpuUsage{1, 1000, {}});
    REQUIRE(why);
    CHECK_THAT(*why, Catch::EndsWith("limited: requests.nvidia.com/gpu=0"));
  }
  CHECK(vkube::gpu::format_usage(q, GpuUsage{3, 3500, {}}) ==
        "requests.nvidia.com/gpu=3,requests.nvidia.com/gpu[model=NVIDIA-H100-80GB-HBM3]=0,"
        "requests.vkube.io/gpu-milli=3500");
}

TEST_CASE("the host ResourceQuota mirrors the tenant quota per host GPU stack", "[gpu]") {
  auto hard = [](std::string_view text, FractionMode f, MigMode m = MigMode::kAsIs,
                 std::vector<std::string> profiles = {}) {
    HostGpuPolicy p;
    p.fractions = f;
    p.mig = m;
    p.host_mig_profiles = std::move(profiles);
    json rq = vkube::gpu::host_resource_quota(quota(text), p, "vkube-gpu-quota", "vk-team-a");
    CHECK(rq["apiVersion"] == "v1");
    CHECK(rq["kind"] == "ResourceQuota");
    CHECK(rq["metadata"] == json{{"name", "vkube-gpu-quota"}, {"namespace", "vk-team-a"}});
    return rq["spec"]["hard"];
  };
  const std::string all = "gpus=8,milli=6000,model:NVIDIA-H100-80GB-HBM3=2";
  // Whole GPUs within both limits: 6000 milli hold 6 GPUs.
  CHECK(hard(all, FractionMode::kMilli) ==
        json{{"requests.nvidia.com/gpu", "6"}, {"requests.vkube.io/gpu-milli", "6000"}});
  CHECK(hard("gpus=8", FractionMode::kMilli) == json{{"requests.nvidia.com/gpu", "8"}});
  CHECK(hard(all, FractionMode::kTimeSlicing) ==
        json{{"requests.nvidia.com/gpu", "6"}, {"requests.nvidia.com/gpu.shared", "6000"}});
  // HAMi: a share is nvidia.com/gpu: 1 on the host.
  CHECK(hard(all, FractionMode::kHami) == json{{"requests.nvidia.com/gpu", "6000"}});
  CHECK(hard("gpus=8", FractionMode::kHami) == json::object());
  CHECK(hard(all, FractionMode::kKai) == json{{"requests.nvidia.com/gpu", "6"}});
  // Model limits alone cannot be mirrored.
  CHECK(hard("model:NVIDIA-H100-80GB-HBM3=2", FractionMode::kMilli) == json::object());
  // MIG: as many slices of each host profile as the milli allow.
  CHECK(hard("milli=1000", FractionMode::kMilli, MigMode::kAsIs, {"1g.10gb", "3g.40gb"}) ==
        json{{"requests.nvidia.com/gpu", "1"},
             {"requests.vkube.io/gpu-milli", "1000"},
             {"requests.nvidia.com/mig-1g.10gb", "6"},
             {"requests.nvidia.com/mig-3g.40gb", "2"}});
  // Smallest fit: a 1g request may take a 3g slice.
  CHECK(hard("milli=1000", FractionMode::kKai, MigMode::kSmallestFit, {"3g.40gb"}) ==
        json{{"requests.nvidia.com/gpu", "1"}, {"requests.nvidia.com/mig-3g.40gb", "6"}});
}
