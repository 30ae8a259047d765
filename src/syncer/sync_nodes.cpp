// Virtual nodes: the tenant sees each host node its pods run on, with that
// node's capacity, GPUs and GPU labels, and no longer once none of its pods
// is there; with the operator's node selector, every node of its slice.
#include "syncer_impl.h"
#include "vkube/common/dial_policy.h"
#include "vkube/gpu/node_spec.h"
#include "vkube/syncer/compare.h"
#include "vkube/syncer/translate_back.h"

namespace vkube::syncer {

namespace {

constexpr const char* kVirtualLabel = "vkube.io/virtual-node";

// Heartbeat times move every few seconds on a real kubelet: copying each
// would make every node a stream of tenant writes for nothing a user reads.
json without_heartbeats(json status) {
  if (auto c = status.find("conditions"); c != status.end() && c->is_array())
    for (json& cond : *c)
      if (cond.is_object()) cond.erase("lastHeartbeatTime");
  return status;
}

// The pods of a simulated host node (an embedded host's) listen nowhere: from
// then on this tenant dials none of their addresses (a webhook's endpoints).
void note_if_simulated(const json& node) {
  const json meta = node.value("metadata", json::object());
  if (meta.value("labels", json::object()).value(std::string(gpu::kSimulatedLabel), "") != "true")
    return;
  const std::string cidr = node.value("spec", json::object()).value("podCIDR", "");
  if (!cidr.empty()) (void)dial_policy::note_simulated_network(cidr);
  for (const json& a : node.value("status", json::object()).value("addresses", json::array()))
    if (a.is_object() && a.value("type", "") == "InternalIP")
      (void)dial_policy::note_simulated_network(a.value("address", "") + "/32");
}

}  // namespace

Status SyncerImpl::reconcile_node(const std::string& name) {
  ObjectPtr tenant = t_nodes->get(name);
  ObjectPtr host = h_nodes->informer.get(name);
  if (host) note_if_simulated(*host);
  const bool virtual_node_there = tenant && tenant->value("metadata", json::object())
                                                    .value("labels", json::object())
                                                    .value(kVirtualLabel, "") == "true";
  if (tenant && !virtual_node_there) return Status::ok();  // the tenant's own Node object

  // A dedicated tenant sees its whole slice, used or not.
  if (!host || (node_users(name) == 0 && !node_in_slice(o_.host_policy, *host))) {
    if (!tenant) return Status::ok();
    json options = {{"apiVersion", "v1"},
                    {"kind", "DeleteOptions"},
                    {"preconditions", {{"uid", str_at(*tenant, "metadata", "uid")}}}};
    auto r = tenant_call("DELETE", "/api/v1/nodes/" + name, options);
    if (!r.ok() && r.code != 404 && r.code != 409)
      return Status::internal("delete virtual node " + name + ": " + r.body.dump());
    return Status::ok();
  }

  json want = virtual_node(*host);
  json want_status = without_heartbeats(want.value("status", json::object()));
  if (!tenant) {
    auto r = tenant_call("POST", "/api/v1/nodes", want);
    if (r.code == 409) {
      nodes.queue.add_after(name, std::chrono::milliseconds(50));
      return Status::ok();
    }
    if (!r.ok()) return Status::internal("create virtual node " + name + ": " + r.body.dump());
    tenant = std::make_shared<const json>(r.body);
  } else {
    json patch = metadata_patch(*tenant, want);
    if (!patch.is_null()) {
      // Labels the tenant's users put on the node stay: only the host's are ours.
      if (patch["metadata"].contains("labels"))
        for (auto it = patch["metadata"]["labels"].begin();
             it != patch["metadata"]["labels"].end();)
          it = it->is_null() ? patch["metadata"]["labels"].erase(it) : std::next(it);
      patch["metadata"].erase("annotations");
      const json want_annotations = want["metadata"].value("annotations", json::object());
      const json have_annotations =
          tenant->value("metadata", json::object()).value("annotations", json::object());
      for (auto it = want_annotations.begin(); it != want_annotations.end(); ++it)
        if (have_annotations.value(it.key(), json()) != *it)
          patch["metadata"]["annotations"][it.key()] = *it;
      bool empty = true;
      for (auto it = patch["metadata"].begin(); it != patch["metadata"].end(); ++it)
        if (!it->empty()) empty = false;
      if (!empty) {
        auto r =
            tenant_call("PATCH", "/api/v1/nodes/" + name, patch, "application/merge-patch+json");
        if (!r.ok()) return Status::internal("update virtual node " + name + ": " + r.body.dump());
        tenant = std::make_shared<const json>(r.body);
      }
    }
  }
  json have_status = without_heartbeats(tenant->value("status", json::object()));
  if (!covers(have_status, want_status)) {
    json body = {{"status", want.value("status", json::object())}};
    auto r = tenant_call("PATCH", "/api/v1/nodes/" + name + "/status", body,
                         "application/merge-patch+json");
    if (!r.ok() && r.code != 404)
      return Status::internal("status of virtual node " + name + ": " + r.body.dump());
  }
  return Status::ok();
}

}  // namespace vkube::syncer
