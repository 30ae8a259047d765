// The tenant's GPU quota through the API server's whole chain over a real
// store: pods are refused at create with kube ResourceQuota's 403 once the
// quota is used up, terminal and deleted pods give their GPUs back, and
// concurrent creates admit only what fits.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/api_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

const std::string kPods = "/api/v1/namespaces/t/pods";
const std::string kH100 = "NVIDIA-H100-80GB-HBM3";

Options with_quota(std::string_view text) {
  Options o;
  auto q = gpu::parse_gpu_quota(text);
  REQUIRE(q.is_ok());
  o.gpu_quota = *q;
  return o;
}

http::Response call(ApiServer& api, const std::string& method, const std::string& target,
                    const json& body = nullptr,
                    const std::string& content_type = "application/json") {
  http::Request req = testing::request(method, target);
  req.peer = http::PeerCertificate{"admin", {"system:masters"}};
  if (!body.is_null()) {
    req.body = body.dump();
    req.headers.push_back({"Content-Type", content_type});
  }
  return api.handle(req);
}

json gpu_pod(const std::string& name, json limits, json spec_extra = json::object()) {
  json c = {{"name", "train"}, {"image", "cuda"}};
  if (!limits.empty()) c["resources"] = {{"limits", limits}};
  json spec = {{"containers", {c}}};
  spec.update(spec_extra);
  return {{"metadata", {{"name", name}}}, {"spec", spec}};
}

json gpus(int n) {
  return {{"nvidia.com/gpu", std::to_string(n)}};
}

struct Server : testing::ApiServerOverStore {
  explicit Server(std::string_view quota) : ApiServerOverStore(with_quota(quota)) {
    REQUIRE(call(*api, "POST", "/api/v1/namespaces", {{"metadata", {{"name", "t"}}}}).status ==
            201);
  }
  http::Response create(const json& pod, const std::string& query = "") {
    return call(*api, "POST", kPods + query, pod);
  }
  void created(const json& pod) {
    http::Response r = create(pod);
    INFO(r.body);
    REQUIRE(r.status == 201);
  }
  http::Response remove(const std::string& name, const std::string& query = "") {
    return call(*api, "DELETE", kPods + "/" + name + query);
  }
  void set_phase(const std::string& name, const std::string& phase) {
    http::Response r = call(*api, "PATCH", kPods + "/" + name + "/status",
                            {{"status", {{"phase", phase}}}}, "application/merge-patch+json");
    INFO(r.body);
    REQUIRE(r.status == 200);
  }
};

std::string message(const http::Response& r) {
  return json::parse(r.body).value("message", "");
}

const char* kFull =
    "pods \"train\" is forbidden: exceeded quota: vkube-gpu-quota, requested: "
    "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=7, limited: "
    "requests.nvidia.com/gpu=8";

}  // namespace

TEST_CASE("GPU pods past the tenant's quota are refused in kube ResourceQuota's words",
          "[apiserver]") {
  Server s("gpus=8");
  s.created(gpu_pod("a", gpus(4)));
  s.created(gpu_pod("b", gpus(3)));
  http::Response refused = s.create(gpu_pod("train", gpus(2)));
  CHECK(refused.status == 403);
  json status = json::parse(refused.body);
  CHECK(status["reason"] == "Forbidden");
  CHECK(status["code"] == 403);
  CHECK(status["message"] == kFull);
  CHECK(status["details"]["name"] == "train");
  CHECK(call(*s.api, "GET", kPods + "/train").status == 404);

  SECTION("what still fits is admitted; then nothing more") {
    s.created(gpu_pod("one", gpus(1)));
    CHECK(s.create(gpu_pod("two", gpus(1))).status == 403);
  }
  SECTION("pods without GPUs are not affected") {
    s.created(gpu_pod("web", {{"cpu", "1"}}));
    s.created(gpu_pod("web-2", json::object()));
  }
  SECTION("a dry run is checked but reserves nothing") {
    CHECK(s.create(gpu_pod("train", gpus(2)), "?dryRun=All").status == 403);
    CHECK(s.create(gpu_pod("dry", gpus(1)), "?dryRun=All").status == 201);
    CHECK(s.create(gpu_pod("dry-2", gpus(1)), "?dryRun=All").status == 201);
    s.created(gpu_pod("one", gpus(1)));
  }
  SECTION("a create that fails gives its reservation back") {
    CHECK(s.create(gpu_pod("a", gpus(1))).status == 409);  // the name is taken
    s.created(gpu_pod("one", gpus(1)));
  }
  SECTION("a pod that succeeded or failed no longer counts") {
    s.set_phase("a", "Running");
    CHECK(s.create(gpu_pod("train", gpus(2))).status == 403);
    s.set_phase("a", "Succeeded");
    s.created(gpu_pod("train", gpus(2)));
    s.set_phase("b", "Failed");
    s.created(gpu_pod("more", gpus(3)));
    s.created(gpu_pod("x", gpus(3)));  // 2 + 3 + 3
    CHECK(s.create(gpu_pod("y", gpus(1))).status == 403);
  }
  SECTION("a deleted pod gives its GPUs back") {
    REQUIRE(s.remove("a").status == 200);
    s.created(gpu_pod("train", gpus(2)));
    s.created(gpu_pod("c", gpus(3)));  // 3 + 2 + 3
    CHECK(s.create(gpu_pod("d", gpus(1))).status == 403);
  }
  SECTION("the quota is read back from the store by a restarted server") {
    s.api->shutdown();
    Options o = with_quota("gpus=8");
    o.backend = s.store.get();
    auto restarted = ApiServer::create(o);
    http::Response again = call(*restarted, "POST", kPods, gpu_pod("train", gpus(2)));
    CHECK(again.status == 403);
    CHECK(message(again) == kFull);
    CHECK(call(*restarted, "POST", kPods, gpu_pod("one", gpus(1))).status == 201);
    restarted->shutdown();
  }
}

TEST_CASE("a terminating pod counts until its grace period is over, as in kube", "[apiserver]") {
  Server s("gpus=2");
  s.created(gpu_pod("bound", gpus(2), {{"nodeName", "gpu-node-0"}}));
  // On a node, delete is graceful: the pod lingers, and still holds its GPUs.
  REQUIRE(s.remove("bound").status == 200);
  REQUIRE(call(*s.api, "GET", kPods + "/bound").status == 200);
  CHECK(s.create(gpu_pod("next", gpus(1))).status == 403);

  SECTION("until it is gone") {
    REQUIRE(s.remove("bound", "?gracePeriodSeconds=0").status == 200);
    s.created(gpu_pod("next", gpus(2)));
  }
  SECTION("or its grace period has passed (a lost node never confirms)") {
    REQUIRE(s.remove("bound", "?gracePeriodSeconds=1").status == 200);
    REQUIRE(call(*s.api, "GET", kPods + "/bound").status == 200);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while ((status = s.create(gpu_pod("next", gpus(2))).status) == 403 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(status == 201);
  }
}

TEST_CASE("GPU shares and model limits count as the quota says", "[apiserver]") {
  Server s("milli=1500,model:" + kH100 + "=2");
  json on_h100 = {{"nodeSelector", {{"nvidia.com/gpu.product", kH100}}}};
  s.created(gpu_pod("half", {{"vkube.io/gpu-milli", "500"}}));
  s.created(gpu_pod("big", gpus(1), on_h100));  // 500 + 1000: the milli are used up
  http::Response over = s.create(gpu_pod("quarter", {{"vkube.io/gpu-milli", "250"}}));
  CHECK(over.status == 403);
  CHECK(message(over) ==
        "pods \"quarter\" is forbidden: exceeded quota: vkube-gpu-quota, requested: "
        "requests.vkube.io/gpu-milli=250, used: requests.vkube.io/gpu-milli=1500, limited: "
        "requests.vkube.io/gpu-milli=1500");
}

TEST_CASE("a model limit counts only pods pinned to that model", "[apiserver]") {
  Server s("model:" + kH100 + "=2");
  json on_h100 = {{"nodeSelector", {{"nvidia.com/gpu.product", kH100}}}};
  s.created(gpu_pod("h1", gpus(2), on_h100));
  http::Response refused = s.create(gpu_pod("h2", gpus(1), on_h100));
  CHECK(refused.status == 403);
  CHECK(message(refused) ==
        "pods \"h2\" is forbidden: exceeded quota: vkube-gpu-quota, requested: "
        "requests.nvidia.com/gpu[model=NVIDIA-H100-80GB-HBM3]=1, used: "
        "requests.nvidia.com/gpu[model=NVIDIA-H100-80GB-HBM3]=2, limited: "
        "requests.nvidia.com/gpu[model=NVIDIA-H100-80GB-HBM3]=2");
  json affinity = {{"affinity",
                    {{"nodeAffinity",
                      {{"requiredDuringSchedulingIgnoredDuringExecution",
                        {{"nodeSelectorTerms",
                          {{{"matchExpressions",
                             {{{"key", "nvidia.com/gpu.product"},
                               {"operator", "In"},
                               {"values", {kH100, "NVIDIA-A100-SXM4-80GB"}}}}}}}}}}}}}}};
  CHECK(s.create(gpu_pod("either", gpus(1), affinity)).status == 403);
  s.created(gpu_pod("anywhere", gpus(4)));
  s.created(gpu_pod("a100", gpus(4),
                    {{"nodeSelector", {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}}}));
}

TEST_CASE("concurrent GPU pod creates admit exactly what fits", "[apiserver]") {
  Server s("gpus=8");
  std::atomic<int> created{0}, refused{0}, other{0};
  std::atomic<bool> go{false};  // all start together, so their checks overlap
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      while (!go) std::this_thread::yield();
      int code = s.create(gpu_pod("p-" + std::to_string(i), gpus(1))).status;
      (code == 201 ? created : code == 403 ? refused : other)++;
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  CHECK(created == 8);
  CHECK(refused == 8);
  CHECK(other == 0);
  http::Response list = call(*s.api, "GET", kPods);
  CHECK(json::parse(list.body)["items"].size() == 8);
}

}  // namespace vkube::apiserver
