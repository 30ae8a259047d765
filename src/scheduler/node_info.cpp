#include "node_info.h"

#include <charconv>

#include "vkube/api/quantity.h"
#include "vkube/gpu/quota.h"
#include "vkube/gpu/share.h"

namespace vkube::scheduler {

namespace {

void add_amount(Resources& r, const std::string& name, int64_t milli, bool max_instead) {
  auto apply = [&](int64_t& slot, int64_t v) { slot = max_instead ? std::max(slot, v) : slot + v; };
  if (name == "cpu")
    apply(r.cpu_milli, milli);
  else if (name == "memory")
    apply(r.memory, (milli + 999) / 1000);
  else if (name == "ephemeral-storage")
    apply(r.ephemeral, (milli + 999) / 1000);
  else if (name == "pods")
    apply(r.pods, (milli + 999) / 1000);
  else if (!is_gpu_resource(name) && name.find('/') != std::string::npos)
    apply(r.scalar[name], milli);
}

// A container's requests, limits standing in for absent requests.
Resources container_requests(const json& c) {
  Resources r;
  const json* res = json_at(c, {"resources"});
  if (res == nullptr) return r;
  std::map<std::string, int64_t> amounts;
  for (const char* part : {"limits", "requests"}) {
    const json* p = json_at(*res, {part});
    if (p == nullptr || !p->is_object()) continue;
    for (auto it = p->begin(); it != p->end(); ++it)
      if (auto v = api::quantity_milli(it.value())) amounts[it.key()] = *v;
  }
  for (const auto& [k, v] : amounts) add_amount(r, k, v, false);
  return r;
}

void merge(Resources& into, const Resources& r, bool max_instead) {
  auto apply = [&](int64_t& slot, int64_t v) { slot = max_instead ? std::max(slot, v) : slot + v; };
  apply(into.cpu_milli, r.cpu_milli);
  apply(into.memory, r.memory);
  apply(into.ephemeral, r.ephemeral);
  for (const auto& [k, v] : r.scalar) apply(into.scalar[k], v);
}

}  // namespace

bool is_gpu_resource(std::string_view name) {
  return name == gpu::kGpuResource || name == gpu::kGpuMilliResource ||
         name.starts_with(gpu::kMigResourcePrefix);
}

Result<PodInfo> pod_info(const json& pod) {
  PodInfo p;
  const json* meta = json_at(pod, {"metadata"});
  if (meta != nullptr) {
    p.ns = meta->value("namespace", "");
    p.key = p.ns + "/" + meta->value("name", "");
    p.uid = meta->value("uid", "");
  }
  static const json kEmpty = json::object();
  const json* spec = json_at(pod, {"spec"});
  if (spec == nullptr) spec = &kEmpty;
  if (const json* cs = json_at(*spec, {"containers"}); cs != nullptr && cs->is_array())
    for (const json& c : *cs) merge(p.requests, container_requests(c), false);
  if (const json* cs = json_at(*spec, {"initContainers"}); cs != nullptr && cs->is_array())
    for (const json& c : *cs) merge(p.requests, container_requests(c), true);
  if (const json* o = json_at(*spec, {"overhead"}); o != nullptr && o->is_object())
    for (auto it = o->begin(); it != o->end(); ++it)
      if (auto v = api::quantity_milli(it.value())) add_amount(p.requests, it.key(), *v, false);
  p.requests.pods = 1;
  if (const json* pr = json_at(*spec, {"priority"}); pr != nullptr && pr->is_number_integer())
    p.priority = pr->get<int32_t>();
  auto g = gpu::request_of(pod);
  if (!g.is_ok()) return g.status();
  p.gpu = std::move(g).value();
  if (!p.gpu.empty()) {
    p.gpu_milli = gpu::usage_of(pod, p.gpu).milli;
    p.models = gpu::pinned_models(pod);
  }
  if (const json* m = json_at(pod, {"metadata"}); m != nullptr && m->is_object()) {
    p.terminating = m->contains("deletionTimestamp");
    p.created = m->value("creationTimestamp", "");
    if (const json* a = json_at(*m, {"annotations"}); a != nullptr && a->is_object()) {
      p.borrowing = a->contains(gpu::kBorrowingAnnotation);
      auto group = a->find(gpu::kPodGroupAnnotation);
      auto size = a->find(gpu::kPodGroupSizeAnnotation);
      if (group != a->end() && group->is_string() && size != a->end() && size->is_string()) {
        int n = 0;
        const std::string& text = size->get_ref<const std::string&>();
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (ec == std::errc() && end == text.data() + text.size() && n > 0 && n <= 10000) {
          p.group = group->get<std::string>();
          p.group_size = n;
        }
      }
    }
  }
  if (const json* a = json_at(
          pod, {"metadata", "annotations", std::string(gpu::kAllocationAnnotation).c_str()});
      a != nullptr && a->is_string()) {
    auto parsed = gpu::Allocation::parse(a->get<std::string>());
    if (parsed.is_ok()) p.allocation = std::move(parsed).value();
  }
  return p;
}

NodeInfo::NodeInfo(const json& node) {
  parse(node);
}

void NodeInfo::parse(const json& node) {
  name_ = node["metadata"].value("name", "");
  labels_.clear();
  if (const json* l = json_at(node, {"metadata", "labels"}); l != nullptr && l->is_object())
    for (auto it = l->begin(); it != l->end(); ++it)
      if (it.value().is_string()) labels_.emplace_back(it.key(), it.value().get<std::string>());
  taints_.clear();
  if (const json* t = json_at(node, {"spec", "taints"}); t != nullptr && t->is_array())
    for (const json& taint : *t)
      if (taint.is_object())
        taints_.push_back(
            {taint.value("key", ""), taint.value("value", ""), taint.value("effect", "")});
  const json* u = json_at(node, {"spec", "unschedulable"});
  unschedulable_ = u != nullptr && u->is_boolean() && u->get<bool>();
  allocatable_ = Resources{};
  if (const json* a = json_at(node, {"status", "allocatable"}); a != nullptr && a->is_object())
    for (auto it = a->begin(); it != a->end(); ++it)
      if (auto v = api::quantity_milli(it.value())) add_amount(allocatable_, it.key(), *v, false);
  devices_ = gpu::DeviceState(gpu::NodeGpus::of_node(node));
  frag_valid_ = false;
}

void NodeInfo::update(const json& node) {
  parse(node);
  for (auto& [uid, pod] : pods_) (void)devices_.take(pod.allocation);
}

const std::string* NodeInfo::label(std::string_view key) const {
  for (const auto& [k, v] : labels_)
    if (k == key) return &v;
  return nullptr;
}

Status NodeInfo::add_pod(PodInfo pod) {
  if (pods_.count(pod.uid)) return Status::ok();
  VKUBE_RETURN_IF_ERROR(devices_.take(pod.allocation));
  merge(requested_, pod.requests, false);
  requested_.pods += 1;
  frag_valid_ = false;
  pods_.emplace(pod.uid, std::move(pod));
  return Status::ok();
}

bool NodeInfo::remove_pod(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return false;
  const PodInfo& p = it->second;
  devices_.release(p.allocation);
  requested_.cpu_milli -= p.requests.cpu_milli;
  requested_.memory -= p.requests.memory;
  requested_.ephemeral -= p.requests.ephemeral;
  requested_.pods -= 1;
  for (const auto& [k, v] : p.requests.scalar) requested_.scalar[k] -= v;
  frag_valid_ = false;
  pods_.erase(it);
  return true;
}

PodInfo* NodeInfo::pod(const std::string& uid) {
  auto it = pods_.find(uid);
  return it == pods_.end() ? nullptr : &it->second;
}

bool NodeInfo::fragmentation_cached(uint64_t epoch, double* out) const {
  if (!frag_valid_ || frag_epoch_ != epoch) return false;
  *out = frag_;
  return true;
}

void NodeInfo::cache_fragmentation(uint64_t epoch, double value) const {
  frag_epoch_ = epoch;
  frag_valid_ = true;
  frag_ = value;
}

}  // namespace vkube::scheduler
