#include "tenants.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "vkube/common/log.h"
#include "vkube/gpu/books.h"

namespace vkube::scheduler {

namespace {

std::string text_at(const json& j, std::initializer_list<const char*> path) {
  const json* v = json_at(j, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace

bool TenantLedger::set_namespace(const json& ns) {
  const std::string name = text_at(ns, {"metadata", "name"});
  if (name.empty()) return false;
  Tenant& t = by_ns_[name];
  t.name = text_at(ns, {"metadata", "labels", "vkube.io/tenant"});
  if (t.name.empty()) t.name = name;
  const json* a =
      json_at(ns, {"metadata", "annotations", std::string(gpu::kShareAnnotation).c_str()});
  gpu::GpuShare share;
  bool annotated = false;
  if (a != nullptr && a->is_string()) {
    auto parsed = gpu::parse_gpu_share(a->get<std::string>());
    if (parsed.is_ok()) {
      share = std::move(parsed).value();
      annotated = true;
    } else {
      // The operator's typo: the tenant keeps what it had (or its flag's).
      VKUBE_LOG(warn, "ignoring a malformed GPU share", {"namespace", name},
                {"message", parsed.status().message()});
      return false;
    }
  }
  if (!annotated && t.from_flag) share = *t.from_flag;
  const bool changed = t.annotated != annotated || !(t.share == share);
  t.annotated = annotated;
  t.share = share;
  recount();
  return changed;
}

void TenantLedger::remove_namespace(const std::string& ns) {
  auto it = by_ns_.find(ns);
  if (it == by_ns_.end()) return;
  it->second.annotated = false;
  it->second.from_flag.reset();
  it->second.share = gpu::GpuShare{};
  recount();
}

bool TenantLedger::set_statefulset(const json& sts, bool deleted) {
  if (text_at(sts, {"metadata", "labels", "app.kubernetes.io/name"}) != "vkube") return false;
  const std::string ns = text_at(sts, {"metadata", "namespace"});
  std::optional<gpu::GpuShare> flag;
  if (auto text = deleted ? std::nullopt : gpu::share_flag(sts))
    if (auto s = gpu::parse_gpu_share(*text); s.is_ok()) flag = std::move(s).value();
  Tenant& t = by_ns_[ns];
  if (t.name.empty()) t.name = text_at(sts, {"metadata", "labels", "vkube.io/tenant"});
  if (t.name.empty()) t.name = ns;
  if (t.from_flag == flag) return false;
  t.from_flag = flag;
  if (!t.annotated) t.share = flag.value_or(gpu::GpuShare{});
  recount();
  return !t.annotated;
}

void TenantLedger::recount() {
  with_share_ = 0;
  for (const auto& [ns, t] : by_ns_) with_share_ += t.has_share() ? 1 : 0;
}

void TenantLedger::add_bound(const PodInfo& p) {
  if (p.gpu_milli == 0) return;
  Tenant& t = by_ns_[p.ns];
  if (t.name.empty()) t.name = p.ns;
  t.allocated += p.gpu_milli;
  if (!p.model.empty()) t.by_model[p.model] += p.gpu_milli;
  if (p.terminating) t.reclaiming += p.gpu_milli;
}

void TenantLedger::remove_bound(const PodInfo& p) {
  if (p.gpu_milli == 0) return;
  Tenant& t = by_ns_[p.ns];
  t.allocated -= p.gpu_milli;
  if (!p.model.empty()) {
    auto it = t.by_model.find(p.model);
    if (it != t.by_model.end() && (it->second -= p.gpu_milli) <= 0) t.by_model.erase(it);
  }
  if (p.terminating) t.reclaiming -= p.gpu_milli;
}

int64_t TenantLedger::held_on(const Tenant& t, const std::string& key) {
  int64_t held = 0;
  for (const auto& [model, milli] : t.by_model)
    if (model.find(key) != std::string::npos) held += milli;
  return held;
}

std::optional<std::string> TenantLedger::within_model_guarantee(
    const Tenant& t, const std::vector<std::string>& models, int64_t milli) {
  if (models.empty()) return std::nullopt;
  for (const auto& [key, deserved] : t.share.model_deserved_milli) {
    bool all = true;
    for (const std::string& m : models) all = all && m.find(key) != std::string::npos;
    if (all && held_on(t, key) + milli <= deserved) return key;
  }
  return std::nullopt;
}

bool TenantLedger::guaranteed(const Tenant& t, const std::string& model) {
  for (const auto& [key, deserved] : t.share.model_deserved_milli)
    if (model.find(key) != std::string::npos && held_on(t, key) <= deserved) return true;
  return false;
}

void TenantLedger::set_terminating(PodInfo& p, bool on) {
  if (p.terminating == on) return;
  p.terminating = on;
  if (p.gpu_milli > 0) by_ns_[p.ns].reclaiming += on ? p.gpu_milli : -p.gpu_milli;
}

void TenantLedger::set_pending(const std::string& uid, const std::string& ns, int64_t milli) {
  clear_pending(uid);
  if (milli == 0) return;
  pending_[uid] = {ns, milli};
  Tenant& t = by_ns_[ns];
  if (t.name.empty()) t.name = ns;
  t.pending += milli;
}

void TenantLedger::clear_pending(const std::string& uid) {
  auto it = pending_.find(uid);
  if (it == pending_.end()) return;
  by_ns_[it->second.first].pending -= it->second.second;
  pending_.erase(it);
}

const TenantLedger::Tenant* TenantLedger::find(const std::string& ns) const {
  auto it = by_ns_.find(ns);
  return it == by_ns_.end() ? nullptr : &it->second;
}

std::vector<gpu::TenantBooks> TenantLedger::settle(int64_t capacity) const {
  std::vector<gpu::TenantBooks> rows;
  rows.reserve(by_ns_.size());
  for (const auto& [ns, t] : by_ns_) {
    if (!t.has_share() && t.allocated == 0 && t.pending == 0) continue;
    gpu::TenantBooks b;
    b.ns = ns;
    b.tenant = t.name;
    b.share = t.share;
    b.allocated = t.allocated;
    b.pending = t.pending;
    b.reclaiming = t.reclaiming;
    rows.push_back(std::move(b));
  }
  gpu::settle(rows, capacity);
  return rows;
}

const TenantLedger::Nomination* TenantLedger::nomination(const std::string& uid) const {
  auto it = nominated_.find(uid);
  return it == nominated_.end() ? nullptr : &it->second;
}

void TenantLedger::nominate(const std::string& uid, Nomination n) {
  auto it = nominated_.find(uid);
  n.seq = it != nominated_.end() && it->second.node == n.node ? it->second.seq : ++nomination_seq_;
  nominated_[uid] = std::move(n);
}

std::vector<const TenantLedger::Nomination*> TenantLedger::nominated_on(
    const std::string& node, const std::string& except) const {
  auto self = nominated_.find(except);
  const uint64_t before = self != nominated_.end() && self->second.node == node
                              ? self->second.seq
                              : std::numeric_limits<uint64_t>::max();
  std::vector<const Nomination*> out;
  for (const auto& [uid, n] : nominated_)
    if (n.node == node && uid != except && n.seq < before) out.push_back(&n);
  std::sort(out.begin(), out.end(),
            [](const Nomination* a, const Nomination* b) { return a->seq < b->seq; });
  return out;
}

bool TenantLedger::any_nominated_in(const std::string& ns) const {
  for (const auto& [uid, n] : nominated_)
    if (n.ns == ns) return true;
  return false;
}

size_t TenantLedger::nominated_nodes() const {
  std::unordered_set<std::string> nodes;
  for (const auto& [uid, n] : nominated_) nodes.insert(n.node);
  return nodes.size();
}

}  // namespace vkube::scheduler
