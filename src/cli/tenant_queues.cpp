// The tenant's KAI or Kueue queues on a real host (tenant_queues.h).
#include "tenant_queues.h"

#include <cstdio>
#include <tuple>

#include "vkube/cli/manifests.h"

namespace vkube::cli {

namespace {

using hostclient::Client;
using json = nlohmann::json;

constexpr const char* kKaiQueues = "/apis/scheduling.run.ai/v2/queues";
constexpr const char* kKueueClusterQueues = "/apis/kueue.x-k8s.io/v1beta1/clusterqueues";

std::string name_of(const json& obj) {
  return obj.value("metadata", json::object()).value("name", "");
}

std::string label_of(const json& obj, const std::string& key) {
  const json labels = obj.value("metadata", json::object()).value("labels", json::object());
  return labels.is_object() ? labels.value(key, "") : "";
}

Status failed(const std::string& what, const hostclient::Response& r) {
  return Status::unavailable(what + ": " + r.message());
}

// Creates `obj`, or when it exists replaces it (keep_existing: leaves it).
Status put(Client& host, const json& obj, bool keep_existing) {
  const std::string path = gpu::host_queue_collection(obj);
  const std::string what = obj.value("kind", "") + " " + name_of(obj);
  auto r = host.call("POST", path, obj);
  if (r.ok()) return Status::ok();
  if (r.code != 409) return failed("creating " + what, r);
  if (keep_existing) return Status::ok();
  auto got = host.call("GET", path + "/" + name_of(obj));
  if (!got.ok()) return failed("reading " + what, got);
  json next = obj;
  next["metadata"]["resourceVersion"] = got.body["metadata"].value("resourceVersion", "");
  r = host.call("PUT", path + "/" + name_of(obj), next);
  return r.ok() ? Status::ok() : failed("updating " + what, r);
}

// The GPUs KAI's queues under the pool guarantee, in thousandths, leaving
// out `except` (the tenant being created or deleted). Every child of the
// pool counts, whoever made it (`vkube create`, or a release of the chart).
Result<int64_t> kai_pool_deserved(Client& host, const std::string& except) {
  auto r = host.call("GET", kKaiQueues);
  if (!r.ok()) return failed("listing KAI queues", r);
  int64_t sum = 0;
  for (const json& q : r.body.value("items", json::array())) {
    const json spec = q.value("spec", json::object());
    if (name_of(q) == except || spec.value("parentQueue", "") != gpu::kPoolQueue) continue;
    const json quota = spec.value("resources", json::object())
                           .value("gpu", json::object())
                           .value("quota", json(0));
    if (quota.is_number() && quota.get<double>() > 0)
      sum += static_cast<int64_t>(quota.get<double>() * 1000 + 0.5);
  }
  return sum;
}

// Sets the pool queue's GPU quota to `deserved_milli`, creating it when
// missing; anything else the operator set on it stays.
Status set_kai_pool(Client& host, int64_t deserved_milli) {
  json pool = gpu::kai_pool_queue(deserved_milli);
  const std::string path = std::string(kKaiQueues) + "/" + std::string(gpu::kPoolQueue);
  auto got = host.call("GET", path);
  if (got.code == 404) return put(host, pool, false);
  if (!got.ok()) return failed("reading KAI Queue vkube-pool", got);
  json next = got.body;
  next["spec"]["resources"]["gpu"]["quota"] = pool["spec"]["resources"]["gpu"]["quota"];
  auto r = host.call("PUT", path, next);
  return r.ok() ? Status::ok() : failed("updating KAI Queue vkube-pool", r);
}

// Whether the cluster-scoped object at `path` exists and is the tenant's.
Result<bool> owned(Client& host, const std::string& path, const std::string& tenant) {
  auto got = host.call("GET", path);
  if (got.code == 404) return false;  // or no such CRD on this host
  if (!got.ok()) return failed("reading " + path, got);
  return label_of(got.body, "vkube.io/tenant") == tenant;
}

// Deletes the cluster-scoped object at `path` if it is the tenant's.
// Returns whether it was there.
Result<bool> delete_owned(Client& host, const std::string& path, const std::string& tenant) {
  auto mine = owned(host, path, tenant);
  if (!mine.is_ok() || !*mine) return mine;
  auto r = host.call("DELETE", path);
  if (!r.ok() && r.code != 404) return failed("deleting " + path, r);
  return true;
}

Status check_queue_crds(Client& host, gpu::HostQueueMode mode) {
  const char* installs = mode == gpu::HostQueueMode::kKai ? "install the KAI Scheduler on the host"
                                                          : "install Kueue on the host";
  for (const gpu::QueueCrd& crd : gpu::host_queue_crds(mode)) {
    auto r = host.call("GET", "/apis/" + crd.group_version);
    bool served = false;
    if (r.ok())
      for (const json& res : r.body.value("resources", json::array()))
        served = served || res.value("name", "") == crd.plural;
    else if (r.code != 404)
      return failed("reading /apis/" + crd.group_version, r);
    if (!served)
      return Status::not_found("--host-gpu-sharing " +
                               std::string(gpu::host_queue_mode_name(mode)) +
                               ": the host has no CustomResourceDefinition " + crd.name + " (" +
                               crd.group_version + "); " + installs + " first");
  }
  return Status::ok();
}

Status set_pod_policy(gpu::HostQueueMode mode, const gpu::GpuShare& share, TenantSpec& spec) {
  gpu::HostQueuePodPolicy p = gpu::host_queue_pod_policy(mode, share, spec.name);
  if (!p.fractions.empty()) {
    // "milli" is the default, and means vkube host's own GPU scheduler.
    if (spec.gpu_sharing != "milli" && spec.gpu_sharing != p.fractions)
      return Status::invalid("--host-gpu-sharing " + std::string(gpu::host_queue_mode_name(mode)) +
                             " translates GPU fractions as --gpu-sharing " + p.fractions +
                             ", not " + spec.gpu_sharing);
    spec.gpu_sharing = p.fractions;
  }
  spec.host_scheduler_name = p.scheduler_name;
  std::string labels;
  for (const auto& [k, v] : p.labels) labels += (labels.empty() ? "" : ",") + k + "=" + v;
  spec.host_pod_labels = labels;
  return Status::ok();
}

// Creates or replaces the mode's objects for `share`.
Status write_queues(Client& host, gpu::HostQueueMode mode, const gpu::GpuShare& share,
                    const std::string& tenant, const std::string& ns) {
  const std::string queue = gpu::tenant_queue_name(tenant);
  for (const json& obj : gpu::host_queue_objects(mode, share, tenant, ns)) {
    if (obj.value("kind", "") == "Queue" && name_of(obj) == gpu::kPoolQueue) {
      auto others = kai_pool_deserved(host, queue);
      if (!others.is_ok()) return others.status();
      VKUBE_RETURN_IF_ERROR(set_kai_pool(host, *others + share.deserved_milli));
      continue;
    }
    VKUBE_RETURN_IF_ERROR(put(host, obj, obj.value("kind", "") == "ResourceFlavor"));
  }
  return Status::ok();
}

}  // namespace

Status prepare_tenant_queues(Client& host, gpu::HostQueueMode mode, TenantSpec& spec) {
  if (mode == gpu::HostQueueMode::kVkube) return Status::ok();
  auto share = gpu::parse_gpu_share(spec.gpu_share);
  if (!share.is_ok()) return Status::invalid("--gpu-share: " + share.status().message());
  VKUBE_RETURN_IF_ERROR(set_pod_policy(mode, *share, spec));
  return check_queue_crds(host, mode);
}

Status apply_tenant_queues(Client& host, gpu::HostQueueMode mode, const TenantSpec& spec,
                           std::vector<std::string>* notes) {
  auto share = gpu::parse_gpu_share(spec.gpu_share);
  if (!share.is_ok()) return Status::invalid("--gpu-share: " + share.status().message());
  if (notes) *notes = gpu::host_queue_notes(mode, *share);
  return write_queues(host, mode, *share, spec.name, spec.ns);
}

Status refresh_tenant_queues(Client& host, const std::string& tenant, const gpu::GpuShare& share) {
  const std::string queue = gpu::tenant_queue_name(tenant);
  for (auto [mode, path, what] :
       {std::tuple{gpu::HostQueueMode::kKai, kKaiQueues, "KAI Queue"},
        std::tuple{gpu::HostQueueMode::kKueue, kKueueClusterQueues, "Kueue ClusterQueue"}}) {
    auto mine = owned(host, std::string(path) + "/" + queue, tenant);
    if (!mine.is_ok()) return mine.status();
    if (!*mine) continue;
    VKUBE_RETURN_IF_ERROR(write_queues(host, mode, share, tenant, tenant_host_namespace(tenant)));
    std::printf("tenant %s: %s %s updated\n", tenant.c_str(), what, queue.c_str());
    for (const std::string& n : gpu::host_queue_notes(mode, share))
      std::printf("note: %s\n", n.c_str());
  }
  return Status::ok();
}

Status delete_tenant_queues(Client& host, const std::string& tenant) {
  const std::string queue = gpu::tenant_queue_name(tenant);
  auto cq = delete_owned(host, std::string(kKueueClusterQueues) + "/" + queue, tenant);
  if (!cq.is_ok()) return cq.status();
  auto kai = delete_owned(host, std::string(kKaiQueues) + "/" + queue, tenant);
  if (!kai.is_ok()) return kai.status();
  if (!*kai) return Status::ok();
  auto rest = kai_pool_deserved(host, queue);
  if (!rest.is_ok()) return rest.status();
  return set_kai_pool(host, *rest);
}

}  // namespace vkube::cli
