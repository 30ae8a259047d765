// apiregistration.k8s.io APIServices: which group versions this server serves itself ("Local",
// made for every built-in and CRD group version as kube's autoregister controller does) and
// which an aggregated API server behind a Service serves. Requests for the latter are proxied
// there (aggregator_proxy.cpp), their groups joined to discovery, and each APIService's
// Available condition follows what the last check or call found.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "request_info.h"
#include "vkube/http/server.h"
#include "vkube/storage/backend.h"
#include "webhook_dial.h"

namespace vkube::apiserver {

class Server;
struct UserInfo;

// One group version served by an aggregated API server.
struct RemoteApi {
  std::string name;  // the APIService: "<version>.<group>"
  std::string group, version;
  ClientConfig service;  // spec.service, caBundle, insecureSkipTLSVerify
  int group_priority = 0, version_priority = 0;
};

class Aggregator {
 public:
  ~Aggregator();
  // Starts the worker that syncs after changed() and after every APIService write (it watches
  // them), and checks unavailable servers again every few seconds (kube's availability
  // controller); stop() ends it. `s` outlives the worker.
  void start(Server& s);
  void stop();
  // The kinds served changed (a CRD was written): the worker syncs soon. Never blocks.
  void changed();

  // Reads every stored APIService again: which group versions are served remotely; creates
  // the Local APIServices missing for group versions this server serves, and removes the
  // automanaged ones of CRD group versions no longer served. Checks newly registered remote
  // ones. `create_local` false: only reads (at start-up, before the bootstrap objects exist).
  // Thread-safe; serialised.
  void sync(Server& s, bool create_local = true);

  // The aggregated server of a group version, if one is registered.
  std::optional<RemoteApi> remote(const std::string& group, const std::string& version) const;
  std::vector<RemoteApi> remotes() const;

  // Records what a check or a proxied call found; writes the APIService's Available
  // condition when it changes (reason Passed, or why not: ServiceNotFound, MissingEndpoints,
  // FailedDiscoveryCheck). Thread-safe.
  void report(Server& s, const RemoteApi& r, bool available, const std::string& reason,
              const std::string& message);
  // Whether the last check or call of `r` succeeded (true until one failed).
  bool available(const RemoteApi& r) const;

  // The APIResourceList the aggregated server gives for its group version, fetched at most
  // every few seconds; null when it cannot be reached (reported as unavailable).
  nlohmann::json resources(Server& s, const RemoteApi& r);

 private:
  struct Cached {
    nlohmann::json list;
    std::chrono::steady_clock::time_point at;
  };
  mutable std::mutex mu_;
  std::mutex sync_mu_;                        // one sync at a time
  std::map<std::string, RemoteApi> remotes_;  // by APIService name
  std::map<std::string, std::string> state_;  // name -> "True"/"False:<reason>"
  std::map<std::string, Cached> discovery_;   // name -> resources

  void run(Server& s);
  std::unique_ptr<storage::Watch> watch_api_services(Server& s);
  std::mutex wake_mu_;
  std::condition_variable wake_;
  bool dirty_ = false, stopping_ = false;  // guarded by wake_mu_
  std::thread worker_;
};

// The availability check kube's controller makes: the Service, its endpoints, then GET
// /apis/<group>/<version> within 5 s. Reports the outcome; returns the resource list on success.
nlohmann::json check_remote(Server& s, const RemoteApi& r);

// Serves a request for a group version an aggregated server serves (after authentication and
// authorization), or nullopt when the request is not for one: proxied with the user in
// X-Remote-User / X-Remote-Group, the client's credentials removed; 503 "service unavailable"
// when the Service cannot be reached.
std::optional<http::Response> proxy_aggregated(Server& s, http::Request& req,
                                               const RequestInfo& info, const UserInfo& user);

// Discovery of the aggregated groups the registry does not serve: APIGroup entries for /apis,
// or APIGroupDiscovery entries (aggregated discovery, resources fetched from each server).
std::vector<nlohmann::json> remote_api_groups(Server& s, bool aggregated_format);
// The APIGroup of /apis/<group> for a group only aggregated servers serve; null otherwise.
nlohmann::json remote_api_group(Server& s, const std::string& group);

}  // namespace vkube::apiserver
