// A tenant pod as the host runs it: a pure function (JSON in, JSON out, no
// I/O), golden-file tested (STYLE.md §4). The syncer around it decides when
// to call it; everything host-specific comes in through PodContext.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/gpu/translate.h"
#include "vkube/syncer/host_policy.h"
#include "vkube/syncer/names.h"

namespace vkube::syncer {

// A tenant Service, for the environment variables kube injects.
struct ServiceEnv {
  std::string name;
  std::string cluster_ip;                                     // the host-assigned address
  std::vector<std::pair<std::string, nlohmann::json>> ports;  // (name, ServicePort)
};

struct PodContext {
  const NameMapper* names = nullptr;
  std::string host_namespace;        // the tenant's namespace on the host
  nlohmann::json owner = nullptr;    // ownerReference to the tenant's anchor object
  gpu::HostGpuPolicy gpu;            // the host's GPU stack
  // The operator's host policy (scheduler name, queue labels, priority
  // class, what is allowed); null: HostPolicy's safe defaults.
  const HostPolicy* policy = nullptr;
  std::vector<ServiceEnv> services;  // the tenant namespace's Services
  std::string dns_ip;                // vkube's DNS for the tenant; empty: keep dnsPolicy
  // A host Secret (key "token") with the tenant service account's token, in
  // place of projected serviceAccountToken sources (which the host would fill
  // with a host token); empty: those sources are dropped.
  std::string token_secret;
  std::string cluster_domain = "cluster.local";
  // A host Secret (keys token, ca.crt, namespace) with the pod's service
  // account credentials for the tenant's API, mounted where kube mounts
  // them (/var/run/secrets/kubernetes.io/serviceaccount) in every container
  // that does not mount that path itself; empty: none.
  std::string api_access_secret;
  // Where host pods reach the tenant's API: KUBERNETES_SERVICE_HOST/_PORT
  // (the host's kubelet would point them at the host's API). Empty: unset.
  std::string api_host;
  int api_port = 443;
};

// The host pod for `tenant_pod`:
// - name and namespace from the NameMapper; labels and annotations kept (minus
//   what the host owns) plus the ownership marks; the anchor as owner;
// - references to ConfigMaps, Secrets, PVCs and image pull secrets renamed
//   (volumes, projected sources, env and envFrom);
// - no nodeName (the host's scheduler places it), no host service account
//   token (automountServiceAccountToken false; projected serviceAccountToken
//   sources read ctx.token_secret instead), no host service links; the
//   tenant's credentials (ctx.api_access_secret) and API address instead;
// - kube's service environment variables for the tenant's Services;
// - downward-API references to metadata.name/namespace/uid read the
//   tenant's (from the ownership marks), not the host pod's;
// - a dnsConfig pointing at vkube's DNS with the tenant's search path;
// - the tenant's gang markers as the host scheduler's (gpu_sharing.h);
// - GPU requests per ctx.gpu;
// - then the operator's host policy (apply_pod_policy): its scheduler name,
//   queue labels and priority class, never the tenant's; on a Kueue host a
//   gang's Kueue pod-group keys (apply_host_queue_gang).
// kInvalid when the pod's GPU request cannot be served by the host or its
// pod group is malformed (or, on a Kueue host, not a lowercase DNS name),
// kForbidden when the host policy refuses the pod.
Result<nlohmann::json> translate_pod(const nlohmann::json& tenant_pod, const PodContext& ctx);

}  // namespace vkube::syncer
