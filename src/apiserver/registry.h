// The served resources: built-in kinds now, custom kinds later. Discovery,
// OpenAPI and routing all read this one registry.
#pragma once

#include <map>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "builtin/kinds.h"

namespace vkube::apiserver {

using builtin::Kind;

class Registry {
 public:
  Registry();

  // The kind served at /<prefix>/<group>/<version>/<plural>, or nullptr.
  const Kind* find(std::string_view group, std::string_view version, std::string_view plural) const;
  // The kind for an object's apiVersion and kind, or nullptr.
  const Kind* find_kind(std::string_view api_version, std::string_view kind) const;
  // Any version of group/plural (for storage and the namespace controller).
  std::vector<const Kind*> all() const;

  // Group versions in discovery order; the first version of a group is its
  // preferred one.
  std::vector<api::GroupVersion> group_versions() const;
  std::vector<const Kind*> kinds_in(const api::GroupVersion& gv) const;

  // Storage key prefix of a kind ("/registry/apps/deployments/"); versions of
  // one resource share it.
  static std::string storage_prefix(const Kind& k);
  // The key of one object; ns is ignored for cluster-scoped kinds.
  static std::string key(const Kind& k, std::string_view ns, std::string_view name);

 private:
  std::vector<Kind> kinds_;
};

}  // namespace vkube::apiserver
