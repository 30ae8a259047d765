// `vkube create --host-gpu-sharing kai|kueue`: the tenant's GPU share as
// the host scheduler's queue objects (gpu/host_queues.h), written with the
// operator's credentials, and removed again by `vkube delete`.
#pragma once

#include <string>
#include <vector>

#include "vkube/common/status.h"
#include "vkube/gpu/host_queues.h"
#include "vkube/hostclient/client.h"

namespace vkube::cli {

struct TenantSpec;

// Before the tenant is created: parses its --gpu-share (spec.gpu_share),
// checks that the host serves every CRD the mode writes objects of
// (kNotFound naming the missing CustomResourceDefinition and what installs
// it), and sets in `spec` what its `vkube serve` must inject into its host
// pods (scheduler name, queue labels, KAI's fraction translation; kInvalid
// when --gpu-sharing asks for another fraction translation than the mode
// needs). Nothing is written. kVkube: nothing to do.
Status prepare_tenant_queues(hostclient::Client& host, gpu::HostQueueMode mode, TenantSpec& spec);

// Creates the mode's objects for the tenant, or replaces those an earlier
// tenant of the same name left. Shared objects (Kueue's ResourceFlavors)
// are created when missing and otherwise left as the operator has them;
// KAI's pool queue guarantees the sum of its tenants' deserved GPUs.
// `notes` gets what of the share the mode cannot express.
Status apply_tenant_queues(hostclient::Client& host, gpu::HostQueueMode mode,
                           const TenantSpec& spec, std::vector<std::string>* notes);

// After `vkube share`: rewrites the tenant's KAI Queue or Kueue
// ClusterQueue for `share`, where `vkube create` made one (a tenant on
// `vkube host` has none: nothing to do), and prints what it did and what
// of the share cannot map.
Status refresh_tenant_queues(hostclient::Client& host, const std::string& tenant,
                             const gpu::GpuShare& share);

// Deletes the tenant's cluster-scoped queue (KAI Queue, Kueue ClusterQueue)
// when it is labelled as the tenant's, and lowers KAI's pool guarantee; a
// host without the CRDs has nothing to delete. The namespaced LocalQueue
// goes with the namespace.
Status delete_tenant_queues(hostclient::Client& host, const std::string& tenant);

}  // namespace vkube::cli
