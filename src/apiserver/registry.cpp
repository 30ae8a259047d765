#include "registry.h"

#include <algorithm>

#include "definition.h"

namespace vkube::apiserver {

const Kind* KindSet::find(std::string_view group, std::string_view version,
                          std::string_view plural) const {
  for (const auto& k : kinds_) {
    const auto& r = k->resource;
    if (r.plural == plural && r.gv.version == version && r.gv.group == group) return k.get();
  }
  return nullptr;
}

const Kind* KindSet::find_kind(std::string_view api_version, std::string_view kind) const {
  for (const auto& k : kinds_)
    if (k->resource.kind == kind && k->resource.gv.api_version() == api_version) return k.get();
  return nullptr;
}

std::vector<const Kind*> KindSet::all() const {
  std::vector<const Kind*> out;
  for (const auto& k : kinds_) out.push_back(k.get());
  return out;
}

std::vector<api::GroupVersion> KindSet::group_versions() const {
  std::vector<api::GroupVersion> out;
  for (const auto& k : kinds_)
    if (std::find(out.begin(), out.end(), k->resource.gv) == out.end())
      out.push_back(k->resource.gv);
  return out;
}

std::vector<const Kind*> KindSet::kinds_in(const api::GroupVersion& gv) const {
  std::vector<const Kind*> out;
  for (const auto& k : kinds_)
    if (k->resource.gv == gv) out.push_back(k.get());
  return out;
}

Registry::Registry(bool metrics_api) {
  auto set = std::make_shared<KindSet>();
  // The built-in table is static: alias it without ownership.
  for (const Kind& k : builtin::builtin_kinds())
    if (metrics_api || k.strategy.handler != builtin::Handler::kMetrics)
      set->kinds_.push_back(std::shared_ptr<const Kind>(std::shared_ptr<const Kind>(), &k));
  builtin_ = set;
  current_ = set;
}

std::shared_ptr<const KindSet> Registry::snapshot() const {
  std::lock_guard lock(mu_);
  return current_;
}

const Kind* Registry::builtin(std::string_view group, std::string_view version,
                              std::string_view plural) const {
  return builtin_->find(group, version, plural);
}

void Registry::set_custom(const std::string& crd_name, std::vector<Kind> kinds) {
  std::lock_guard lock(mu_);
  if (kinds.empty()) {
    custom_.erase(crd_name);
  } else {
    auto& slot = custom_[crd_name];
    slot.clear();
    for (Kind& k : kinds) slot.push_back(std::make_shared<const Kind>(std::move(k)));
  }
  rebuild_locked();
  ++generation_;
}

void Registry::rebuild_locked() {
  auto set = std::make_shared<KindSet>(*builtin_);
  // Custom kinds come after the built-ins, grouped by API group and in
  // kube's version priority, so group_versions() lists the preferred version
  // of a group first even when several CRDs share the group.
  std::vector<std::shared_ptr<const Kind>> custom;
  for (const auto& [name, kinds] : custom_) custom.insert(custom.end(), kinds.begin(), kinds.end());
  std::stable_sort(custom.begin(), custom.end(), [](const auto& a, const auto& b) {
    const auto &x = a->resource.gv, &y = b->resource.gv;
    if (x.group != y.group) return x.group < y.group;
    return x.version != y.version && crd::version_before(x.version, y.version);
  });
  set->kinds_.insert(set->kinds_.end(), custom.begin(), custom.end());
  current_ = std::move(set);
}

std::string Registry::storage_prefix(const Kind& k) {
  const auto& r = k.resource;
  if (!r.storage_of.empty()) return "/registry/" + r.storage_of + "/";
  return "/registry/" + (r.gv.group.empty() ? std::string("core") : r.gv.group) + "/" + r.plural +
         "/";
}

std::string Registry::key(const Kind& k, std::string_view ns, std::string_view name) {
  std::string key = storage_prefix(k);
  if (k.resource.namespaced) {
    key += ns;
    key += '/';
  }
  key += name;
  return key;
}

}  // namespace vkube::apiserver
