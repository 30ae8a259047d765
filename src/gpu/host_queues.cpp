// A tenant's GPU share as KAI or Kueue queue objects (host_queues.h); the
// table of what maps to what is in docs/gpu-queues.md.
#include "vkube/gpu/host_queues.h"

#include <cctype>
#include <optional>

namespace vkube::gpu {

using json = nlohmann::json;

namespace {

constexpr std::string_view kKaiGroupVersion = "scheduling.run.ai/v2";
constexpr std::string_view kKueueGroupVersion = "kueue.x-k8s.io/v1beta1";
constexpr std::string_view kGpuResource = "nvidia.com/gpu";
constexpr std::string_view kProductLabel = "nvidia.com/gpu.product";
// Kueue has no "unlimited": every resource a pod asks for must be covered
// with a quota. cpu and memory are not what the pool shares out (the
// namespace's ResourceQuota caps them), so they get more than any host has,
// small enough that a thousand tenants' sum stays within Kueue's int64
// arithmetic (1Pi is 2^50 bytes).
constexpr std::string_view kUncappedCpu = "100k";
constexpr std::string_view kUncappedMemory = "1Pi";
// KAI's "no guarantee needed, no limit" for cpu and memory (its docs'
// special value -1: unlimited quota, no limit).
constexpr double kKaiUnlimited = -1;

json meta(std::string_view name, std::string_view tenant, const GpuShare* share) {
  json m = {{"name", name}, {"labels", {{"app.kubernetes.io/managed-by", "vkube"}}}};
  if (!tenant.empty()) m["labels"]["vkube.io/tenant"] = tenant;
  if (share) m["annotations"] = {{std::string(kShareAnnotation), share->to_string()}};
  return m;
}

// KAI counts GPUs as float64 fractions (0.7 = 70% of a GPU): a whole number
// is written as an integer so the object reads as the docs' examples do.
json kai_gpus(int64_t milli) {
  if (milli % 1000 == 0) return milli / 1000;
  return static_cast<double>(milli) / 1000.0;
}

json kai_resource(json quota, json limit, int64_t weight) {
  return {{"quota", std::move(quota)}, {"limit", std::move(limit)}, {"overQuotaWeight", weight}};
}

json kai_resources(json gpu, int64_t weight) {
  return {{"gpu", std::move(gpu)},
          {"cpu", kai_resource(kKaiUnlimited, kKaiUnlimited, weight)},
          {"memory", kai_resource(kKaiUnlimited, kKaiUnlimited, weight)}};
}

std::vector<json> kai_objects(const GpuShare& share, std::string_view tenant) {
  // A tenant whose pods may not be preempted never borrows: KAI keeps its
  // non-preemptible pods within quota, and the limit says so too.
  json limit = share.limit_milli ? kai_gpus(*share.limit_milli) : json(kKaiUnlimited);
  if (!share.preemptible) limit = kai_gpus(share.deserved_milli);
  json queue = {{"apiVersion", kKaiGroupVersion},
                {"kind", "Queue"},
                {"metadata", meta(tenant_queue_name(tenant), tenant, &share)},
                {"spec",
                 {{"displayName", "vkube tenant " + std::string(tenant)},
                  {"parentQueue", kPoolQueue},
                  {"resources",
                   kai_resources(kai_resource(kai_gpus(share.deserved_milli), limit, share.weight),
                                 share.weight)}}}};
  return {kai_pool_queue(share.deserved_milli), std::move(queue)};
}

// nvidia.com/gpu is an integer extended resource: a pod asks for whole
// GPUs, so Kueue's quotas are whole GPUs, rounded down (a guarantee never
// promises more than deserved, a cap never allows more than the limit).
std::string whole_gpus(int64_t milli) {
  return std::to_string(milli / 1000);
}

std::string flavor_name(std::string_view model) {
  std::string out = std::string(kGpuFlavor) + "-";
  for (char c : model) out += c == '_' ? '-' : static_cast<char>(std::tolower(c));
  return out;
}

json flavor(std::string_view name, json node_labels) {
  json f = {{"apiVersion", kKueueGroupVersion},
            {"kind", "ResourceFlavor"},
            {"metadata", meta(name, "", nullptr)},
            {"spec", json::object()}};
  if (!node_labels.empty()) f["spec"]["nodeLabels"] = std::move(node_labels);
  return f;
}

json gpu_quota(int64_t nominal_milli, std::optional<int64_t> borrowing_milli) {
  json q = {{"name", kGpuResource}, {"nominalQuota", whole_gpus(nominal_milli)}};
  if (borrowing_milli) q["borrowingLimit"] = whole_gpus(*borrowing_milli);
  return q;
}

std::vector<json> kueue_objects(const GpuShare& share, std::string_view tenant,
                                std::string_view ns) {
  std::vector<json> out;
  out.push_back(flavor(kDefaultFlavor, json::object()));
  out.push_back(flavor(kGpuFlavor, json::object()));
  const int64_t deserved = share.deserved_milli / 1000 * 1000;
  // Borrowing goes through the any-model flavor only, so that the limit
  // holds across flavors: deserved per model, plus at most limit - deserved
  // more of any GPU. Without a limit, every flavor may borrow.
  std::optional<int64_t> borrow;
  if (share.limit_milli) borrow = *share.limit_milli / 1000 * 1000 - deserved;
  if (!share.preemptible) borrow = 0;
  const std::optional<int64_t> model_borrow =
      share.limit_milli || !share.preemptible ? std::optional<int64_t>(0) : std::nullopt;
  json gpu_flavors = json::array();
  int64_t models = 0;
  for (const auto& [model, milli] : share.model_deserved_milli) {
    const std::string name = flavor_name(model);
    out.push_back(flavor(name, {{kProductLabel, model}}));
    gpu_flavors.push_back({{"name", name}, {"resources", {gpu_quota(milli, model_borrow)}}});
    models += milli / 1000 * 1000;
  }
  gpu_flavors.push_back(
      {{"name", kGpuFlavor}, {"resources", {gpu_quota(deserved - models, borrow)}}});
  json groups =
      json::array({{{"coveredResources", {"cpu", "memory"}},
                    {"flavors",
                     {{{"name", kDefaultFlavor},
                       {"resources",
                        {{{"name", "cpu"}, {"nominalQuota", kUncappedCpu}},
                         {{"name", "memory"}, {"nominalQuota", kUncappedMemory}}}}}}}},
                   {{"coveredResources", {kGpuResource}}, {"flavors", std::move(gpu_flavors)}}});
  json cq = {{"apiVersion", kKueueGroupVersion},
             {"kind", "ClusterQueue"},
             {"metadata", meta(tenant_queue_name(tenant), tenant, &share)},
             {"spec",
              {{"cohort", kPoolQueue},
               {"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", ns}}}}},
               {"queueingStrategy", "BestEffortFIFO"},
               {"resourceGroups", std::move(groups)},
               // A tenant within its nominal quota takes back what others borrowed
               // whatever their priority (vkube's reclaim); borrowers never preempt
               // to borrow; inside the tenant, priority orders preemption.
               {"preemption",
                {{"reclaimWithinCohort", "Any"},
                 {"borrowWithinCohort", {{"policy", "Never"}}},
                 {"withinClusterQueue", "LowerPriority"}}},
               {"fairSharing", {{"weight", std::to_string(share.weight)}}}}}};
  out.push_back(std::move(cq));
  json lq = {{"apiVersion", kKueueGroupVersion},
             {"kind", "LocalQueue"},
             {"metadata", meta(kLocalQueue, tenant, nullptr)},
             {"spec", {{"clusterQueue", tenant_queue_name(tenant)}}}};
  lq["metadata"]["namespace"] = ns;
  out.push_back(std::move(lq));
  return out;
}

}  // namespace

Result<HostQueueMode> parse_host_queue_mode(std::string_view text) {
  if (text == "vkube") return HostQueueMode::kVkube;
  if (text == "kai") return HostQueueMode::kKai;
  if (text == "kueue") return HostQueueMode::kKueue;
  return Status::invalid("--host-gpu-sharing must be vkube, kai or kueue, got '" +
                         std::string(text) + "'");
}

std::string_view host_queue_mode_name(HostQueueMode mode) {
  switch (mode) {
    case HostQueueMode::kKai:
      return "kai";
    case HostQueueMode::kKueue:
      return "kueue";
    case HostQueueMode::kVkube:
      break;
  }
  return "vkube";
}

std::string tenant_queue_name(std::string_view tenant) {
  return "vkube-" + std::string(tenant);
}

std::vector<json> host_queue_objects(HostQueueMode mode, const GpuShare& share,
                                     std::string_view tenant, std::string_view host_namespace) {
  if (mode == HostQueueMode::kKai) return kai_objects(share, tenant);
  if (mode == HostQueueMode::kKueue) return kueue_objects(share, tenant, host_namespace);
  return {};
}

json kai_pool_queue(int64_t deserved_milli) {
  json gpu = kai_resource(kai_gpus(deserved_milli), kKaiUnlimited, 1);
  return {{"apiVersion", kKaiGroupVersion},
          {"kind", "Queue"},
          {"metadata", meta(kPoolQueue, "", nullptr)},
          {"spec", {{"displayName", "vkube GPU pool"}, {"resources", kai_resources(gpu, 1)}}}};
}

HostQueuePodPolicy host_queue_pod_policy(HostQueueMode mode, const GpuShare& share,
                                         std::string_view tenant) {
  HostQueuePodPolicy p;
  if (mode == HostQueueMode::kKai) {
    p.scheduler_name = kKaiSchedulerName;
    p.labels[std::string(kKaiQueueLabel)] = tenant_queue_name(tenant);
    if (!share.preemptible) p.labels[std::string(kKaiPreemptibilityLabel)] = "non-preemptible";
    p.fractions = "kai";
  } else if (mode == HostQueueMode::kKueue) {
    p.labels[std::string(kKueueQueueLabel)] = kLocalQueue;
  }
  return p;
}

std::vector<std::string> host_queue_notes(HostQueueMode mode, const GpuShare& share) {
  std::vector<std::string> notes;
  if (mode == HostQueueMode::kKai && !share.model_deserved_milli.empty()) {
    std::string models;
    for (const auto& [model, milli] : share.model_deserved_milli)
      models += (models.empty() ? "model:" : ",model:") + model + "=" + format_gpus(milli);
    notes.push_back("KAI queues have no per-model quota: " + models +
                    " is not written; the queue guarantees " + format_gpus(share.deserved_milli) +
                    " GPUs of any model");
  }
  if (mode != HostQueueMode::kKueue) return notes;
  auto whole = [&](std::string_view what, int64_t milli) {
    if (milli % 1000 != 0)
      notes.push_back(
          "Kueue counts whole GPUs (nvidia.com/gpu is an integer resource): " + std::string(what) +
          " " + format_gpus(milli) + " becomes " + whole_gpus(milli));
  };
  whole("deserved", share.deserved_milli);
  if (share.limit_milli) whole("limit", *share.limit_milli);
  for (const auto& [model, milli] : share.model_deserved_milli) {
    whole("model:" + model, milli);
    notes.push_back("Kueue's flavor " + flavor_name(model) + " selects nodes labelled " +
                    std::string(kProductLabel) + "=" + model +
                    " exactly (vkube host matches a part of the product name)");
  }
  return notes;
}

std::vector<QueueCrd> host_queue_crds(HostQueueMode mode) {
  if (mode == HostQueueMode::kKai)
    return {{"queues.scheduling.run.ai", std::string(kKaiGroupVersion), "queues"}};
  if (mode == HostQueueMode::kKueue) {
    std::vector<QueueCrd> out;
    for (const char* plural : {"resourceflavors", "clusterqueues", "localqueues"})
      out.push_back(
          {std::string(plural) + ".kueue.x-k8s.io", std::string(kKueueGroupVersion), plural});
    return out;
  }
  return {};
}

std::string host_queue_collection(const json& obj) {
  const std::string api = obj.value("apiVersion", "");
  const std::string kind = obj.value("kind", "");
  std::string plural;
  if (api == kKaiGroupVersion && kind == "Queue") plural = "queues";
  if (api == kKueueGroupVersion && kind == "ResourceFlavor") plural = "resourceflavors";
  if (api == kKueueGroupVersion && kind == "ClusterQueue") plural = "clusterqueues";
  if (api == kKueueGroupVersion && kind == "LocalQueue") plural = "localqueues";
  if (plural.empty()) return {};
  std::string path = "/apis/" + api;
  const json& m = obj.value("metadata", json::object());
  if (m.contains("namespace")) path += "/namespaces/" + m.value("namespace", "");
  return path + "/" + plural;
}

}  // namespace vkube::gpu
