// Tenants sharing the host's GPUs (issue 38): each namespace a tenant with a
// share (annotation vkube.io/gpu-share): borrowing idle GPUs, reclaiming
// them for a tenant within its share, limits that make pods wait instead of
// refusing them, gangs placed all or nothing, and a restarted scheduler that
// preempts nothing more.
#include <catch2/catch.hpp>

#include "support/control_plane.h"
#include "vkube/scheduler/scheduler.h"

namespace {

using json = nlohmann::json;
using vkube::testing::ControlPlane;

json node(const std::string& name, int gpus) {
  json n = {{"apiVersion", "v1"},
            {"kind", "Node"},
            {"metadata", {{"name", name}}},
            {"status",
             {{"allocatable",
               {{"cpu", "64"},
                {"memory", "512Gi"},
                {"pods", "110"},
                {"nvidia.com/gpu", std::to_string(gpus)}}},
              {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  n["status"]["capacity"] = n["status"]["allocatable"];
  return n;
}

json gpu_pod(const std::string& name, int gpus, json annotations = json::object(),
             int priority = 0) {
  json limits = {{"nvidia.com/gpu", std::to_string(gpus)}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"annotations", annotations}}},
          {"spec",
           {{"priority", priority},
            {"containers",
             json::array({{{"name", "c"},
                           {"image", "cuda"},
                           {"resources", {{"limits", limits}, {"requests", limits}}}}})}}}};
}

struct Pool {
  std::unique_ptr<vkube::scheduler::Scheduler> scheduler;
  ControlPlane cp;
  Pool()
      : cp({"namespace"}, nullptr, {[this](vkube::controllers::Informers& inf) {
             scheduler = vkube::scheduler::Scheduler::create(*cp.server.api, inf, {});
           }}) {
    REQUIRE(scheduler->start().is_ok());
  }
  ~Pool() { scheduler->stop(); }
  void settle() {
    REQUIRE(cp.manager->wait_idle(std::chrono::seconds(5)));
    REQUIRE(scheduler->wait_idle(std::chrono::seconds(5)));
    REQUIRE(cp.manager->wait_idle(std::chrono::seconds(5)));
  }
  void tenant(const std::string& ns, const std::string& share) {
    json meta = {{"name", ns}, {"labels", {{"vkube.io/tenant", ns.substr(6)}}}};
    if (!share.empty()) meta["annotations"] = {{"vkube.io/gpu-share", share}};
    cp.create("/api/v1/namespaces", {{"metadata", meta}});
  }
  void pods(const std::string& ns, const std::string& prefix, int n, json annotations = {},
            int priority = 0) {
    for (int i = 0; i < n; ++i)
      cp.create("/api/v1/namespaces/" + ns + "/pods",
                gpu_pod(prefix + std::to_string(i), 1,
                        annotations.is_null() ? json::object() : annotations, priority));
  }
  std::vector<json> list(const std::string& ns) {
    return cp.items("/api/v1/namespaces/" + ns + "/pods");
  }
  static bool bound(const json& p) { return !p["spec"].value("nodeName", "").empty(); }
  static bool terminating(const json& p) { return p["metadata"].contains("deletionTimestamp"); }
  int count(const std::string& ns, bool (*pred)(const json&)) {
    int n = 0;
    for (const json& p : list(ns)) n += pred(p) ? 1 : 0;
    return n;
  }
  // The kubelet's part: pods being deleted go.
  int finish_deletions(const std::string& ns) {
    int n = 0;
    for (const json& p : list(ns))
      if (terminating(p)) {
        auto a = cp.call("DELETE", "/api/v1/namespaces/" + ns + "/pods/" +
                                       p["metadata"]["name"].get<std::string>() +
                                       "?gracePeriodSeconds=0");
        n += a.code == 200 ? 1 : 0;
      }
    return n;
  }
  static std::string scheduled_message(const json& p) {
    for (const json& c : p["status"].value("conditions", json::array()))
      if (c.value("type", "") == "PodScheduled") return c.value("message", "");
    return "";
  }
  static bool disrupted(const json& p) {
    for (const json& c : p["status"].value("conditions", json::array()))
      if (c.value("type", "") == "DisruptionTarget" && c.value("status", "") == "True") return true;
    return false;
  }
};

bool borrowing(const json& p) {
  return p["metadata"].value("annotations", json::object()).contains("gpu.vkube.io/borrowing");
}

}  // namespace

TEST_CASE("a busy tenant borrows idle GPUs and gives them back to a tenant within its share",
          "[scheduler][fair-share]") {
  Pool f;
  f.cp.create("/api/v1/nodes", node("n1", 8));
  f.cp.create("/api/v1/nodes", node("n2", 8));
  f.tenant("vkube-alpha", "deserved=8");
  f.tenant("vkube-bravo", "deserved=8");
  f.settle();
  f.pods("vkube-bravo", "b", 16);
  f.settle();
  CHECK(f.count("vkube-bravo", Pool::bound) == 16);
  CHECK(f.count("vkube-bravo", borrowing) == 8);

  f.pods("vkube-alpha", "a", 8);
  f.settle();
  // Bravo's borrowed pods are told why and deleted with their grace period.
  int disrupted = 0;
  for (const json& p : f.list("vkube-bravo")) {
    if (!Pool::disrupted(p)) continue;
    ++disrupted;
    CHECK(Pool::terminating(p));
    CHECK(borrowing(p));  // the pods told they borrow are the ones reclaimed
    std::string m;
    for (const json& c : p["status"]["conditions"])
      if (c.value("type", "") == "DisruptionTarget") m = c.value("message", "");
    CHECK(m.find("another tenant's guaranteed GPU share") != std::string::npos);
    CHECK(m.find("alpha") == std::string::npos);  // never names the other tenant
  }
  CHECK(disrupted == 8);
  // Alpha's pods wait on the GPUs being freed; the message says so.
  for (const json& p : f.list("vkube-alpha")) {
    CHECK_FALSE(Pool::bound(p));
    CHECK(Pool::scheduled_message(p).find("tenant alpha uses 0 of 8 deserved GPUs") !=
          std::string::npos);
    CHECK(p["status"].value("nominatedNodeName", "") != "");
  }
  CHECK(f.finish_deletions("vkube-bravo") == 8);
  f.settle();
  CHECK(f.count("vkube-alpha", Pool::bound) == 8);
  CHECK(f.count("vkube-alpha", borrowing) == 0);
  // No late "waiting for" lands on a bound pod.
  for (const json& p : f.list("vkube-alpha"))
    for (const json& c : p["status"].value("conditions", json::array()))
      if (c.value("type", "") == "PodScheduled") CHECK(c.value("status", "") == "True");

  // Bravo's replacements wait: bravo is at its share and nothing is idle.
  f.pods("vkube-bravo", "again", 2);
  f.settle();
  CHECK(f.count("vkube-bravo", Pool::bound) == 8);
  for (const json& p : f.list("vkube-bravo"))
    if (!Pool::bound(p)) {
      std::string m = Pool::scheduled_message(p);
      CHECK(m.find("tenant bravo uses 8 of 8 deserved GPUs") != std::string::npos);
      CHECK(m.find("the pool has 0 idle GPUs") != std::string::npos);
    }
  // Nothing more was preempted.
  int total = 0;
  for (const json& p : f.list("vkube-bravo")) total += Pool::disrupted(p) ? 1 : 0;
  CHECK(total == 0);
  std::string metrics = f.scheduler->metrics();
  CHECK(metrics.find(
            "vkube_tenant_gpu_allocated_milli{tenant=\"alpha\",namespace=\"vkube-alpha\"} 8000") !=
        std::string::npos);
  CHECK(metrics.find("vkube_scheduler_preemptions_total 8") != std::string::npos);
}

TEST_CASE("a tenant at its limit waits instead of being refused", "[scheduler][fair-share]") {
  Pool f;
  f.cp.create("/api/v1/nodes", node("n1", 8));
  f.tenant("vkube-charlie", "deserved=1,limit=2");
  f.settle();
  f.pods("vkube-charlie", "c", 3);
  f.settle();
  CHECK(f.count("vkube-charlie", Pool::bound) == 2);
  for (const json& p : f.list("vkube-charlie"))
    if (!Pool::bound(p))
      CHECK(Pool::scheduled_message(p) ==
            "waiting for 1 GPU: tenant charlie is at its limit: uses 2 of its limit of 2 GPUs");
}

TEST_CASE("a gang is placed whole or not at all", "[scheduler][fair-share]") {
  Pool f;
  f.cp.create("/api/v1/nodes", node("n1", 4));
  f.tenant("vkube-delta", "deserved=4");
  f.settle();
  f.pods("vkube-delta", "solo", 2);
  f.settle();
  json gang = {{"vkube.io/pod-group", "train"}, {"vkube.io/pod-group-size", "4"}};
  f.pods("vkube-delta", "rank", 3, gang);
  f.settle();
  // Three of four exist: none is placed, though two would fit.
  CHECK(f.count("vkube-delta", Pool::bound) == 2);
  f.pods("vkube-delta", "rank-last", 1, gang);
  f.settle();
  CHECK(f.count("vkube-delta", Pool::bound) == 2);
  for (const json& p : f.list("vkube-delta"))
    if (!Pool::bound(p))
      CHECK(Pool::scheduled_message(p).find("pod group train: 4 pods with 4 GPUs are placed "
                                            "together, and only 2 fit now") != std::string::npos);
  // The two solo pods go: the whole gang starts.
  for (const char* name : {"solo0", "solo1"})
    REQUIRE(f.cp.call("DELETE", std::string("/api/v1/namespaces/vkube-delta/pods/") + name +
                                    "?gracePeriodSeconds=0")
                .code == 200);
  f.settle();
  CHECK(f.count("vkube-delta", Pool::bound) == 4);
}

TEST_CASE("within a tenant, a higher priority pod preempts a lower one",
          "[scheduler][fair-share]") {
  Pool f;
  f.cp.create("/api/v1/nodes", node("n1", 2));
  f.tenant("vkube-echo", "deserved=2");
  f.settle();
  f.pods("vkube-echo", "low", 2, {}, 0);
  f.settle();
  f.pods("vkube-echo", "high", 1, {}, 1000);
  f.settle();
  std::vector<std::string> disrupted;
  for (const json& p : f.list("vkube-echo"))
    if (Pool::disrupted(p)) disrupted.push_back(p["metadata"]["name"].get<std::string>());
  REQUIRE(disrupted.size() == 1);
  CHECK(disrupted[0].rfind("low", 0) == 0);
  CHECK(f.finish_deletions("vkube-echo") == 1);
  f.settle();
  for (const json& p : f.list("vkube-echo"))
    if (p["metadata"]["name"] == "high0") CHECK(Pool::bound(p));
}

TEST_CASE("a restarted scheduler preempts nothing more for a reclaim under way",
          "[scheduler][fair-share]") {
  Pool f;
  f.cp.create("/api/v1/nodes", node("n1", 4));
  f.tenant("vkube-alpha", "deserved=2");
  f.tenant("vkube-bravo", "deserved=2");
  f.settle();
  f.pods("vkube-bravo", "b", 4);
  f.settle();
  f.pods("vkube-alpha", "a", 2);
  f.settle();
  int disrupted = 0;
  for (const json& p : f.list("vkube-bravo")) disrupted += Pool::disrupted(p) ? 1 : 0;
  REQUIRE(disrupted == 2);
  // A fresh scheduler over the same objects (the victims still terminating).
  f.scheduler->stop();
  vkube::controllers::Informers informers(*f.cp.server.store);
  auto again = vkube::scheduler::Scheduler::create(*f.cp.server.api, informers, {});
  REQUIRE(informers.start().is_ok());
  REQUIRE(again->start().is_ok());
  REQUIRE(again->wait_idle(std::chrono::seconds(5)));
  disrupted = 0;
  for (const json& p : f.list("vkube-bravo")) disrupted += Pool::disrupted(p) ? 1 : 0;
  CHECK(disrupted == 2);
  CHECK(f.finish_deletions("vkube-bravo") == 2);
  REQUIRE(again->wait_idle(std::chrono::seconds(5)));
  for (int i = 0; i < 200 && f.count("vkube-alpha", Pool::bound) < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(f.count("vkube-alpha", Pool::bound) == 2);
  CHECK(f.count("vkube-bravo", Pool::bound) == 2);
  again->stop();
  informers.stop();
}

TEST_CASE("a gang within its tenant's share reclaims for all its pods, then starts whole",
          "[scheduler][fair-share]") {
  Pool f;
  f.cp.create("/api/v1/nodes", node("n1", 2));
  f.cp.create("/api/v1/nodes", node("n2", 2));
  f.tenant("vkube-alpha", "deserved=2");
  f.tenant("vkube-bravo", "deserved=2");
  f.settle();
  f.pods("vkube-bravo", "b", 4);
  f.settle();
  REQUIRE(f.count("vkube-bravo", borrowing) == 2);
  json gang = {{"vkube.io/pod-group", "train"}, {"vkube.io/pod-group-size", "2"}};
  f.pods("vkube-alpha", "rank", 2, gang);
  f.settle();
  int disrupted = 0;
  for (const json& p : f.list("vkube-bravo")) disrupted += Pool::disrupted(p) ? 1 : 0;
  CHECK(disrupted == 2);
  CHECK(f.count("vkube-alpha", Pool::bound) == 0);
  // "reclaiming 2 borrowed by other tenants for it", or, tried again while
  // the victims terminate, "GPUs borrowed by other tenants are being reclaimed for it".
  for (const json& p : f.list("vkube-alpha"))
    CHECK(Pool::scheduled_message(p).find("borrowed by other tenants") != std::string::npos);
  CHECK(f.finish_deletions("vkube-bravo") == 2);
  f.settle();
  CHECK(f.count("vkube-alpha", Pool::bound) == 2);
  disrupted = 0;
  for (const json& p : f.list("vkube-bravo")) disrupted += Pool::disrupted(p) ? 1 : 0;
  CHECK(disrupted == 0);
}

TEST_CASE("a model guarantee takes back GPUs of that model, and keeps them",
          "[scheduler][fair-share]") {
  Pool f;
  json h100 = node("h1", 4);
  h100["metadata"]["labels"] = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}};
  json a100 = node("a1", 4);
  a100["metadata"]["labels"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};
  f.cp.create("/api/v1/nodes", h100);
  f.cp.create("/api/v1/nodes", a100);
  f.tenant("vkube-alpha", "deserved=4,model:H100=2");
  f.tenant("vkube-bravo", "deserved=4");
  f.settle();
  auto pinned = [&](const std::string& ns, const std::string& name, const std::string& product) {
    json p = gpu_pod(name, 1);
    p["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", product}};
    f.cp.create("/api/v1/namespaces/" + ns + "/pods", p);
  };
  for (int i = 0; i < 4; ++i)
    pinned("vkube-bravo", "h" + std::to_string(i), "NVIDIA-H100-80GB-HBM3");
  for (int i = 0; i < 4; ++i)
    pinned("vkube-alpha", "a" + std::to_string(i), "NVIDIA-A100-SXM4-80GB");
  f.settle();
  REQUIRE(f.count("vkube-bravo", Pool::bound) == 4);
  REQUIRE(f.count("vkube-alpha", Pool::bound) == 4);
  // Alpha is at its fair share, but its H100 guarantee is unused: it takes one back.
  pinned("vkube-alpha", "train", "NVIDIA-H100-80GB-HBM3");
  f.settle();
  int disrupted = 0;
  for (const json& p : f.list("vkube-bravo")) disrupted += Pool::disrupted(p) ? 1 : 0;
  CHECK(disrupted == 1);
  CHECK(f.finish_deletions("vkube-bravo") == 1);
  f.settle();
  CHECK(f.count("vkube-alpha", Pool::bound) == 5);
  // Bravo, now below its fair share, wants an H100 back: alpha's is guaranteed, so it waits.
  pinned("vkube-bravo", "again", "NVIDIA-H100-80GB-HBM3");
  f.settle();
  disrupted = 0;
  for (const json& p : f.list("vkube-alpha")) disrupted += Pool::disrupted(p) ? 1 : 0;
  CHECK(disrupted == 0);
  CHECK(f.count("vkube-bravo", Pool::bound) == 3);
  for (const json& p : f.list("vkube-bravo"))
    if (!Pool::bound(p))
      CHECK(Pool::scheduled_message(p).find("the pool has 0 idle NVIDIA-H100-80GB-HBM3 GPUs") !=
            std::string::npos);
}

TEST_CASE("idle GPUs beyond deserved shares are split by weight", "[scheduler][fair-share]") {
  Pool f;
  f.cp.create("/api/v1/nodes", node("n1", 6));
  f.tenant("vkube-alpha", "deserved=0,weight=2");
  f.tenant("vkube-bravo", "deserved=0,weight=1");
  f.settle();
  f.pods("vkube-bravo", "b", 6);
  f.settle();
  REQUIRE(f.count("vkube-bravo", Pool::bound) == 6);
  // Both want the whole pool: alpha's weight gives it 4 of 6.
  f.pods("vkube-alpha", "a", 6);
  f.settle();
  int disrupted = 0;
  for (const json& p : f.list("vkube-bravo")) disrupted += Pool::disrupted(p) ? 1 : 0;
  CHECK(disrupted == 4);
  CHECK(f.finish_deletions("vkube-bravo") == 4);
  f.settle();
  CHECK(f.count("vkube-alpha", Pool::bound) == 4);
  CHECK(f.count("vkube-bravo", Pool::bound) == 2);
}

TEST_CASE("a pod wider than any node's free room gets a node held for it",
          "[scheduler][reservation]") {
  // Without a held node, small pods take each GPU that frees up and the wide
  // pod waits for ever, though the pool has enough idle GPUs for it.
  Pool f;
  f.cp.create("/api/v1/nodes", node("n1", 8));
  f.cp.create("/api/v1/nodes", node("n2", 8));
  f.tenant("vkube-echo", "");
  f.settle();
  f.pods("vkube-echo", "p", 14);  // binpack: 8 on one node, 6 on the other
  f.settle();
  REQUIRE(f.count("vkube-echo", Pool::bound) == 14);
  auto on = [&](const std::string& node) {
    std::vector<std::string> names;
    for (const json& p : f.list("vkube-echo"))
      if (p["spec"].value("nodeName", "") == node) names.push_back(p["metadata"]["name"]);
    return names;
  };
  auto remove = [&](const std::string& name) {
    REQUIRE(
        f.cp.call("DELETE", "/api/v1/namespaces/vkube-echo/pods/" + name + "?gracePeriodSeconds=0")
            .code == 200);
  };
  const std::string full = on("n1").size() == 8 ? "n1" : "n2";
  const std::string other = full == "n1" ? "n2" : "n1";
  for (int i = 0; i < 3; ++i) remove(on(full)[i]);  // full: 5 used, other: 6 used
  f.settle();
  f.cp.create("/api/v1/namespaces/vkube-echo/pods", gpu_pod("wide", 4));
  f.settle();
  json wide = f.cp.get("/api/v1/namespaces/vkube-echo/pods/wide");
  CHECK(!Pool::bound(wide));
  CHECK(wide["status"].value("nominatedNodeName", "") == full);
  CHECK(Pool::scheduled_message(wide).find("the pool has 5 idle GPUs; node " + full +
                                           " is held for it") != std::string::npos);
  // Small pods fill the other node, then wait instead of taking the held one.
  f.pods("vkube-echo", "s", 3);
  f.settle();
  CHECK(on(other).size() == 8);
  CHECK(on(full).size() == 5);
  int waiting = 0;
  for (const json& p : f.list("vkube-echo"))
    if (!Pool::bound(p) && p["metadata"]["name"] != "wide") {
      ++waiting;
      CHECK(Pool::scheduled_message(p).find("room held for pods waiting for it") !=
            std::string::npos);
    }
  CHECK(waiting == 1);
  // One pod leaves the held node: the wide pod fits there now, before the small one.
  remove(on(full)[0]);
  f.settle();
  wide = f.cp.get("/api/v1/namespaces/vkube-echo/pods/wide");
  CHECK(wide["spec"].value("nodeName", "") == full);
  CHECK(f.count("vkube-echo", Pool::bound) == 8 + 4 + 1);
}

TEST_CASE("a tenant gets one held node at a time", "[scheduler][reservation]") {
  // Sixteen nodes: up to two held at once, but not both for one tenant.
  Pool f;
  for (int i = 0; i < 16; ++i) f.cp.create("/api/v1/nodes", node("n" + std::to_string(i), 4));
  f.tenant("vkube-echo", "");
  f.tenant("vkube-fox", "");
  f.settle();
  for (int i = 0; i < 16; ++i)  // 3 of 4 GPUs used on every node
    f.cp.create("/api/v1/namespaces/vkube-echo/pods", gpu_pod("p" + std::to_string(i), 3));
  f.settle();
  REQUIRE(f.count("vkube-echo", Pool::bound) == 16);
  for (const char* name : {"wide-1", "wide-2"})
    f.cp.create("/api/v1/namespaces/vkube-echo/pods", gpu_pod(name, 2));
  f.cp.create("/api/v1/namespaces/vkube-fox/pods", gpu_pod("wide-3", 2));
  f.settle();
  int held_echo = 0;
  for (const json& p : f.list("vkube-echo"))
    held_echo += p["status"].value("nominatedNodeName", "").empty() ? 0 : 1;
  CHECK(held_echo == 1);
  json fox = f.cp.get("/api/v1/namespaces/vkube-fox/pods/wide-3");
  CHECK(!fox["status"].value("nominatedNodeName", "").empty());
}
