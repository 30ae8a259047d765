// The Kubernetes-compatible API server of one tenant, above the transport:
// a function from http::Request to http::Response, built as kube-apiserver's
// handler chain (see ../shared/STYLE.md §2). main() wires it to a transport
// and a storage backend.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vkube/http/server.h"
#include "vkube/storage/backend.h"

namespace vkube::apiserver {

struct UserInfo {
  std::string name;
  std::vector<std::string> groups;
};

struct Options {
  storage::Backend* backend = nullptr;  // not owned; outlives the server
  // Static bearer tokens: token -> user.
  std::map<std::string, UserInfo> tokens;
  // Accept requests without credentials as system:anonymous (tests only).
  bool allow_anonymous = false;
  std::string version = "v1.32.0";  // gitVersion reported by /version
  // The cluster IP range services get addresses from.
  std::string service_cidr = "10.96.0.0/12";
  // Requests handled at once before 429 (mutating and read-only).
  size_t max_requests_inflight = 400;
  size_t max_mutating_inflight = 200;
};

class ApiServer {
 public:
  static std::unique_ptr<ApiServer> create(Options options);
  virtual ~ApiServer() = default;

  // Handles one request through the whole chain. Thread-safe.
  virtual http::Response handle(http::Request& request) = 0;
  // Marks the server ready (/readyz 200) or not.
  virtual void set_ready(bool ready) = 0;
  // Ends open watches and background loops (before the backend closes).
  virtual void shutdown() = 0;
};

}  // namespace vkube::apiserver
