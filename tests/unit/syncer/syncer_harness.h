// A host and a tenant for the syncer's unit tests: the host is a real API
// server served over HTTP whose transport can fail on purpose (503 to
// everything, 429 to creates) or answer a request itself (intercept); the
// tenant is an API server in process with its informers and a syncer.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "support/api_server.h"
#include "vkube/controllers/informers.h"
#include "vkube/hostclient/client.h"
#include "vkube/http/server.h"
#include "vkube/syncer/syncer.h"

namespace vkube::testing::syncer_harness {

using json = nlohmann::json;
using namespace std::chrono_literals;
using vkube::testing::ApiServerOverStore;
using vkube::testing::request;

inline json admin_call(vkube::apiserver::ApiServer& api, const std::string& method,
                       const std::string& target, const json& body = nullptr) {
  vkube::http::Request req = request(method, target);
  req.peer = vkube::http::PeerCertificate{"admin", {"system:masters"}};
  if (!body.is_null()) {
    req.body = body.dump();
    req.headers.push_back({"Content-Type", "application/json"});
  }
  vkube::http::Response resp = api.handle(req);
  json out = json::parse(resp.body, nullptr, false);
  return {{"code", resp.status}, {"body", out.is_discarded() ? json() : out}};
}

// The host: an API server over HTTP whose transport can fail on purpose, and
// which counts the pods it created by name.
struct FlakyHost {
  ApiServerOverStore host;
  std::unique_ptr<vkube::http::Server> server;
  std::atomic<bool> down{false};         // 503 to everything
  std::atomic<int> throttle_creates{0};  // this many POSTs get 429 (Retry-After: 1)
  std::mutex mu;
  std::map<std::string, int> pods_created;  // host pod name -> successful creates
  // Answers a request in the host's place when it returns a response.
  std::function<std::optional<vkube::http::Response>(vkube::http::Request&)> intercept;

  FlakyHost() {
    vkube::http::ServerOptions o;
    o.host = "127.0.0.1";
    auto s = vkube::http::Server::start(o, [this](vkube::http::Request& r) { return handle(r); });
    REQUIRE(s.is_ok());
    server = std::move(s).value();
  }
  ~FlakyHost() { server->shutdown(0ms); }

  vkube::http::Response handle(vkube::http::Request& r) {
    auto fail = [](int code) {
      vkube::http::Response resp;
      resp.status = code;
      resp.set_header("Content-Type", "application/json");
      if (code == 429) resp.set_header("Retry-After", "1");
      resp.body = R"({"kind":"Status","apiVersion":"v1","status":"Failure","code":)" +
                  std::to_string(code) + "}";
      return resp;
    };
    if (down) return fail(503);
    if (r.method == "POST" && throttle_creates > 0) {
      --throttle_creates;
      return fail(429);
    }
    r.peer = vkube::http::PeerCertificate{"admin", {"system:masters"}};
    decltype(intercept) hook;
    {
      std::lock_guard lock(mu);
      hook = intercept;
    }
    if (hook)
      if (auto answer = hook(r)) return std::move(*answer);
    // A create is counted under the lock it is made in, so creates() never
    // reads the count of a pod the host already lists before it is counted.
    std::unique_lock create_lock(mu, std::defer_lock);
    const bool pod_create = r.method == "POST" && r.path.ends_with("/pods");
    if (pod_create) create_lock.lock();
    vkube::http::Response resp = host.api->handle(r);
    if (pod_create && resp.status == 201) {
      json pod = json::parse(resp.body);
      ++pods_created[pod["metadata"]["name"].get<std::string>()];
    }
    return resp;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server->port()); }
  int creates(const std::string& name) {
    std::lock_guard lock(mu);
    return pods_created[name];
  }
  size_t pods() {
    json r = admin_call(*host.api, "GET", "/api/v1/namespaces/vkube-t/pods");
    return r["body"]["items"].size();
  }
};

// A tenant (API server and informers) with a syncer to `host`.
struct Tenant {
  ApiServerOverStore& api;
  std::unique_ptr<vkube::controllers::Informers> informers;
  std::unique_ptr<vkube::syncer::Syncer> syncer;

  static vkube::syncer::SyncerOptions defaults() {
    vkube::syncer::SyncerOptions so;
    so.tenant = "t";
    so.host_namespace = "vkube-t";
    return so;
  }

  Tenant(ApiServerOverStore& tenant_api, FlakyHost& host,
         vkube::syncer::SyncerOptions so = defaults())
      : api(tenant_api) {
    vkube::hostclient::Config config;
    config.server = host.url();
    vkube::hostclient::Options o;
    o.retry_for = 2s;
    auto client = vkube::hostclient::Client::create(config, o);
    REQUIRE(client.is_ok());
    syncer = vkube::syncer::Syncer::create(so, std::move(client).value());
    informers = std::make_unique<vkube::controllers::Informers>(*api.store);
    syncer->attach(*api.api, *informers);
    REQUIRE(informers->start().is_ok());
    REQUIRE(syncer->start().is_ok());
  }
  ~Tenant() {
    syncer->stop();
    informers->stop();
  }
  void create_pod(const std::string& name) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}}},
                {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
    REQUIRE(admin_call(*api.api, "POST", "/api/v1/namespaces/default/pods", pod)["code"] == 201);
  }
};

// A JSON merge patch as admin (admin_call sends application/json bodies);
// the response's status code.
inline int merge_patch(ApiServerOverStore& api, const std::string& target, const json& body) {
  vkube::http::Request req = request("PATCH", target);
  req.peer = vkube::http::PeerCertificate{"admin", {"system:masters"}};
  req.body = body.dump();
  req.headers.push_back({"Content-Type", "application/merge-patch+json"});
  vkube::http::Response resp = api.api->handle(req);
  INFO(resp.body);
  return resp.status;
}

// A node on the host, for host pods to be bound to.
inline void add_host_node(FlakyHost& host, const std::string& name) {
  REQUIRE(admin_call(
              *host.host.api, "POST", "/api/v1/nodes",
              {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}})["code"] ==
          201);
}

// Binds the host pod at `path` (".../pods/NAME") to `node`, as the host's scheduler does.
inline void bind_host_pod(FlakyHost& host, const std::string& path, const std::string& node) {
  REQUIRE(admin_call(*host.host.api, "POST", path + "/binding",
                     {{"apiVersion", "v1"},
                      {"kind", "Binding"},
                      {"metadata", {{"name", path.substr(path.rfind('/') + 1)}}},
                      {"target", {{"kind", "Node"}, {"name", node}}}})["code"] == 201);
}

inline bool eventually(const std::function<bool()>& f, std::chrono::milliseconds timeout = 15s) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return f();
}

inline void make_default_namespace(ApiServerOverStore& api) {
  REQUIRE(admin_call(*api.api, "POST", "/api/v1/namespaces",
                     {{"metadata", {{"name", "default"}}}})["code"] == 201);
}

}  // namespace vkube::testing::syncer_harness
