// GPU quota admission at pod create (gpu_quota.h).
#include "gpu_quota.h"

#include <chrono>

#include "object.h"
#include "server_impl.h"
#include "vkube/common/log.h"

namespace vkube::apiserver {

namespace {

// Every form of GPU request names "gpu" (nvidia.com/gpu, vkube.io/gpu-milli,
// gpu-fraction, gpu-memory) or a MIG resource: other pods are not decoded.
bool may_ask_for_gpu(const std::string& stored) {
  return stored.find("gpu") != std::string::npos ||
         stored.find(gpu::kMigResourcePrefix) != std::string::npos;
}

std::optional<int64_t> grace_end(const json& pod) {
  auto m = pod.find("metadata");
  if (m == pod.end() || !m->is_object()) return std::nullopt;
  auto ts = m->find("deletionTimestamp");
  auto grace = m->find("deletionGracePeriodSeconds");
  if (ts == m->end() || !ts->is_string() || grace == m->end() || !grace->is_number_integer())
    return std::nullopt;
  auto at = parse_rfc3339(ts->get<std::string>());
  if (!at) return std::nullopt;
  return *at + grace->get<int64_t>();
}

}  // namespace

void GpuQuotaAdmission::State::put(const std::string& uid, Entry e) {
  erase_uid(uid);
  if (e.revision != 0) uid_by_key[e.key] = uid;
  if (e.grace_end)
    terminating.insert(uid);
  else
    counted += e.usage;
  by_uid.emplace(uid, std::move(e));
}

void GpuQuotaAdmission::State::erase_uid(const std::string& uid) {
  auto it = by_uid.find(uid);
  if (it == by_uid.end()) return;
  if (it->second.grace_end)
    terminating.erase(uid);
  else
    counted -= it->second.usage;
  by_uid.erase(it);
}

void GpuQuotaAdmission::State::forget_key(const std::string& key) {
  auto it = uid_by_key.find(key);
  if (it == uid_by_key.end()) return;
  erase_uid(it->second);
  uid_by_key.erase(it);
}

void GpuQuotaAdmission::State::apply(const std::string& key, const std::string& value,
                                     storage::Revision revision) {
  if (value.empty() || !may_ask_for_gpu(value)) return forget_key(key);
  json pod = json::parse(value, nullptr, false);
  if (!pod.is_object()) return forget_key(key);
  // kube's QuotaV1Pod: terminal pods hold nothing.
  const std::string phase = str_at(pod, "status", "phase");
  if (phase == "Succeeded" || phase == "Failed") return forget_key(key);
  auto request = gpu::request_of(pod);
  if (!request.is_ok() || request->empty()) return forget_key(key);
  const std::string uid = str_at(pod, "metadata", "uid");
  // The same name may come back as another pod (another uid).
  if (auto it = uid_by_key.find(key); it != uid_by_key.end() && it->second != uid) forget_key(key);
  put(uid, Entry{gpu::usage_of(pod, *request), grace_end(pod), revision, key});
}

gpu::GpuUsage GpuQuotaAdmission::State::used(int64_t now_unix) const {
  gpu::GpuUsage out = counted;
  for (const std::string& uid : terminating) {
    const Entry& e = by_uid.at(uid);
    if (now_unix <= *e.grace_end) out += e.usage;
  }
  return out;
}

GpuQuotaAdmission::GpuQuotaAdmission(storage::Backend* backend, std::string pod_prefix,
                                     gpu::GpuQuota quota)
    : backend_(backend), prefix_(std::move(pod_prefix)), quota_(std::move(quota)) {
  if (Status s = ensure_synced(); !s.is_ok())
    VKUBE_LOG(warn, "GPU quota: cannot read the pods yet", {"error", s.message()});
  else
    VKUBE_LOG(info, "GPU quota enforced at pod create", {"quota", quota_.to_string()},
              {"used", gpu::format_usage(quota_, used())});
}

GpuQuotaAdmission::~GpuQuotaAdmission() {
  shutdown();
}

void GpuQuotaAdmission::shutdown() {
  std::unique_ptr<storage::Watch> w;
  {
    std::lock_guard lock(sync_mu_);
    shut_down_ = true;
    synced_ = false;
    w = std::move(watch_);
  }
  if (w) w->cancel();
}

Status GpuQuotaAdmission::ensure_synced() {
  if (synced_) return Status::ok();
  std::lock_guard lock(sync_mu_);
  if (shut_down_) return Status::unavailable("the API server is shutting down");
  if (synced_) return Status::ok();
  if (backend_ == nullptr) return Status::unavailable("no store to read pods from");
  return resync();
}

Status GpuQuotaAdmission::resync() {
  if (watch_) {
    watch_->cancel();
    watch_.reset();
  }
  storage::ListOptions o;
  o.prefix = prefix_;
  auto listed = backend_->list(o);
  if (!listed.is_ok()) return listed.status();
  State fresh;
  for (const storage::KeyValue& kv : listed->items) fresh.apply(kv.key, kv.value, kv.mod_revision);
  {
    std::lock_guard lock(mu_);
    // Creates admitted and still in flight keep their reservations.
    for (auto& [uid, e] : state_.by_uid)
      if (e.revision == 0 && !fresh.by_uid.contains(uid)) fresh.put(uid, e);
    state_ = std::move(fresh);
    applied_ = listed->revision;
  }
  auto w = backend_->watch(prefix_, listed->revision);
  if (!w.is_ok()) return w.status();
  storage::Watch* raw = w->get();
  watch_ = std::move(w).value();
  synced_ = true;
  // Runs on the committing writer's thread, before the write is acknowledged.
  raw->set_notifier([this, raw] { drain(raw); });
  drain(raw);
  return synced_ ? Status::ok() : Status::unavailable("the pod watch ended at once");
}

void GpuQuotaAdmission::drain(storage::Watch* watch) {
  std::lock_guard lock(mu_);
  std::vector<storage::EventPtr> events;
  Status s;
  do {
    events.clear();
    s = watch->poll(&events, std::chrono::milliseconds(0));
    for (const storage::EventPtr& e : events) {
      if (e->kv.mod_revision <= applied_) continue;  // already in a list
      state_.apply(e->kv.key, e->type == storage::EventType::kPut ? e->kv.value : std::string(),
                   e->kv.mod_revision);
      applied_ = e->kv.mod_revision;
    }
  } while (s.is_ok() && !events.empty());
  // Cancelled: shut down or replaced by a resync, which set synced_ itself.
  if (!s.is_ok() && s.code() != Code::kCancelled) {
    synced_ = false;
    VKUBE_LOG(warn, "GPU quota: pod watch ended; re-listing at the next GPU pod",
              {"error", s.message()});
  }
}

std::optional<ApiError> GpuQuotaAdmission::admit(const json& pod, const std::string& name,
                                                 bool dry_run) {
  auto request = gpu::request_of(pod);
  // A malformed request never gets a GPU (the scheduler says why); it counts
  // for nothing here either.
  if (!request.is_ok() || request->empty()) return std::nullopt;
  const gpu::GpuUsage want = gpu::usage_of(pod, *request);
  if (Status s = ensure_synced(); !s.is_ok())
    return ApiError(Status::unavailable("GPU quota usage is unknown: " + s.message()));
  std::lock_guard lock(mu_);
  if (auto why = gpu::check_quota(quota_, state_.used(now_unix()), want)) {
    return ApiError(Status(Code::kForbidden, "pods \"" + name + "\" is forbidden: " + *why),
                    {{"name", name}, {"kind", "pods"}});
  }
  if (!dry_run) state_.put(str_at(pod, "metadata", "uid"), Entry{want, std::nullopt, 0, ""});
  return std::nullopt;
}

void GpuQuotaAdmission::release(const json& pod) {
  const std::string uid = str_at(pod, "metadata", "uid");
  std::lock_guard lock(mu_);
  auto it = state_.by_uid.find(uid);
  if (it != state_.by_uid.end() && it->second.revision == 0) state_.erase_uid(uid);
}

gpu::GpuUsage GpuQuotaAdmission::used() {
  std::lock_guard lock(mu_);
  return state_.used(now_unix());
}

std::optional<ApiError> admit_gpu_quota(Context& c, const json& pod, const std::string& name) {
  GpuQuotaAdmission* q = c.server.gpu_quota();
  if (q == nullptr || !c.kind.strategy.gpu_quota_counted) return std::nullopt;
  return q->admit(pod, name, c.dry_run());
}

void release_gpu_quota(Context& c, const json& pod) {
  GpuQuotaAdmission* q = c.server.gpu_quota();
  if (q != nullptr && c.kind.strategy.gpu_quota_counted) q->release(pod);
}

}  // namespace vkube::apiserver
