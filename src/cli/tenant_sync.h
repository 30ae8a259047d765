// `vkube serve`'s link to the host cluster: the flags that say where the
// host is and how the tenant's pods translate, and the components (the
// syncer, the tenant's DNS server) they make.
#pragma once

#include <string>
#include <vector>

#include "flags.h"
#include "tenant.h"
#include "vkube/syncer/host_policy.h"

namespace vkube::cli {

struct SyncFlags {
  std::string* host_kubeconfig;
  std::string* host_context;
  std::string* host_namespace;
  std::string* host_pod_security;
  bool* unsandboxed_local_pods;
  std::string* gpu_sharing;
  std::string* mig;
  std::string* scheduler_name;
  std::string* queue_labels;
  std::string* priority_class;
  int64_t* gpu_memory_mib;
  std::string* dns_listen;
  std::string* dns_ip;
  std::string* cluster_domain;
  std::string* api_advertise;
  std::string* api_service;
  std::string* kubeconfig_secret;
  std::string* kubeconfig_server;
};

// `kubeconfig` (a kubeconfig's text) with every cluster's server set to `server`.
std::string with_server(const std::string& kubeconfig, const std::string& server);

SyncFlags add_sync_flags(FlagSet& flags);

// The components for `tenant` (named as --name): none when no host is
// configured (no --host-kubeconfig and not in a pod). `host_quota` is the
// ResourceQuota mirrored on the host namespace (null: none).
// `data_dir` holds the tenant's CA (pki/ca.crt) for the pods' credentials;
// `gpu_quota` (as --gpu-quota; empty: none) is mirrored on the host
// namespace as a ResourceQuota. `policy` says what the operator allows
// (--host-policy-file, --allowed-*); the host flags add what it injects.
// With a host, the complete policy also goes to `*admission` (the tenant's
// admission applies it); without one, `*admission` is left as it is.
Result<std::vector<Component>> sync_components(
    const SyncFlags& flags, const std::string& tenant, const std::string& listen_host,
    const std::string& data_dir, const std::string& gpu_quota = "",
    syncer::HostPolicy policy = {},
    std::shared_ptr<const syncer::HostPolicy>* admission = nullptr);

}  // namespace vkube::cli
