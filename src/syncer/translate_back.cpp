// Host -> tenant: pod status and virtual nodes (see translate_back.h).
#include "vkube/syncer/translate_back.h"

#include <string>

#include "vkube/gpu/resources.h"
#include "vkube/syncer/gpu_sharing.h"

namespace vkube::syncer {

namespace {

using json = nlohmann::json;

bool shown_label(const std::string& key) {
  return key.starts_with("nvidia.com/") || key == "kubernetes.io/hostname" ||
         key == "kubernetes.io/os" || key == "kubernetes.io/arch" ||
         key == "node.kubernetes.io/instance-type" || key.starts_with("topology.kubernetes.io/") ||
         key == "vkube.io/simulated";
}

}  // namespace

json tenant_pod_status(const json& host_pod) {
  const json status = host_pod.value("status", json::object());
  json out = json::object();
  for (const char* field : {"phase", "reason", "message", "conditions", "hostIP", "hostIPs",
                            "podIP", "podIPs", "startTime", "qosClass", "initContainerStatuses",
                            "containerStatuses", "ephemeralContainerStatuses", "resize"})
    if (auto it = status.find(field); it != status.end()) out[field] = *it;
  if (auto borrowing = borrowing_condition(host_pod)) {
    if (!out["conditions"].is_array()) out["conditions"] = json::array();
    out["conditions"].push_back(std::move(*borrowing));
  }
  return out;
}

json virtual_node(const json& host_node) {
  const json meta = host_node.value("metadata", json::object());
  json labels = json::object();
  if (auto l = meta.find("labels"); l != meta.end() && l->is_object())
    for (auto it = l->begin(); it != l->end(); ++it)
      if (shown_label(it.key())) labels[it.key()] = it.value();
  labels["vkube.io/virtual-node"] = "true";
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", meta.value("name", "")}, {"labels", std::move(labels)}}}};
  if (auto a = meta.find("annotations"); a != meta.end() && a->is_object())
    if (auto d = a->find(std::string(gpu::kDevicesAnnotation)); d != a->end())
      node["metadata"]["annotations"][std::string(gpu::kDevicesAnnotation)] = *d;
  const json status = host_node.value("status", json::object());
  json out = json::object();
  for (const char* field :
       {"capacity", "allocatable", "conditions", "addresses", "nodeInfo", "daemonEndpoints"})
    if (auto it = status.find(field); it != status.end()) out[field] = *it;
  node["status"] = std::move(out);
  return node;
}

}  // namespace vkube::syncer
