// An API server over a fresh store plus the controller manager, in process,
// for controller tests: send requests as an admin, act as a kubelet (mark
// pods Running/Ready, Succeeded or Failed), wait for the controllers.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/api_server.h"
#include "vkube/controllers/manager.h"

namespace vkube::testing {

struct ControlPlane {
  using json = nlohmann::json;
  struct Answer {
    int code = 0;
    json body;
  };

  ApiServerOverStore server;
  std::unique_ptr<controllers::ControllerManager> manager;

  // Starts the named controllers (empty: all) over a server holding the
  // namespaces "default" and "w".
  // `attach` registers more components (the scheduler, simulated nodes) on
  // the manager's informers before they start.
  explicit ControlPlane(std::vector<std::string> names = {},
                        std::function<std::chrono::system_clock::time_point()> now = {},
                        std::vector<std::function<void(controllers::Informers&)>> attach = {}) {
    for (const char* ns : {"default", "w"})
      REQUIRE(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", ns}}}}).code == 201);
    controllers::ManagerOptions o;
    o.controllers = std::move(names);
    o.now = std::move(now);
    o.attach = std::move(attach);
    o.root_ca_pem = "-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----\n";
    auto m = controllers::ControllerManager::start(*server.api, *server.store, o);
    REQUIRE(m.is_ok());
    manager = std::move(m).value();
  }
  ~ControlPlane() {
    if (manager) manager->stop();
  }

  Answer call(const std::string& method, const std::string& target, const json& body = nullptr,
              const std::string& content_type = "application/json") {
    http::Request req = request(method, target);
    req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.push_back({"Content-Type", content_type});
    }
    http::Response resp = server.api->handle(req);
    Answer a{resp.status, json::parse(resp.body, nullptr, false)};
    if (a.body.is_discarded()) a.body = nullptr;
    return a;
  }
  // GET that must answer 200.
  json get(const std::string& target) {
    Answer a = call("GET", target);
    INFO(target << " -> " << a.body.dump());
    REQUIRE(a.code == 200);
    return a.body;
  }
  // POST to a collection that must answer 201.
  json create(const std::string& collection, const json& obj) {
    Answer a = call("POST", collection, obj);
    INFO(collection << " -> " << a.body.dump());
    REQUIRE(a.code == 201);
    return a.body;
  }
  // items of a list (optionally with a query such as "?labelSelector=app%3Dweb").
  std::vector<json> items(const std::string& target) {
    return get(target)["items"].get<std::vector<json>>();
  }

  // PATCH that must answer 200 (the server absorbs races with concurrent
  // writers itself: a 409 here is a server bug, not something to retry).
  void must_patch(const std::string& target, const json& body,
                  const std::string& type = "application/strategic-merge-patch+json") {
    Answer a = call("PATCH", target, body, type);
    INFO(target << " -> " << a.body.dump());
    REQUIRE(a.code == 200);
  }

  // The kubelet's part: sets a pod's phase, its Ready condition and an IP.
  // With `gone_ok`, a pod deleted meanwhile (404) is no failure.
  void set_pod_status(const std::string& ns, const std::string& name, const std::string& phase,
                      bool ready, bool gone_ok = false) {
    static int next_ip = 1;
    std::string now = "2026-01-01T00:00:00Z";
    json status = {
        {"phase", phase},
        {"podIP", "10.244.0." + std::to_string(next_ip % 250 + 1)},
        {"conditions",
         {{{"type", "Ready"}, {"status", ready ? "True" : "False"}, {"lastTransitionTime", now}},
          {{"type", "ContainersReady"}, {"status", ready ? "True" : "False"}, {"lastTransitionTime", now}}}}};
    ++next_ip;
    Answer a = call("PATCH", "/api/v1/namespaces/" + ns + "/pods/" + name + "/status",
                    {{"status", status}}, "application/merge-patch+json");
    INFO(a.body.dump());
    if (gone_ok && a.code == 404) return;
    REQUIRE(a.code == 200);
  }
  // Marks every pod of `ns` that is not yet Running+Ready as such (pods the
  // controllers delete meanwhile are skipped).
  int mark_pods_ready(const std::string& ns) {
    int n = 0;
    for (const json& p : items("/api/v1/namespaces/" + ns + "/pods")) {
      bool ready = false;
      for (const json& c : p["status"].value("conditions", json::array()))
        ready |= c.value("type", "") == "Ready" && c.value("status", "") == "True";
      if (ready || p["metadata"].contains("deletionTimestamp")) continue;
      set_pod_status(ns, p["metadata"]["name"], "Running", true, /*gone_ok=*/true);
      ++n;
    }
    return n;
  }

  // Calls `condition` every 10 ms until it holds; false on timeout.
  static bool eventually(const std::function<bool()>& condition,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (condition()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return condition();
  }
};

}  // namespace vkube::testing
