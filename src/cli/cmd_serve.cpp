// vkube serve: one tenant's API endpoint.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "../apiserver/apply/yaml_json.h"
#include "command.h"
#include "tenant.h"
#include "tenant_sync.h"
#include "vkube/apiserver/apiserver.h"
#include "vkube/common/log.h"
#include "vkube/gpu/quota.h"
#include "vkube/gpu/share.h"
#include "vkube/syncer/host_policy.h"

namespace vkube::cli {

// Blocks until SIGINT or SIGTERM.
void wait_for_signal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  VKUBE_LOG(info, "signal received, shutting down", {"signal", sig});
}

void block_signals() {
  // Threads started later inherit the mask, so only sigwait sees them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

std::string& add_service_cidr_flag(FlagSet& flags) {
  return flags.add_string("service-cluster-ip-range", "10.96.0.0/12",
                          "IPv4 CIDR Services get cluster IPs from, as kube-apiserver's flag (mask "
                          "12 to 30); its first address is the kubernetes Service's");
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

namespace {

struct PolicyFlags {
  std::string* file;
  std::string* tolerations;
  std::string* node_keys;
  std::string* runtime_classes;
  std::string* service_types;
  std::string* node_selector;
};

PolicyFlags add_policy_flags(FlagSet& f) {
  PolicyFlags p;
  p.file = &f.add_string(
      "host-policy-file", "",
      "the operator's host policy (YAML: allowedTolerations, allowedNodeSelectorKeys, "
      "allowedRuntimeClasses, allowedServiceTypes, nodeSelector); the flags override it");
  p.tolerations = &f.add_string(
      "allowed-tolerations", "",
      "taints tenant pods may tolerate, key[=value][:effect],... or none (default: the "
      "node-condition taints and nvidia.com/gpu)");
  p.node_keys = &f.add_string(
      "allowed-node-selector-keys", "",
      "node labels tenant pods may select and spread on, key or prefix*,... or none (default: "
      "nvidia.com/gpu.*, nvidia.com/mig.*, topology zone and region, arch, os, instance type)");
  p.runtime_classes = &f.add_string("allowed-runtime-classes", "",
                                    "runtimeClassNames tenant pods may use, ... (default: none)");
  p.service_types = &f.add_string(
      "allowed-service-types", "",
      "Service types copied to the host: ClusterIP, NodePort, LoadBalancer (default: ClusterIP; "
      "ExternalName stays in the tenant)");
  p.node_selector = &f.add_string(
      "host-node-selector", "",
      "the tenant's slice of host nodes, key=value,...: set in every host pod's nodeSelector "
      "(over the tenant's value of the same key); its virtual nodes are the slice's nodes");
  return p;
}

// The operator's host policy from its file and flags (what it allows; the
// host flags add what it injects).
Result<syncer::HostPolicy> host_policy(const PolicyFlags& f) {
  syncer::HostPolicy p;
  if (!f.file->empty()) {
    std::ifstream in(*f.file);
    if (!in) return Status::invalid("--host-policy-file: cannot read " + *f.file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto doc = apiserver::apply::yaml_to_json(text);
    if (!doc.is_ok()) return Status::invalid("--host-policy-file: " + doc.status().message());
    Status s = syncer::merge_policy_file(*doc, p);
    if (!s.is_ok()) return Status::invalid("--host-policy-file " + *f.file + ": " + s.message());
  }
  auto flag = [](const char* name, const std::string& text, auto parse, auto& into) -> Status {
    if (text.empty()) return Status::ok();
    auto v = parse(text);
    if (!v.is_ok()) return Status::invalid(std::string("--") + name + ": " + v.status().message());
    into = std::move(v).value();
    return Status::ok();
  };
  VKUBE_RETURN_IF_ERROR(
      flag("allowed-tolerations", *f.tolerations, syncer::parse_toleration_rules, p.tolerations));
  VKUBE_RETURN_IF_ERROR(flag("allowed-node-selector-keys", *f.node_keys,
                             syncer::parse_node_label_keys, p.node_label_keys));
  VKUBE_RETURN_IF_ERROR(flag("allowed-runtime-classes", *f.runtime_classes,
                             syncer::parse_runtime_classes, p.runtime_classes));
  VKUBE_RETURN_IF_ERROR(flag("allowed-service-types", *f.service_types, syncer::parse_service_types,
                             p.service_types));
  VKUBE_RETURN_IF_ERROR(
      flag("host-node-selector", *f.node_selector, syncer::parse_node_selector, p.node_selector));
  return p;
}

}  // namespace

int run_serve(const Args& args) {
  FlagSet flags("serve",
                "Serve one tenant's Kubernetes API. On first start it creates a CA, serving and\n"
                "admin certificates under --data-dir and writes DIR/admin.kubeconfig.");
  auto log_flags = add_log_flags(flags);
  std::string& data_dir =
      flags.add_string("data-dir", "", "state directory (store, certificates, kubeconfig)");
  std::string& listen =
      flags.add_string("listen", "127.0.0.1:6443", "HOST:PORT to serve on (port 0: any free port)");
  std::string& sans =
      flags.add_string("tls-san", "", "extra serving certificate names, comma-separated");
  std::string& name =
      flags.add_string("name", "vkube", "tenant name (kubeconfig cluster and context)");
  std::string& token_file =
      flags.add_string("token-auth-file", "",
                       "static bearer tokens, one user a line: token,user,uid,\"group1,group2\" "
                       "(as kube-apiserver)");
  std::string& sa_alg = flags.add_string(
      "service-account-signing-alg", "ES256",
      "JWS algorithm of service-account tokens: ES256 (ECDSA P-256) or RS256 (RSA 2048)");
  std::string& pod_security = flags.add_string(
      "pod-security", "baseline",
      "Pod Security level of namespaces without the pod-security.kubernetes.io/enforce label, and "
      "the least any namespace may enforce (a label may tighten it, never loosen it): "
      "privileged, baseline or restricted");
  std::string& gpu_quota = flags.add_string(
      "gpu-quota", "",
      "the tenant's GPU quota, checked at pod create: gpus=N (whole GPUs), milli=N (all GPU in "
      "thousandths), model:<nvidia.com/gpu.product>=N (GPUs on that model), comma-separated");
  std::string& gpu_share = flags.add_string(
      "gpu-share", "",
      "the tenant's share of the host's GPU pool, as `vkube create --gpu-share` "
      "(deserved=N,limit=N,weight=W,preemptible=false,model:M=N); only checked and logged "
      "here: the host reads it from this StatefulSet and enforces it");
  int64_t& max_inflight = flags.add_int(
      "max-requests-inflight", 400,
      "read-only requests served at once before 429, as kube-apiserver's flag (0: no limit)");
  int64_t& max_mutating = flags.add_int(
      "max-mutating-requests-inflight", 200,
      "mutating requests served at once before 429, as kube-apiserver's flag (0: no limit)");
  int64_t& max_read_mib = flags.add_int(
      "max-read-inflight-mib", 128,
      "MiB that read-only requests (LISTs, while built and until sent) may hold before 429 "
      "(0: no limit)");
  std::string& service_cidr = add_service_cidr_flag(flags);
  SyncFlags sync_flags = add_sync_flags(flags);
  PolicyFlags policy_flags = add_policy_flags(flags);
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  if (data_dir.empty()) return fail("--data-dir is required");
  if (auto r = apiserver::parse_service_cidr(service_cidr); !r.is_ok())
    return fail(r.status().message());
  if (pod_security != "privileged" && pod_security != "baseline" && pod_security != "restricted")
    return fail("--pod-security must be privileged, baseline or restricted, got '" + pod_security +
                "'");
  if (auto q = gpu::parse_gpu_quota(gpu_quota); !q.is_ok())
    return fail("--gpu-quota: " + q.status().message());
  auto share = gpu::parse_gpu_share(gpu_share);
  if (!share.is_ok()) return fail("--gpu-share: " + share.status().message());
  auto policy = host_policy(policy_flags);
  if (!policy.is_ok()) return fail(policy.status().message());

  block_signals();
  const auto t0 = std::chrono::steady_clock::now();
  TenantOptions o;
  o.data_dir = data_dir;
  o.listen = listen;
  o.name = name;
  o.token_auth_file = token_file;
  o.service_account_signing_alg = sa_alg;
  o.pod_security = pod_security;
  o.gpu_quota = gpu_quota;
  o.service_cidr = service_cidr;
  if (max_inflight < 0 || max_mutating < 0 || max_read_mib < 0)
    return fail(
        "--max-requests-inflight, --max-mutating-requests-inflight and "
        "--max-read-inflight-mib cannot be negative");
  o.max_requests_inflight = static_cast<size_t>(max_inflight);
  o.max_mutating_inflight = static_cast<size_t>(max_mutating);
  o.max_read_bytes_inflight = static_cast<size_t>(max_read_mib) << 20;
  o.tls_sans = split_list(sans);
  std::string listen_host = listen.substr(0, listen.rfind(':'));
  auto components =
      sync_components(sync_flags, name, listen_host == "0.0.0.0" ? "127.0.0.1" : listen_host,
                      data_dir, gpu_quota, std::move(policy).value(), &o.host_policy);
  if (!components.is_ok()) return fail(components.status().message());
  o.components = std::move(components).value();
  o.metrics_api = o.host_policy != nullptr;  // a syncer relays the host's metrics
  auto tenant = Tenant::start(o);
  if (!tenant.is_ok()) return fail(tenant.status().message());
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  VKUBE_LOG(info, "serving", {"url", (*tenant)->url()},
            {"kubeconfig", (*tenant)->kubeconfig_path()}, {"startup_ms", ms});
  if (!gpu_share.empty())
    VKUBE_LOG(info, "GPU share (enforced by the host)", {"gpu_share", share->to_string()});
  std::printf("vkube is serving %s\n  export KUBECONFIG=%s\n  kubectl get namespaces\n",
              (*tenant)->url().c_str(), (*tenant)->kubeconfig_path().c_str());
  std::fflush(stdout);
  wait_for_signal();
  (*tenant)->stop(std::chrono::seconds(5));
  return 0;
}

}  // namespace vkube::cli
