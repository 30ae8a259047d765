// The Node object of a simulated node: what a kubelet would register, with
// the labels GPU Feature Discovery and the NVIDIA device plugin would add.
#include <cstdio>

#include "vkube/gpu/node_spec.h"
#include "vkube/gpu/resources.h"

namespace vkube::gpu {

namespace {

constexpr const char* kKubeletVersion = "v1.32.0-vkube-sim";

std::string cpu_quantity(int64_t milli) {
  return milli % 1000 == 0 ? std::to_string(milli / 1000) : std::to_string(milli) + "m";
}

// FNV-1a, 64 bit, from `seed`: machine IDs that stay the same across restarts.
uint64_t fnv64(std::string_view s, uint64_t seed) {
  uint64_t h = 14695981039346656037ull ^ seed;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// 32 hex digits derived from the node name and a purpose.
std::string hex128(std::string_view name, std::string_view purpose) {
  std::string key = std::string(purpose) + "/" + std::string(name);
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(fnv64(key, 1)),
                static_cast<unsigned long long>(fnv64(key, 2)));
  return buf;
}

std::string uuid(std::string_view name, std::string_view purpose) {
  std::string h = hex128(name, purpose);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

// "A100-SXM4-80GB" from "NVIDIA-A100-SXM4-80GB": the instance type's model part.
std::string short_model(const std::string& product) {
  for (std::string_view prefix : {"NVIDIA-", "Tesla-"})
    if (product.starts_with(prefix)) return product.substr(prefix.size());
  return product;
}

json condition(const char* type, const char* status, const char* reason, const char* message,
               std::string_view now) {
  return {{"type", type},       {"status", status},         {"reason", reason},
          {"message", message}, {"lastHeartbeatTime", now}, {"lastTransitionTime", now}};
}

bool in_mig_mode(const NodeSpec& spec, int gpu) {
  return gpu < static_cast<int>(spec.mig.size()) && !spec.mig[gpu].empty();
}

// The gpu.vkube.io/devices annotation, in NodeGpus::to_json's format.
std::string devices_json(const NodeSpec& spec) {
  json gpus = json::array();
  for (int i = 0; i < spec.gpus; ++i) {
    json g = {{"index", i}, {"model", spec.model.product}, {"memoryMiB", spec.model.memory_mib}};
    if (in_mig_mode(spec, i)) g["mig"] = spec.mig[i];
    gpus.push_back(std::move(g));
  }
  return json{{"gpus", std::move(gpus)}}.dump();
}

json gpu_labels(const NodeSpec& spec, const std::map<std::string, int>& mig_counts) {
  const bool time_slicing = spec.sharing == Sharing::kTimeSlicing;
  json l = json::object();
  l["nvidia.com/gpu.present"] = "true";
  l[std::string(kProductLabel)] = spec.model.product + (time_slicing ? "-SHARED" : "");
  l[std::string(kMemoryLabel)] = std::to_string(spec.model.memory_mib);
  l[std::string(kCountLabel)] = std::to_string(spec.gpus);
  l["nvidia.com/gpu.family"] = spec.model.family;
  l["nvidia.com/gpu.replicas"] = std::to_string(time_slicing ? spec.replicas : 1);
  l["nvidia.com/gpu.sharing-strategy"] = time_slicing ? "time-slicing" : "none";
  l["nvidia.com/mig.capable"] = spec.model.mig_capable ? "true" : "false";
  l["nvidia.com/mig.strategy"] = mig_counts.empty() ? "none" : "mixed";
  l["nvidia.com/mps.capable"] = "false";
  for (const auto& [profile, n] : mig_counts)
    l[std::string(kMigResourcePrefix) + profile + ".count"] = std::to_string(n);
  return l;
}

json node_status(const NodeSpec& spec, const std::map<std::string, int>& mig_counts,
                 std::string_view now) {
  int whole = 0;
  for (int i = 0; i < spec.gpus; ++i) whole += in_mig_mode(spec, i) ? 0 : 1;
  json capacity = {{"cpu", cpu_quantity(spec.cpu_milli)},
                   {"memory", std::to_string(spec.memory_mib) + "Mi"},
                   {"pods", std::to_string(spec.max_pods)},
                   {"ephemeral-storage", "500Gi"},
                   {"hugepages-1Gi", "0"},
                   {"hugepages-2Mi", "0"}};
  const int replicas = spec.sharing == Sharing::kTimeSlicing ? spec.replicas : 1;
  capacity[std::string(kGpuResource)] = std::to_string(whole * replicas);
  if (spec.sharing == Sharing::kFraction)
    capacity[std::string(kGpuMilliResource)] = std::to_string(1000 * whole);
  for (const auto& [profile, n] : mig_counts)
    capacity[std::string(kMigResourcePrefix) + profile] = std::to_string(n);

  json addresses = json::array();
  if (!spec.internal_ip.empty())
    addresses.push_back({{"type", "InternalIP"}, {"address", spec.internal_ip}});
  addresses.push_back({{"type", "Hostname"}, {"address", spec.name}});
  return {
      {"capacity", capacity},
      {"allocatable", capacity},
      {"conditions",
       {condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                  "kubelet has sufficient memory available", now),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                  "kubelet has no disk pressure", now),
        condition("PIDPressure", "False", "KubeletHasSufficientPID",
                  "kubelet has sufficient PID available", now),
        condition("Ready", "True", "KubeletReady", "simulated node is ready (vkube host)", now)}},
      {"addresses", std::move(addresses)},
      {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 10250}}}}},
      {"nodeInfo",
       {{"machineID", hex128(spec.name, "machine")},
        {"systemUUID", uuid(spec.name, "system")},
        {"bootID", uuid(spec.name, "boot")},
        {"kernelVersion", "simulated"},
        {"osImage", "vkube simulated node"},
        {"containerRuntimeVersion", "simulated://1.0"},
        {"kubeletVersion", kKubeletVersion},
        {"kubeProxyVersion", kKubeletVersion},
        {"operatingSystem", "linux"},
        {"architecture", "amd64"}}},
  };
}

}  // namespace

json node_object(const NodeSpec& spec, std::string_view now_rfc3339) {
  std::map<std::string, int> mig_counts;
  for (int i = 0; i < spec.gpus; ++i)
    if (in_mig_mode(spec, i))
      for (const std::string& profile : spec.mig[i]) ++mig_counts[profile];

  json labels = {
      {"kubernetes.io/hostname", spec.name},
      {"kubernetes.io/os", "linux"},
      {"kubernetes.io/arch", "amd64"},
      {"node.kubernetes.io/instance-type",
       spec.gpus > 0 ? "sim-" + std::to_string(spec.gpus) + "x" + short_model(spec.model.product)
                     : std::string("sim-cpu")}};
  // GFD runs only where there are GPUs.
  if (spec.gpus > 0) labels.update(gpu_labels(spec, mig_counts));
  for (const auto& [k, v] : spec.labels) labels[k] = v;
  labels[std::string(kSimulatedLabel)] = "true";  // the simulator finds its nodes by it

  json annotations = {
      {std::string(kSimulatedLabel),
       "This node is simulated by vkube host: it runs no containers; a node agent inside vkube "
       "reports its pods as running."}};
  if (spec.gpus > 0) annotations[std::string(kDevicesAnnotation)] = devices_json(spec);

  json node_spec = {{"providerID", "vkube-sim://" + spec.name}};
  if (!spec.pod_cidr.empty()) {
    node_spec["podCIDR"] = spec.pod_cidr;
    node_spec["podCIDRs"] = {spec.pod_cidr};
  }
  if (spec.taints.is_array() && !spec.taints.empty()) node_spec["taints"] = spec.taints;

  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", spec.name}, {"labels", std::move(labels)}, {"annotations", annotations}}},
          {"spec", std::move(node_spec)},
          {"status", node_status(spec, mig_counts, now_rfc3339)}};
}

}  // namespace vkube::gpu
