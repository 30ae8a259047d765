#include "registry.h"

#include <algorithm>

namespace vkube::apiserver {

Registry::Registry() : kinds_(builtin::builtin_kinds()) {}

const Kind* Registry::find(std::string_view group, std::string_view version,
                           std::string_view plural) const {
  for (const Kind& k : kinds_) {
    const auto& r = k.resource;
    if (r.plural == plural && r.gv.version == version && r.gv.group == group) return &k;
  }
  return nullptr;
}

const Kind* Registry::find_kind(std::string_view api_version, std::string_view kind) const {
  for (const Kind& k : kinds_)
    if (k.resource.kind == kind && k.resource.gv.api_version() == api_version) return &k;
  return nullptr;
}

std::vector<const Kind*> Registry::all() const {
  std::vector<const Kind*> out;
  for (const Kind& k : kinds_) out.push_back(&k);
  return out;
}

std::vector<api::GroupVersion> Registry::group_versions() const {
  std::vector<api::GroupVersion> out;
  for (const Kind& k : kinds_)
    if (std::find(out.begin(), out.end(), k.resource.gv) == out.end()) out.push_back(k.resource.gv);
  return out;
}

std::vector<const Kind*> Registry::kinds_in(const api::GroupVersion& gv) const {
  std::vector<const Kind*> out;
  for (const Kind& k : kinds_)
    if (k.resource.gv == gv) out.push_back(&k);
  return out;
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
