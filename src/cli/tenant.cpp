#include "tenant.h"

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "vkube/apiserver/apiserver.h"
#include "vkube/common/log.h"
#include "vkube/common/memory.h"
#include "vkube/controllers/manager.h"
#include "vkube/gpu/quota.h"
#include "vkube/pki/pki.h"
#include "vkube/schema/schema.h"
#include "vkube/storage/rocksdb_backend.h"
#include "vkube/storage/watch_cache.h"

namespace vkube::cli {

namespace {
// Milliseconds since the tenant began to start (the start-up timeline at
// --log-level debug).
double since_start_ms() {
  static const auto t0 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

namespace {

Status split_listen(const std::string& listen, std::string* host, uint16_t* port) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) return Status::invalid("--listen must be HOST:PORT, got '" + listen + "'");
  *host = listen.substr(0, colon);
  if (host->size() > 2 && host->front() == '[') *host = host->substr(1, host->size() - 2);
  try {
    int p = std::stoi(listen.substr(colon + 1));
    if (p < 0 || p > 65535) throw std::out_of_range("port");
    *port = static_cast<uint16_t>(p);
  } catch (...) {
    return Status::invalid("--listen: bad port in '" + listen + "'");
  }
  return Status::ok();
}

// The address the default/kubernetes endpoints name: the listen address
// when it is one IPv4 address, else loopback (where the server answers).
std::string advertised_ipv4(const std::string& host) {
  in_addr a{};
  if (host == "0.0.0.0" || inet_pton(AF_INET, host.c_str(), &a) != 1) return "127.0.0.1";
  return host;
}

class TenantImpl final : public Tenant {
 public:
  ~TenantImpl() override { stop(std::chrono::milliseconds(0)); }

  uint16_t port() const override { return server_->port(); }
  std::string url() const override {
    std::string h = host_ == "0.0.0.0" || host_.empty() ? "127.0.0.1" : host_;
    if (h.find(':') != std::string::npos) h = "[" + h + "]";
    return "https://" + h + ":" + std::to_string(port());
  }
  std::string kubeconfig_path() const override { return kubeconfig_; }

  void stop(std::chrono::milliseconds grace) override {
    if (stopped_.exchange(true)) return;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    if (compactor_.joinable()) compactor_.join();
    for (auto it = components_.rbegin(); it != components_.rend(); ++it)
      if (it->stop) it->stop();
    if (controllers_) controllers_->stop();
    if (api_) api_->shutdown();
    if (server_) server_->shutdown(grace);
    controllers_.reset();
    server_.reset();
    api_.reset();
    cache_.reset();
    store_.reset();
    VKUBE_LOG(info, "tenant stopped", {"name", name_});
  }

  Status init(const TenantOptions& o) {
    name_ = o.name;
    (void)since_start_ms();
    // The type registry (a few ms to index) is built while the store opens.
    std::thread([] { (void)schema::Registry::get(); }).detach();
    VKUBE_RETURN_IF_ERROR(split_listen(o.listen, &host_, &listen_port_));
    std::error_code ec;
    std::filesystem::create_directories(o.data_dir, ec);
    if (ec) return Status::unavailable("cannot create " + o.data_dir + ": " + ec.message());

    // Certificates are made (or loaded) while the store opens.
    pki::PkiOptions po;
    po.dir = o.data_dir;
    po.hosts = o.tls_sans;
    if (host_ != "0.0.0.0" && host_ != "::" && !host_.empty()) po.hosts.insert(po.hosts.begin(), host_);
    auto pki_done = std::async(std::launch::async, [po] { return pki::ensure_pki(po); });

    storage::RocksDbOptions so;
    so.path = o.data_dir + "/store";
    so.sync = o.sync;
    auto store = storage::open_rocksdb(so);
    auto bundle = pki_done.get();
    if (!store.is_ok()) return store.status();
    store_ = std::move(store).value();
    VKUBE_LOG(debug, "start: store open", {"ms", since_start_ms()});
    auto cache = storage::make_watch_cache(*store_);
    if (!cache.is_ok()) return cache.status();
    cache_ = std::move(cache).value();
    if (!bundle.is_ok()) return bundle.status();
    VKUBE_LOG(debug, "start: certificates ready", {"ms", since_start_ms()});

    apiserver::Options ao;
    ao.backend = cache_.get();
    ao.pod_security = o.pod_security;
    ao.service_cidr = o.service_cidr;
    ao.max_requests_inflight = o.max_requests_inflight;
    ao.max_mutating_inflight = o.max_mutating_inflight;
    ao.max_read_bytes_inflight = o.max_read_bytes_inflight;
    auto gpu_quota = gpu::parse_gpu_quota(o.gpu_quota);
    if (!gpu_quota.is_ok()) return gpu_quota.status();
    ao.gpu_quota = std::move(gpu_quota).value();
    ao.host_policy = o.host_policy;
    ao.metrics_api = o.metrics_api;
    auto sa_key = pki::ensure_service_account_key(o.data_dir, o.service_account_signing_alg);
    if (!sa_key.is_ok()) return sa_key.status();
    ao.service_account_key = std::move(sa_key).value();
    if (!o.token_auth_file.empty()) {
      auto tokens = apiserver::load_token_file(o.token_auth_file);
      if (!tokens.is_ok()) return tokens.status();
      ao.tokens = std::move(tokens).value();
      VKUBE_LOG(info, "static tokens loaded", {"file", o.token_auth_file},
                {"tokens", ao.tokens.size()});
    }
    api_ = apiserver::ApiServer::create(ao);

    http::ServerOptions ho;
    ho.host = host_;
    ho.port = listen_port_;
    // TLS and HTTP framing run on the I/O threads: one per core, up to four,
    // so that a watch event's fan-out or a burst of requests uses the cores.
    ho.io_threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
    ho.tls = http::TlsConfig{bundle->serving.cert_pem, bundle->serving.key_pem, bundle->ca.cert_pem};
    // Only health probes may speak cleartext to the TLS port (never with
    // credentials: the transport refuses an Authorization header there).
    ho.cleartext_allowed = [](std::string_view method, std::string_view target) {
      return method == "GET" && (target == "/readyz" || target == "/livez" || target == "/healthz");
    };
    apiserver::ApiServer* api = api_.get();
    ho.runs_inline = [api](const http::Request& r) { return api->serves_without_blocking(r); };
    auto server = http::Server::start(ho, [api](http::Request& r) { return api->serve(r); });
    if (!server.is_ok()) return server.status();
    server_ = std::move(server).value();

    kubeconfig_ = o.data_dir + "/admin.kubeconfig";
    VKUBE_RETURN_IF_ERROR(pki::write_kubeconfig(kubeconfig_, o.name, url(), bundle->ca.cert_pem, bundle->admin));

    VKUBE_LOG(debug, "start: serving", {"ms", since_start_ms()});
    VKUBE_RETURN_IF_ERROR(bootstrap());
    VKUBE_LOG(debug, "start: bootstrap objects present", {"ms", since_start_ms()});
    controllers::ManagerOptions mo;
    mo.root_ca_pem = bundle->ca.cert_pem;
    mo.client_ca_cert_pem = bundle->ca.cert_pem;
    mo.client_ca_key_pem = bundle->ca.key_pem;
    mo.service_cidr = o.service_cidr;
    mo.api_address = advertised_ipv4(host_);
    mo.api_port = port();
    components_ = o.components;
    for (const Component& c : components_)
      if (c.serving) c.serving(url());
    for (const Component& c : components_)
      if (c.attach) mo.attach.push_back([this, &c](controllers::Informers& inf) { c.attach(*api_, inf); });
    auto manager = controllers::ControllerManager::start(*api_, *cache_, mo);
    if (!manager.is_ok()) return manager.status();
    controllers_ = std::move(manager).value();
    VKUBE_LOG(debug, "start: controllers running", {"ms", since_start_ms()});
    for (const Component& c : components_) {
      if (!c.start) continue;
      Status s = c.start();
      if (!s.is_ok()) return Status(s.code(), c.name + ": " + s.message());
      VKUBE_LOG(debug, "start: component running", {"component", c.name}, {"ms", since_start_ms()});
    }
    compactor_ = std::thread([this] { compact_loop(); });
    api_->set_ready(true);
    // Give start-up's garbage (store recovery, bootstrap) back to the system.
    // (The code only start-up ran goes back once the first clients are
    // served: see compact_loop.)
    trim_heap();
    return Status::ok();
  }

 private:
  // The namespaces every cluster has, and the bootstrap RBAC policy.
  Status bootstrap() {
    // Concurrently: the writes share WAL syncs (group commit).
    const std::vector<std::string> namespaces = {"default", "kube-system", "kube-public",
                                                 "kube-node-lease"};
    std::vector<Status> results(namespaces.size() + 1);
    std::vector<std::thread> threads;
    threads.emplace_back([&] { results[0] = api_->ensure_bootstrap_policy(); });
    for (size_t i = 0; i < namespaces.size(); ++i) {
      threads.emplace_back([&, i] {
        http::Request req;
        req.peer = http::PeerCertificate{"system:apiserver", {"system:masters"}};
        req.path = req.target = "/api/v1/namespaces/" + namespaces[i];
        req.method = "GET";
        if (api_->handle(req).status == 200) return;  // present: every start but the first
        req.method = "POST";
        req.path = req.target = "/api/v1/namespaces";
        req.headers.push_back({"Content-Type", "application/json"});
        req.body = R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + namespaces[i] + "\"}}";
        http::Response resp = api_->handle(req);
        if (resp.status != 201 && resp.status != 409)
          results[i + 1] = Status::internal("creating namespace " + namespaces[i] + ": " + resp.body);
      });
    }
    for (auto& t : threads) t.join();
    for (auto& r : results) VKUBE_RETURN_IF_ERROR(r);
    return Status::ok();
  }

  // Keeps five minutes of history, as kube-apiserver's compactor does.
  void compact_loop() {
    storage::Revision previous = 0;
    std::unique_lock lock(mu_);
    // Most of the code start-up ran (store recovery, certificates, schema
    // and policy loading) never runs again: half a second after ready, give
    // it back cheaply; what the first clients use faults back in.
    if (cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return stopping_; })) return;
    release_code_pages();
    // Once start-up's aftermath (first clients, the syncer's first lists) is
    // over, what it touched goes back too.
    if (cv_.wait_for(lock, std::chrono::milliseconds(9500), [&] { return stopping_; })) return;
    trim_heap();
    release_file_pages();
    while (!cv_.wait_for(lock, std::chrono::minutes(5), [&] { return stopping_; })) {
      if (previous > 0) {
        Status s = store_->compact(previous);
        if (!s.is_ok()) VKUBE_LOG(warn, "compaction failed", {"error", s.message()});
      }
      previous = store_->current_revision();
      trim_heap();  // peaks (large LISTs) do not stay resident while idle
      release_file_pages();
    }
  }

  std::string name_, host_, kubeconfig_;
  uint16_t listen_port_ = 0;
  std::unique_ptr<storage::Backend> store_;  // RocksDB
  std::unique_ptr<storage::Backend> cache_;  // the watch cache over it
  std::unique_ptr<apiserver::ApiServer> api_;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<controllers::ControllerManager> controllers_;
  std::vector<Component> components_;
  std::thread compactor_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<bool> stopped_{false};
};

}  // namespace

Result<std::unique_ptr<Tenant>> Tenant::start(const TenantOptions& options) {
  auto t = std::make_unique<TenantImpl>();
  Status s = t->init(options);
  if (!s.is_ok()) {
    t->stop(std::chrono::milliseconds(0));
    return s;
  }
  return std::unique_ptr<Tenant>(std::move(t));
}

}  // namespace vkube::cli
