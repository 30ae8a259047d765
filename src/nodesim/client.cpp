#include "client.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace vkube::nodesim {

ApiResult Client::call(std::string_view method, std::string_view target, const json& body,
                       std::string_view content_type) {
  http::Request req;
  req.method = std::string(method);
  req.target = std::string(target);
  auto q = target.find('?');
  req.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) req.query = std::string(target.substr(q + 1));
  // A node's own identity (system:node:<name>) would need the Node
  // authorizer, which vkube does not have; the simulator is part of the
  // control plane anyway.
  req.peer = http::PeerCertificate{"system:vkube-node-simulator", {"system:masters"}};
  req.remote = "in-process";
  req.headers.push_back({"User-Agent", "kubelet/v1.32.0 (linux/amd64) vkube-node-simulator"});
  if (!body.is_null()) {
    req.body = body.dump();
    req.headers.push_back({"Content-Type", std::string(content_type)});
  }
  http::Response resp = api_.handle(req);
  ApiResult r;
  r.code = resp.status;
  r.body = json::parse(resp.body, nullptr, false);
  if (r.body.is_discarded()) r.body = nullptr;
  return r;
}

void parallel(controllers::WritePool& pool, size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (n == 1) return fn(0);
  struct Shared {
    std::atomic<size_t> next{0};
    std::mutex mu;
    std::condition_variable cv;
    size_t running = 0;
  };
  auto shared = std::make_shared<Shared>();
  auto runner = [shared, n, &fn] {
    for (size_t i; (i = shared->next.fetch_add(1)) < n;) fn(i);
  };
  size_t helpers = std::min(n - 1, pool.size());
  shared->running = helpers;
  for (size_t h = 0; h < helpers; ++h) {
    pool.submit([shared, runner] {
      runner();
      std::lock_guard lock(shared->mu);
      if (--shared->running == 0) shared->cv.notify_all();
    });
  }
  runner();
  std::unique_lock lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->running == 0; });
}

std::string node_path(std::string_view name, std::string_view subresource) {
  std::string p = "/api/v1/nodes";
  if (!name.empty()) p.append("/").append(name);
  if (!subresource.empty()) p.append("/").append(subresource);
  return p;
}

std::string lease_path(std::string_view name) {
  std::string p = "/apis/coordination.k8s.io/v1/namespaces/";
  p.append(kLeaseNamespace).append("/leases");
  if (!name.empty()) p.append("/").append(name);
  return p;
}

std::string pod_path(std::string_view ns, std::string_view name, std::string_view subresource) {
  std::string p = "/api/v1/namespaces/";
  p.append(ns).append("/pods/").append(name);
  if (!subresource.empty()) p.append("/").append(subresource);
  return p;
}

}  // namespace vkube::nodesim
