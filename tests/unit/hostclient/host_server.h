// A host cluster for the host client's tests: the repo's API server over a
// real store, served over HTTPS (certificates from pki::ensure_pki, as `vkube
// host` does), with an admin kubeconfig and two static tokens. The transport
// handler records requests and can shorten or refuse watches, so tests can
// force an informer through re-watches and 410 relists.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "support/api_server.h"
#include "vkube/hostclient/client.h"
#include "vkube/http/server.h"
#include "vkube/pki/pki.h"

namespace vkube::hostclient::testing {

using namespace std::chrono_literals;

constexpr const char* kAdminToken = "admin-token-0123456789";
constexpr const char* kNobodyToken = "nobody-token-0123456789";

inline apiserver::Options host_options() {
  apiserver::Options o;
  o.tokens[kAdminToken] = apiserver::UserInfo{"token-admin", {"system:masters"}, "u-admin"};
  o.tokens[kNobodyToken] = apiserver::UserInfo{"nobody", {}, "u-nobody"};
  return o;
}

struct HostServer : vkube::testing::ApiServerOverStore {
  pki::Bundle bundle;
  std::unique_ptr<http::Server> server;
  std::string kubeconfig;

  // Watches get timeoutSeconds=1 (they end and are resumed every second).
  std::atomic<bool> short_watches{false};
  // Watches are answered 503 (the informer is cut off from changes).
  std::atomic<bool> refuse_watches{false};
  std::atomic<int> refused{0};

  HostServer() : ApiServerOverStore(host_options()) {
    pki::PkiOptions po;
    po.dir = dir.path();
    auto b = pki::ensure_pki(po);
    REQUIRE(b.is_ok());
    bundle = *b;
    http::ServerOptions ho;
    ho.tls = http::TlsConfig{bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem};
    auto s = http::Server::start(ho, [this](http::Request& r) { return handle(r); });
    REQUIRE(s.is_ok());
    server = std::move(s).value();
    kubeconfig = dir.sub("admin.kubeconfig");
    REQUIRE(
        pki::write_kubeconfig(kubeconfig, "host", url(), bundle.ca.cert_pem, bundle.admin).is_ok());
  }
  ~HostServer() {
    server->shutdown(0ms);
    api->shutdown();
  }

  std::string url() const { return "https://127.0.0.1:" + std::to_string(server->port()); }

  // The config of the written kubeconfig (client certificate, system:masters).
  Config admin_config() const {
    auto c = from_kubeconfig(kubeconfig);
    REQUIRE(c.is_ok());
    return *c;
  }

  std::unique_ptr<Client> admin_client(Options o = {}) const {
    auto c = Client::create(admin_config(), o);
    REQUIRE(c.is_ok());
    return std::move(c).value();
  }

  // Targets received so far, in order.
  std::vector<std::string> targets() const {
    std::lock_guard lock(mu_);
    return targets_;
  }
  size_t count(const std::string& needle) const {
    size_t n = 0;
    for (const std::string& t : targets())
      if (t.find(needle) != std::string::npos) ++n;
    return n;
  }

 private:
  http::Response handle(http::Request& r) {
    {
      std::lock_guard lock(mu_);
      targets_.push_back(r.method + " " + r.target);
    }
    bool watch = r.query.find("watch=1") != std::string::npos;
    if (watch && refuse_watches) {
      ++refused;
      http::Response resp;
      resp.status = 503;
      resp.set_header("Content-Type", "application/json");
      resp.body = R"({"kind":"Status","apiVersion":"v1","status":"Failure","code":503})";
      return resp;
    }
    if (watch && short_watches) {
      static const std::regex kTimeout("timeoutSeconds=[0-9]+");
      r.query = std::regex_replace(r.query, kTimeout, "timeoutSeconds=1");
      r.target = std::regex_replace(r.target, kTimeout, "timeoutSeconds=1");
    }
    return api->handle(r);
  }

  mutable std::mutex mu_;
  std::vector<std::string> targets_;
};

// Polls `cond` every 10 ms for up to `timeout`.
template <typename F>
bool eventually(F cond, std::chrono::milliseconds timeout = 10s) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return cond();
}

inline json config_map(const std::string& ns, const std::string& name, json labels = json::object(),
                       json data = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", std::move(labels)}}},
          {"data", std::move(data)}};
}

inline void make_namespace(Client& c, const std::string& name) {
  Response r = c.call("POST", "/api/v1/namespaces", {{"metadata", {{"name", name}}}});
  INFO(r.message());
  REQUIRE(r.code == 201);
}

}  // namespace vkube::hostclient::testing
