#include "nodes.h"

#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "vkube/common/log.h"
#include "vkube/gpu/resources.h"

namespace vkube::nodesim {

namespace {

constexpr int kLeaseDurationSeconds = 40;
constexpr int kConflictRetries = 5;

std::string str(const json& v) {
  return v.is_string() ? v.get<std::string>() : std::string();
}

const json& meta(const json& obj, const char* field) {
  static const json kNull;
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return kNull;
  auto it = m->find(field);
  return it == m->end() ? kNull : *it;
}

// Labels of the GFD and the device plugin: all ours to set or remove.
bool gpu_label(const std::string& key) {
  return key.starts_with("nvidia.com/");
}

// `current` with the labels, annotations and spec fields `desired` sets; other
// labels and annotations (a user's `kubectl label`) stay.
json merged_node(const json& current, const json& desired) {
  json next = current;
  json& labels = next["metadata"]["labels"];
  if (!labels.is_object()) labels = json::object();
  for (auto it = labels.begin(); it != labels.end();) {
    if (gpu_label(it.key()) && !desired["metadata"]["labels"].contains(it.key()))
      it = labels.erase(it);
    else
      ++it;
  }
  labels.update(desired["metadata"]["labels"]);
  json& annotations = next["metadata"]["annotations"];
  if (!annotations.is_object()) annotations = json::object();
  annotations.update(desired["metadata"]["annotations"]);
  if (!desired["metadata"]["annotations"].contains(std::string(gpu::kDevicesAnnotation)))
    annotations.erase(std::string(gpu::kDevicesAnnotation));
  json& spec = next["spec"];
  spec["providerID"] = desired["spec"]["providerID"];
  if (desired["spec"].contains("taints"))
    spec["taints"] = desired["spec"]["taints"];
  else
    spec.erase("taints");
  if (!spec.contains("podCIDR") && desired["spec"].contains("podCIDR")) {
    spec["podCIDR"] = desired["spec"]["podCIDR"];
    spec["podCIDRs"] = desired["spec"]["podCIDRs"];
  }
  return next;
}

// Whether the reported status says something else than `desired` (times aside).
bool status_differs(const json& current, const json& desired) {
  const json& st = current.contains("status") ? current["status"] : json::object();
  for (const char* f : {"capacity", "allocatable", "addresses", "nodeInfo", "daemonEndpoints"})
    if (!st.contains(f) || st[f] != desired[f]) return true;
  for (const json& c : st.value("conditions", json::array()))
    if (c.value("type", "") == "Ready") return c.value("status", "") != "True";
  return true;
}

}  // namespace

json lease_object(const std::string& node, const std::string& node_uid, TimePoint now) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata",
           {{"name", node},
            {"namespace", kLeaseNamespace},
            {"ownerReferences",
             {{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}, {"uid", node_uid}}}}}},
          {"spec",
           {{"holderIdentity", node},
            {"leaseDurationSeconds", kLeaseDurationSeconds},
            {"renewTime", rfc3339_micro(now)}}}};
}

Status Registrar::ensure_lease_namespace() {
  ApiResult r = client.call(
      "POST", "/api/v1/namespaces",
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kLeaseNamespace}}}});
  if (r.ok() || r.code == 409) return Status::ok();
  return Status::internal("creating namespace kube-node-lease: " + r.body.dump());
}

Status Registrar::ensure_lease(const std::string& node, const std::string& node_uid) {
  json lease = lease_object(node, node_uid, wall());
  ApiResult r = client.call("POST", lease_path(), lease);
  if (r.ok()) return Status::ok();
  if (r.code != 409) return Status::internal("creating lease " + node + ": " + r.body.dump());
  // Left from an earlier run (maybe of an earlier Node of this name).
  json patch = {{"metadata", {{"ownerReferences", lease["metadata"]["ownerReferences"]}}},
                {"spec", lease["spec"]}};
  r = client.call("PATCH", lease_path(node), patch, "application/merge-patch+json");
  if (r.ok()) return Status::ok();
  return Status::internal("updating lease " + node + ": " + r.body.dump());
}

Status Registrar::register_node(gpu::NodeSpec& spec) {
  const std::string stamp = rfc3339(wall());
  controllers::ObjectPtr cached = nodes.get(spec.name);
  json current;
  if (cached) {
    current = *cached;
  } else {
    json node = gpu::node_object(spec, stamp);
    ApiResult r = client.call("POST", node_path(), node);
    if (r.ok()) return ensure_lease(spec.name, str(meta(r.body, "uid")));
    if (r.code != 409) return Status::internal("creating node " + spec.name + ": " + r.body.dump());
    r = client.call("GET", node_path(spec.name));
    if (!r.ok()) return Status::internal("reading node " + spec.name + ": " + r.body.dump());
    current = std::move(r.body);
  }
  // kube never changes a node's podCIDR once set: pods keep addresses of it.
  if (auto cidr = str(current["spec"].value("podCIDR", json())); !cidr.empty())
    spec.pod_cidr = cidr;
  const json desired = gpu::node_object(spec, stamp);
  for (int attempt = 0;; ++attempt) {
    json next = merged_node(current, desired);
    if (next != current) {
      ApiResult r = client.call("PUT", node_path(spec.name), next);
      if (r.code == 409 && attempt + 1 < kConflictRetries) {
        r = client.call("GET", node_path(spec.name));
        if (!r.ok()) return Status::internal("reading node " + spec.name + ": " + r.body.dump());
        current = std::move(r.body);
        continue;
      }
      if (!r.ok()) return Status::internal("updating node " + spec.name + ": " + r.body.dump());
      current = std::move(r.body);
    }
    if (status_differs(current, desired["status"])) {
      json body = current;
      body["status"] = desired["status"];
      ApiResult r = client.call("PUT", node_path(spec.name, "status"), body);
      if (r.code == 409 && attempt + 1 < kConflictRetries) {
        r = client.call("GET", node_path(spec.name));
        if (!r.ok()) return Status::internal("reading node " + spec.name + ": " + r.body.dump());
        current = std::move(r.body);
        continue;
      }
      if (!r.ok())
        return Status::internal("updating node status " + spec.name + ": " + r.body.dump());
    }
    return ensure_lease(spec.name, str(meta(current, "uid")));
  }
}

Status Registrar::register_nodes(std::vector<gpu::NodeSpec>& specs) {
  std::mutex mu;
  Status first;
  size_t failed = 0;
  pool.parallel(specs.size(), [&](size_t i) {
    Status s = register_node(specs[i]);
    if (s.is_ok()) return;
    std::lock_guard lock(mu);
    if (failed++ == 0) first = s;
  });
  if (failed > 0)
    return Status(first.code(),
                  std::to_string(failed) + " of " + std::to_string(specs.size()) +
                      " simulated nodes failed to register; first: " + first.message());
  return Status::ok();
}

Status Registrar::remove_stale(const std::vector<gpu::NodeSpec>& specs) {
  std::unordered_set<std::string> wanted;
  for (const gpu::NodeSpec& s : specs) wanted.insert(s.name);
  std::vector<std::string> stale;
  for (const controllers::ObjectPtr& n : nodes.list()) {
    const json& labels = meta(*n, "labels");
    std::string name = str(meta(*n, "name"));
    if (labels.is_object() && labels.value(std::string(gpu::kSimulatedLabel), "") == "true" &&
        !wanted.count(name))
      stale.push_back(std::move(name));
  }
  if (stale.empty()) return Status::ok();
  std::unordered_map<std::string, std::vector<json>> bound;  // node -> its pods' metadata
  std::unordered_set<std::string> stale_set(stale.begin(), stale.end());
  for (const controllers::ObjectPtr& p : pods.list()) {
    std::string node = str(p->contains("spec") ? (*p)["spec"].value("nodeName", json()) : json());
    if (stale_set.count(node)) bound[node].push_back((*p)["metadata"]);
  }
  std::mutex mu;
  Status first;
  pool.parallel(stale.size(), [&](size_t i) {
    const std::string& node = stale[i];
    static const std::vector<json> kNone;
    auto found = bound.find(node);
    const std::vector<json>& its_pods = found == bound.end() ? kNone : found->second;
    std::vector<std::string> errors;
    // Its pods go with it: nothing would ever run or stop them.
    for (const json& m : its_pods) {
      ApiResult r = client.call(
          "DELETE", pod_path(str(m["namespace"]), str(m["name"])) + "?gracePeriodSeconds=0",
          {{"preconditions", {{"uid", m["uid"]}}}});
      if (!r.ok() && r.code != 404 && r.code != 409) errors.push_back(r.body.dump());
    }
    ApiResult r = client.call("DELETE", lease_path(node));
    if (!r.ok() && r.code != 404) errors.push_back(r.body.dump());
    r = client.call("DELETE", node_path(node));
    if (!r.ok() && r.code != 404) errors.push_back(r.body.dump());
    VKUBE_LOG(info, "removed a simulated node no longer configured", {"node", node},
              {"pods", its_pods.size()});
    if (errors.empty()) return;
    std::lock_guard lock(mu);
    if (first.is_ok()) first = Status::internal("removing node " + node + ": " + errors[0]);
  });
  return first;
}

}  // namespace vkube::nodesim
