// The tenant's host objects, from manifests/vkube-tenant.yaml (the plain YAML
// rendered from the Helm chart manifests/vkube-tenant, embedded at build
// time): what `vkube create` applies, so that it and `helm install` of the
// chart make the same objects.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"

namespace vkube::cli {

using json = nlohmann::json;

// The release name and namespace the embedded YAML was rendered with.
inline constexpr std::string_view kManifestRelease = "example";
inline constexpr std::string_view kManifestNamespace = "vkube-example";

// A tenant's namespace on its host.
inline std::string tenant_host_namespace(std::string_view name) {
  return "vkube-" + std::string(name);
}

// The embedded YAML, as rendered.
std::string_view tenant_manifest();

struct TenantSpec {
  std::string name;   // the tenant (a DNS-1123 label)
  std::string ns;     // its host namespace: vkube-<name>
  std::string image;  // empty: the rendered one
  std::string pod_security = "baseline";
  std::string gpu_sharing = "milli";
  std::string gpu_quota;  // as --gpu-quota; empty: none
  // The tenant's share of the host's GPU pool, as --gpu-share (canonical:
  // gpu::GpuShare::to_string); empty: none. The host namespace's annotation
  // vkube.io/gpu-share, and the control plane's --gpu-share.
  std::string gpu_share;
  // The operator's host policy, as the `vkube serve` flags of the same
  // names (empty: the defaults).
  std::string allowed_tolerations;
  std::string allowed_node_selector_keys;
  std::string allowed_runtime_classes;
  std::string allowed_service_types;
  // The tenant's slice of host nodes, key=value,... (`vkube create
  // --node-selector`; serve's --host-node-selector); empty: every node.
  std::string host_node_selector;
  // The tenant's --service-cluster-ip-range (empty: vkube serve's default).
  std::string service_cidr;
  // What its syncer injects into every host pod (--host-scheduler-name,
  // --host-pod-labels k=v,...): the queue of the host's GPU scheduler
  // (`vkube create --host-gpu-sharing kai|kueue`; empty: none).
  std::string host_scheduler_name;
  std::string host_pod_labels;
  // On `vkube host`: the tenant's pods of the vkube image run as processes
  // of the machine, not sandboxed (the namespace label
  // vkube.io/unsandboxed-local-pods=true). Tests of logs, exec and
  // port-forward through a tenant need it; nothing else should.
  bool unsandboxed_local_pods = false;
};

// kInvalid naming the problem with a tenant's name.
Status validate_tenant_name(const std::string& name);

// The objects of `yaml` (documents separated by "---"; empty ones skipped)
// made for `spec`: namespaces, names and labels that carry the rendered
// release name carry the tenant's (and so its namespace, vkube-<name>); the
// control plane's arguments carry its settings. kInvalid when the YAML does not parse.
Result<std::vector<json>> tenant_objects(std::string_view yaml, const TenantSpec& spec);

// The host Namespace of a tenant: labelled with its name, as managed by
// vkube, and enforcing its Pod Security level; annotated with its GPU share
// (vkube.io/gpu-share) when it has one.
json tenant_namespace(const TenantSpec& spec);

// Sets `--flag=value` in a container's args (replacing it, or appending
// it); an empty value removes it.
void set_flag(json& args, std::string_view flag, const std::string& value);

}  // namespace vkube::cli
