// The API server's whole handler chain over a fresh RocksDB store in a
// temporary directory, for tests that send it requests in-process.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "support/temp_dir.h"
#include "vkube/apiserver/apiserver.h"
#include "vkube/storage/rocksdb_backend.h"

namespace vkube::testing {

struct ApiServerOverStore {
  TempDir dir;
  std::unique_ptr<storage::Backend> store;
  std::unique_ptr<apiserver::ApiServer> api;

  // `options.backend` is set to the store.
  explicit ApiServerOverStore(apiserver::Options options = {}) {
    storage::RocksDbOptions so;
    so.path = dir.sub("store");
    so.sync = false;
    auto s = storage::open_rocksdb(so);
    REQUIRE(s.is_ok());
    store = std::move(s).value();
    options.backend = store.get();
    api = apiserver::ApiServer::create(options);
  }
  ~ApiServerOverStore() {
    if (api) api->shutdown();
  }
};

// A request for `target` ("/path?query"), with path and query split out.
inline http::Request request(const std::string& method, const std::string& target) {
  http::Request req;
  req.method = method;
  req.target = target;
  auto q = target.find('?');
  req.path = target.substr(0, q);
  if (q != std::string::npos) req.query = target.substr(q + 1);
  return req;
}

// `method` on `target` as an admin (system:masters) in process, with a JSON
// `body` when given and an Accept header when `accept` is set.
inline http::Response admin_call(apiserver::ApiServer& api, const std::string& method,
                                 const std::string& target, std::string body = "",
                                 const std::string& accept = "") {
  http::Request req = request(method, target);
  req.peer = http::PeerCertificate{"admin", {"system:masters"}};
  if (!body.empty()) {
    req.body = std::move(body);
    req.headers.push_back({"Content-Type", "application/json"});
  }
  if (!accept.empty()) req.headers.push_back({"Accept", accept});
  return api.handle(req);
}

// boxes.example.com: a namespaced CRD serving v1 (stored) and v1beta1, any fields kept.
inline nlohmann::json boxes_crd() {
  return nlohmann::json::parse(R"({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "boxes.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"plural": "boxes", "kind": "Box"},
    "versions": [
      {"name": "v1", "served": true, "storage": true,
       "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
      {"name": "v1beta1", "served": true, "storage": false,
       "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})");
}

}  // namespace vkube::testing
