// The objects a tenant pod uses, as the host keeps them: pure functions
// (JSON in, JSON out), golden-file tested like translate_pod.
#pragma once

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"
#include "vkube/syncer/host_policy.h"
#include "vkube/syncer/names.h"

namespace vkube::syncer {

struct ObjectContext {
  const NameMapper* names = nullptr;
  std::string host_namespace;
  nlohmann::json owner = nullptr;  // ownerReference to the tenant's anchor object
  // The operator's host policy (Service types); null: HostPolicy's defaults.
  const HostPolicy* policy = nullptr;
};

// ConfigMap or Secret: data, binaryData, stringData, type and immutable kept
// under the host name, with the ownership marks. A service-account-token
// Secret becomes Opaque (the host's token controller would otherwise claim it).
Result<nlohmann::json> translate_config(const nlohmann::json& tenant_obj, const ObjectContext& ctx);

// Service: ports, type, sessionAffinity and publishNotReadyAddresses kept;
// the cluster IP is the host's to assign (a headless Service stays
// headless); the selector also requires the tenant namespace label, so it
// picks only this tenant namespace's pods among all those in the host
// namespace. The host policy decides first (service_violations): kForbidden
// for what it refuses (a type the operator does not allow, externalIPs); null
// (no host object) for a Service that stays in the tenant (ExternalName,
// which the tenant's DNS answers).
Result<nlohmann::json> translate_service(const nlohmann::json& tenant_svc,
                                         const ObjectContext& ctx);

// PersistentVolumeClaim: access modes, resources, storage class, volume mode
// and a data source (another claim of the tenant, renamed) kept; the volume
// name and selector are the host's business (they name host volumes).
Result<nlohmann::json> translate_pvc(const nlohmann::json& tenant_pvc, const ObjectContext& ctx);

// PodDisruptionBudget: minAvailable, maxUnavailable and
// unhealthyPodEvictionPolicy kept; the selector also requires the tenant and
// tenant namespace labels (as a Service's does), so the budget counts only
// this tenant namespace's host pods. Label keys are those of the tenant's
// pods, which the host pods carry unchanged. No selector selects no pods,
// in the tenant as on the host.
Result<nlohmann::json> translate_pdb(const nlohmann::json& tenant_pdb, const ObjectContext& ctx);

// The tenant claim's status from the host claim's: phase, capacity, access
// modes and conditions.
nlohmann::json tenant_pvc_status(const nlohmann::json& host_pvc);

}  // namespace vkube::syncer
