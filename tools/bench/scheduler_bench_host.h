// What bench_scheduler's modes share: the flags, one host control plane in
// process (RocksDB, watch cache, the API server's handler chain, the
// controllers, the scheduler, optionally simulated nodes) and helpers.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/apiserver/apiserver.h"
#include "vkube/common/log.h"
#include "vkube/controllers/manager.h"
#include "vkube/gpu/node_spec.h"
#include "vkube/gpu/resources.h"
#include "vkube/nodesim/simulator.h"
#include "vkube/scheduler/scheduler.h"
#include "vkube/storage/rocksdb_backend.h"
#include "vkube/storage/watch_cache.h"

#ifndef VKUBE_TRACE_DIR
#define VKUBE_TRACE_DIR "../shared/traces/alibaba-gpu-v2023"
#endif

namespace vkube::bench {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Flags {
  std::string mode = "throughput";
  int nodes = 1000;
  int pods = 10000;
  std::string policy = "binpack";
  bool sync = true;
  std::string pods_csv = std::string(VKUBE_TRACE_DIR) + "/openb_pod_list_default.csv";
  std::string nodes_csv = std::string(VKUBE_TRACE_DIR) + "/openb_node_list_gpu_node.csv";
  std::string trace_mode = "fill";
  double seconds = 60;
  double load = 1.2;
  double from_day = 0;
  // reclaim
  int reclaims = 100;
  int grace = 0;  // the borrowing pods' terminationGracePeriodSeconds
  // queues
  int tenants = 50;
  int repeat = 1;
};

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One host control plane in process.
struct Host {
  std::string dir;
  std::unique_ptr<storage::Backend> store, cache;
  std::unique_ptr<apiserver::ApiServer> api;
  std::unique_ptr<controllers::ControllerManager> manager;
  std::unique_ptr<scheduler::Scheduler> sched;
  std::unique_ptr<nodesim::Simulator> sim;

  explicit Host(bool sync) {
    char tmpl[] = "/tmp/vkube-bench-scheduler-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::exit(1);
    dir = tmpl;
    storage::RocksDbOptions so;
    so.path = dir + "/store";
    so.sync = sync;
    auto s = storage::open_rocksdb(so);
    if (!s.is_ok()) {
      std::fprintf(stderr, "open: %s\n", s.status().message().c_str());
      std::exit(1);
    }
    store = std::move(s).value();
    cache = std::move(storage::make_watch_cache(*store)).value();
    apiserver::Options ao;
    ao.backend = cache.get();
    api = apiserver::ApiServer::create(ao);
    for (const char* ns : {"default", "kube-system", "kube-node-lease", "tenant-0", "tenant-1",
                           "tenant-2", "tenant-3"})
      call("POST", "/api/v1/namespaces", {{"metadata", {{"name", ns}}}});
  }
  ~Host() {
    if (sim) sim->stop();
    if (sched) sched->stop();
    if (manager) manager->stop();
    api->shutdown();
    api.reset();
    cache.reset();
    store.reset();
    std::filesystem::remove_all(dir);
  }

  // Starts the controllers, the scheduler and (with `nodes`) simulated nodes.
  // `watch` registers the bench's own informer handlers.
  void start(scheduler::Options so, std::vector<gpu::NodeSpec>* nodes,
             const std::function<void(controllers::Informers&)>& watch = nullptr) {
    controllers::ManagerOptions mo;
    mo.attach.push_back([&](controllers::Informers& inf) {
      if (watch) watch(inf);
      sched = scheduler::Scheduler::create(*api, inf, so);
      if (nodes != nullptr) {
        nodesim::Options no;
        no.nodes = *nodes;
        sim = nodesim::Simulator::create(*api, inf, std::move(no));
      }
    });
    auto m = controllers::ControllerManager::start(*api, *cache, mo);
    if (!m.is_ok()) {
      std::fprintf(stderr, "controllers: %s\n", m.status().message().c_str());
      std::exit(1);
    }
    manager = std::move(m).value();
    if (!sched->start().is_ok()) std::exit(1);
    if (sim) {
      Status s = sim->start();
      if (!s.is_ok()) {
        std::fprintf(stderr, "simulated nodes: %s\n", s.message().c_str());
        std::exit(1);
      }
    }
  }

  http::Response call(const std::string& method, const std::string& target,
                      const json& body = nullptr) {
    http::Request req;
    req.method = method;
    auto q = target.find('?');
    req.target = target;
    req.path = target.substr(0, q);
    if (q != std::string::npos) req.query = target.substr(q + 1);
    req.peer = http::PeerCertificate{"bench", {"system:masters"}};
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.push_back({"Content-Type", "application/json"});
    }
    return api->handle(req);
  }
};

// Runs fn(i) for i in [0, n) on `threads` threads.
inline void parallel(int n, int threads, const std::function<void(int)>& fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < n;) fn(i);
    });
  for (auto& t : ts) t.join();
}

inline json pod_object(const std::string& ns, const std::string& name, int64_t cpu_milli,
                       int64_t mem_mib, int gpus, int gpu_milli,
                       const std::vector<std::string>& products = {}) {
  json limits = json::object(), requests = {{"cpu", std::to_string(cpu_milli) + "m"},
                                            {"memory", std::to_string(mem_mib) + "Mi"}};
  if (gpus >= 1 && gpu_milli > 0 && gpu_milli < 1000)
    limits["vkube.io/gpu-milli"] = std::to_string(gpu_milli);
  else if (gpus >= 1)
    limits["nvidia.com/gpu"] = std::to_string(gpus);
  for (auto& [k, v] : limits.items()) requests[k] = v;
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec",
               {{"containers",
                 json::array({{{"name", "main"},
                               {"image", "trace"},
                               {"resources", {{"requests", requests}, {"limits", limits}}}}})},
                {"terminationGracePeriodSeconds", 0}}}};
  if (!products.empty())
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        {"nodeSelectorTerms",
         json::array({{{"matchExpressions", json::array({{{"key", "nvidia.com/gpu.product"},
                                                          {"operator", "In"},
                                                          {"values", products}}})}}})}};
  return pod;
}

inline void report(const char* what, double value, const char* unit, double target) {
  std::printf("%-52s %10.1f %-6s (target >= %g) %s\n", what, value, unit, target,
              value >= target ? "ok" : "MISS");
  std::fflush(stdout);
}

inline bool wait_scheduled(Host& h, int64_t n, double timeout_s) {
  auto t0 = Clock::now();
  while (h.sched->gpu_state().scheduled < n) {
    if (seconds_since(t0) > timeout_s) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// The throughput mix: 40% one GPU, 40% half a GPU, 20% CPU only.
inline json throughput_pod(int i, const std::string& ns = "default") {
  int kind = i % 5;
  int gpus = kind < 4 ? 1 : 0;
  int milli = kind < 2 ? 1000 : kind < 4 ? 500 : 0;
  return pod_object(ns, "p-" + std::to_string(i), 1000, 2048, gpus, milli);
}

inline void create_nodes(Host& h, int n) {
  gpu::PoolFlags pf;
  pf.count = n;
  pf.prefix = "gpu-node";
  auto specs = gpu::pool_from_flags(pf);
  if (!specs.is_ok()) std::exit(1);
  gpu::assign_addresses(*specs);
  parallel(n, 16, [&](int i) {
    json node = gpu::node_object((*specs)[i], "2026-12-01T00:00:00Z");
    h.call("POST", "/api/v1/nodes", node);
  });
}

// scheduler_share_bench.cpp
int run_reclaim(const Flags& f);
int run_queues(const Flags& f, gpu::Policy policy);

}  // namespace vkube::bench
