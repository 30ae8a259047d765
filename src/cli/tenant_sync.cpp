#include "tenant_sync.h"

#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <thread>

#include "command.h"
#include "vkube/apiserver/apiserver.h"
#include "vkube/cli/manifests.h"
#include "vkube/common/base64.h"
#include "vkube/common/log.h"
#include "vkube/dns/dns.h"
#include "vkube/gpu/quota.h"
#include "vkube/hostclient/client.h"
#include "vkube/syncer/syncer.h"

namespace vkube::cli {

using json = nlohmann::json;

SyncFlags add_sync_flags(FlagSet& f) {
  SyncFlags s;
  s.host_kubeconfig = &f.add_string(
      "host-kubeconfig", "",
      "kubeconfig of the host cluster the tenant's pods run on; empty: the in-cluster service "
      "account when running in a pod, else no host");
  s.host_context =
      &f.add_string("host-context", "", "context in --host-kubeconfig (default: current)");
  s.host_namespace = &f.add_string(
      "host-namespace", "",
      "the tenant's namespace on the host (default: the pod's own in-cluster, else vkube-<name>)");
  s.gpu_sharing =
      &f.add_string("host-gpu-sharing", "milli",
                    "how GPU shares reach the host: milli (vkube host), time-slicing, hami or kai");
  s.mig = &f.add_string("host-mig", "as-is", "MIG profiles on the host: as-is or smallest-fit");
  s.scheduler_name = &f.add_string("host-scheduler-name", "",
                                   "schedulerName of every host pod (default: the host's default; "
                                   "kai-scheduler with --host-gpu-sharing kai)");
  s.queue_labels = &f.add_string("host-pod-labels", "",
                                 "labels set on every host pod, k=v,... (e.g. a scheduler queue)");
  s.host_pod_security = &f.add_string(
      "host-pod-security", "baseline",
      "the operator's Pod Security level for the host namespace (its enforce label): "
      "baseline or restricted; the host refuses tenant pods past it, whatever the tenant allows");
  s.unsandboxed_local_pods = &f.add_bool(
      "host-unsandboxed-local-pods", false,
      "on `vkube host` only: label the host namespace so that the tenant's pods of the vkube "
      "image run as processes of the machine, NOT SANDBOXED; for tests of logs, exec and "
      "port-forward");
  s.priority_class = &f.add_string(
      "host-priority-class", "", "PriorityClass of every host pod (the tenant's own never travel)");
  s.gpu_memory_mib = &f.add_int("host-gpu-memory-mib", 81920,
                                "memory of the host's GPUs, to turn shares into MiB and back");
  s.dns_listen = &f.add_string(
      "dns-listen", "",
      "HOST:PORT of the tenant's DNS (UDP and TCP); empty: 0.0.0.0:53 in a pod, else off");
  s.dns_ip = &f.add_string("dns-ip", "",
                           "the address host pods reach the tenant's DNS at (default: $POD_IP, "
                           "else the --dns-listen host)");
  s.cluster_domain = &f.add_string("cluster-domain", "cluster.local", "the tenant's DNS domain");
  s.api_advertise = &f.add_string(
      "api-advertise", "",
      "HOST:PORT where host pods reach this tenant's API (their KUBERNETES_SERVICE_HOST/PORT and "
      "mounted service account credentials); default: $POD_IP:443 in a pod, else none");
  s.api_service = &f.add_string(
      "api-service", "",
      "the host Service in the host namespace that fronts this tenant's API: the tenant's "
      "default/kubernetes Service takes its cluster IP and port; default: vkube in a pod, else "
      "none");
  s.kubeconfig_secret = &f.add_string(
      "kubeconfig-secret", "",
      "write the admin kubeconfig to this Secret (key \"config\") in the host namespace, for "
      "`vkube create` and `vkube connect`; empty: none");
  s.kubeconfig_server =
      &f.add_string("kubeconfig-server", "",
                    "the server URL in that Secret's kubeconfig (default: this tenant's own URL)");
  return s;
}

std::string with_server(const std::string& kubeconfig, const std::string& server) {
  std::string out;
  out.reserve(kubeconfig.size() + server.size());
  size_t i = 0;
  while (i < kubeconfig.size()) {
    size_t end = kubeconfig.find('\n', i);
    if (end == std::string::npos) end = kubeconfig.size();
    std::string_view line(kubeconfig.data() + i, end - i);
    size_t indent = line.find_first_not_of(' ');
    if (indent != std::string_view::npos && line.substr(indent).rfind("server:", 0) == 0)
      out += std::string(indent, ' ') + "server: " + json(server).dump();
    else
      out += line;
    if (end < kubeconfig.size()) out += '\n';
    i = end + 1;
  }
  return out;
}

namespace {

constexpr const char* kAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

// Where the pod's service account is mounted: kube's path, or the folder
// `vkube host`'s node agent gives a pod it runs as a local process
// (src/nodesim/local_pods.h).
std::string account_dir() {
  const char* local = std::getenv("VKUBE_SERVICE_ACCOUNT_DIR");
  return local != nullptr && *local != '\0' ? local : kAccountDir;
}

bool in_pod() {
  return std::getenv("KUBERNETES_SERVICE_HOST") != nullptr &&
         access((account_dir() + "/token").c_str(), R_OK) == 0;
}

// In a pod of a real node, not one `vkube host` runs locally.
bool in_real_pod() {
  return in_pod() && account_dir() == kAccountDir;
}

// The GPU stack's policy, and what the host policy injects into every host
// pod: the scheduler name, queue labels and priority class.
Status policy_of(const SyncFlags& f, gpu::HostGpuPolicy& p, syncer::HostPolicy& host) {
  const std::string& mode = *f.gpu_sharing;
  if (mode == "milli")
    p.fractions = gpu::FractionMode::kMilli;
  else if (mode == "time-slicing")
    p.fractions = gpu::FractionMode::kTimeSlicing;
  else if (mode == "hami")
    p.fractions = gpu::FractionMode::kHami;
  else if (mode == "kai") {
    p.fractions = gpu::FractionMode::kKai;
    host.scheduler_name = "kai-scheduler";
  } else {
    return Status::invalid("--host-gpu-sharing must be milli, time-slicing, hami or kai, got '" +
                           mode + "'");
  }
  if (*f.mig == "as-is")
    p.mig = gpu::MigMode::kAsIs;
  else if (*f.mig == "smallest-fit")
    p.mig = gpu::MigMode::kSmallestFit;
  else
    return Status::invalid("--host-mig must be as-is or smallest-fit, got '" + *f.mig + "'");
  if (!f.scheduler_name->empty()) host.scheduler_name = *f.scheduler_name;
  for (const std::string& kv : split_list(*f.queue_labels)) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::invalid("--host-pod-labels: expected key=value, got '" + kv + "'");
    host.labels[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  host.priority_class = *f.priority_class;
  p.gpu_memory_mib = *f.gpu_memory_mib;
  return Status::ok();
}

// Writes the tenant's admin kubeconfig into a Secret of its host namespace
// once it serves (retrying in the background while the host cannot be
// reached), where `vkube create` and `vkube connect` read it.
Component kubeconfig_secret(std::unique_ptr<hostclient::Client> client, const std::string& ns,
                            const std::string& tenant, const std::string& name,
                            const std::string& server, const std::string& kubeconfig_path) {
  struct State {
    std::unique_ptr<hostclient::Client> client;
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    std::string url;
  };
  auto st = std::make_shared<State>();
  st->client = std::move(client);
  auto write = [st, ns, tenant, name, server, kubeconfig_path]() -> Status {
    std::ifstream in(kubeconfig_path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.empty()) return Status::unavailable("cannot read " + kubeconfig_path);
    text = with_server(text, server.empty() ? st->url : server);
    json secret = {
        {"apiVersion", "v1"},
        {"kind", "Secret"},
        {"metadata",
         {{"name", name},
          {"namespace", ns},
          {"labels", {{"app.kubernetes.io/managed-by", "vkube"}, {"vkube.io/tenant", tenant}}}}},
        {"type", "Opaque"},
        {"data", {{"config", base64_encode(text)}}}};
    const std::string path = "/api/v1/namespaces/" + ns + "/secrets";
    auto r = st->client->call("PUT", path + "/" + name, secret);
    if (r.code == 404) r = st->client->call("POST", path, secret);
    if (!r.ok()) return Status::unavailable("secret " + ns + "/" + name + ": " + r.message());
    VKUBE_LOG(info, "kubeconfig written to the host", {"secret", ns + "/" + name});
    return Status::ok();
  };
  Component c;
  c.name = "kubeconfig-secret";
  c.serving = [st](const std::string& url) { st->url = url; };
  c.start = [st, write] {
    st->thread = std::thread([st, write] {
      for (auto delay = std::chrono::milliseconds(200);;
           delay = std::min(delay * 2, std::chrono::milliseconds(5000))) {
        Status s = write();
        if (s.is_ok()) return;
        VKUBE_LOG(warn, "kubeconfig secret not written yet", {"error", s.message()});
        std::unique_lock lock(st->mu);
        if (st->cv.wait_for(lock, delay, [&] { return st->stopping; })) return;
      }
    });
    return Status::ok();
  };
  c.stop = [st] {
    {
      std::lock_guard lock(st->mu);
      st->stopping = true;
    }
    st->cv.notify_all();
    st->client->stop();
    if (st->thread.joinable()) st->thread.join();
  };
  return c;
}

}  // namespace

Result<std::vector<Component>> sync_components(
    const SyncFlags& f, const std::string& tenant, const std::string& listen_host,
    const std::string& data_dir, const std::string& gpu_quota, syncer::HostPolicy policy,
    std::shared_ptr<const syncer::HostPolicy>* admission) {
  std::vector<Component> out;
  const bool pod = in_pod();
  if (f.host_kubeconfig->empty() && !pod) return out;

  auto config = f.host_kubeconfig->empty()
                    ? hostclient::in_cluster(account_dir())
                    : hostclient::from_kubeconfig(*f.host_kubeconfig, *f.host_context);
  if (!config.is_ok()) return config.status();
  syncer::SyncerOptions so;
  so.tenant = tenant;
  so.host_namespace = *f.host_namespace;
  so.host_pod_security = *f.host_pod_security;
  so.unsandboxed_local_pods = *f.unsandboxed_local_pods;
  if (so.host_pod_security != "privileged" && so.host_pod_security != "baseline" &&
      so.host_pod_security != "restricted")
    return Status::invalid("--host-pod-security must be privileged, baseline or restricted, got '" +
                           so.host_pod_security + "'");
  if (so.host_namespace.empty())
    so.host_namespace =
        pod && f.host_kubeconfig->empty() ? config->ns : tenant_host_namespace(tenant);
  if (so.host_namespace.empty()) so.host_namespace = tenant_host_namespace(tenant);
  // In its own namespace (a pod), the syncer neither creates nor needs to read it.
  if (pod && f.host_kubeconfig->empty() && so.host_namespace == config->ns)
    so.create_namespace = false;
  VKUBE_RETURN_IF_ERROR(policy_of(f, so.gpu, policy));
  so.host_policy = policy;
  if (admission != nullptr) *admission = std::make_shared<const syncer::HostPolicy>(policy);
  so.cluster_domain = *f.cluster_domain;
  if (!gpu_quota.empty()) {
    auto quota = gpu::parse_gpu_quota(gpu_quota);
    if (!quota.is_ok()) return quota.status();
    json mirror =
        gpu::host_resource_quota(*quota, so.gpu, "vkube-gpu-quota-" + tenant, so.host_namespace);
    if (!mirror.value("spec", json::object()).value("hard", json::object()).empty())
      so.host_quota = std::move(mirror);
  }

  std::string dns_listen = *f.dns_listen;
  // A local pod of `vkube host` has no DNS by default: the simulated pods it
  // would answer run no containers, and port 53 needs privileges here.
  if (dns_listen.empty() && in_real_pod()) dns_listen = "0.0.0.0:53";
  if (!dns_listen.empty()) {
    std::string ip = *f.dns_ip;
    if (ip.empty() && std::getenv("POD_IP")) ip = std::getenv("POD_IP");
    if (ip.empty()) {
      ip = dns_listen.substr(0, dns_listen.rfind(':'));
      if (ip == "0.0.0.0" || ip.empty()) ip = listen_host;
    }
    so.dns_ip = ip;
    dns::Options dopt;
    dopt.listen = dns_listen;
    dopt.cluster_domain = *f.cluster_domain;
    std::shared_ptr<dns::Server> server = dns::Server::create(dopt);
    out.push_back(Component{
        "dns", nullptr,
        [server](apiserver::ApiServer&, controllers::Informers& inf) { server->attach(inf); },
        [server, dns_listen] {
          Status s = server->start();
          if (s.is_ok())
            VKUBE_LOG(info, "dns: serving", {"listen", dns_listen}, {"port", server->port()});
          return s;
        },
        [server] { server->stop(); }});
  }

  std::string advertise = *f.api_advertise;
  if (advertise.empty() && pod && std::getenv("POD_IP"))
    advertise = std::string(std::getenv("POD_IP")) + ":443";
  if (!advertise.empty()) {
    auto colon = advertise.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return Status::invalid("--api-advertise must be HOST:PORT, got '" + advertise + "'");
    so.api_host = advertise.substr(0, colon);
    try {
      so.api_port = std::stoi(advertise.substr(colon + 1));
    } catch (...) {
      return Status::invalid("--api-advertise: bad port in '" + advertise + "'");
    }
  }

  so.api_service = *f.api_service;
  if (so.api_service.empty() && pod) so.api_service = "vkube";

  if (!f.kubeconfig_secret->empty()) {
    auto writer = hostclient::Client::create(*config);
    if (!writer.is_ok()) return writer.status();
    out.push_back(kubeconfig_secret(std::move(writer).value(), so.host_namespace, tenant,
                                    *f.kubeconfig_secret, *f.kubeconfig_server,
                                    data_dir + "/admin.kubeconfig"));
  }
  auto client = hostclient::Client::create(std::move(config).value());
  if (!client.is_ok()) return client.status();
  VKUBE_LOG(info, "syncer: host configured", {"server", (*client)->config().server},
            {"host_namespace", so.host_namespace});
  // Made at attach, once the tenant's CA exists (pods' credentials carry it).
  auto sync = std::make_shared<std::shared_ptr<syncer::Syncer>>();
  auto host = std::make_shared<std::unique_ptr<hostclient::Client>>(std::move(client).value());
  const std::string ca_path = data_dir + "/pki/ca.crt";
  out.push_back(Component{
      "syncer", nullptr,
      [sync, host, so, ca_path](apiserver::ApiServer& api, controllers::Informers& inf) {
        syncer::SyncerOptions o = so;
        std::ifstream in(ca_path);
        o.tenant_ca_pem.assign(std::istreambuf_iterator<char>(in), {});
        *sync = syncer::Syncer::create(o, std::move(*host));
        (*sync)->attach(api, inf);
        std::weak_ptr<syncer::Syncer> weak = *sync;
        api.add_metrics_source([weak] {
          auto s = weak.lock();
          return s ? s->metrics() : std::string();
        });
      },
      [sync] { return *sync ? (*sync)->start() : Status::internal("syncer not attached"); },
      [sync] {
        if (*sync) (*sync)->stop();
      }});
  return out;
}

}  // namespace vkube::cli
