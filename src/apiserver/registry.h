// The served resources: the built-in kinds and the kinds of established
// CustomResourceDefinitions. Discovery, OpenAPI and routing all read this
// one registry, through immutable snapshots.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "builtin/kinds.h"

namespace vkube::apiserver {

using builtin::Kind;

// One consistent view of the served kinds. Pointers it hands out stay valid
// while the snapshot is held.
class KindSet {
 public:
  // The kind served at /<prefix>/<group>/<version>/<plural>, or nullptr.
  const Kind* find(std::string_view group, std::string_view version, std::string_view plural) const;
  // The kind for an object's apiVersion and kind, or nullptr.
  const Kind* find_kind(std::string_view api_version, std::string_view kind) const;
  std::vector<const Kind*> all() const;
  // Group versions in discovery order; the first version of a group is its
  // preferred one.
  std::vector<api::GroupVersion> group_versions() const;
  std::vector<const Kind*> kinds_in(const api::GroupVersion& gv) const;

 private:
  friend class Registry;
  std::vector<std::shared_ptr<const Kind>> kinds_;
};

class Registry {
 public:
  // metrics_api: serve the metrics.k8s.io kinds (Options::metrics_api).
  explicit Registry(bool metrics_api = true);

  // The current view. Thread-safe; cheap (one shared_ptr copy).
  std::shared_ptr<const KindSet> snapshot() const;
  // The built-in kinds alone.
  const KindSet& builtin_set() const { return *builtin_; }
  // A built-in kind (never removed, so the pointer is stable), or nullptr.
  const Kind* builtin(std::string_view group, std::string_view version,
                      std::string_view plural) const;

  // Replaces the kinds served for the CRD `crd_name` (none: it stops
  // being served). Bumps generation(). Thread-safe.
  void set_custom(const std::string& crd_name, std::vector<Kind> kinds);
  // Incremented on every set_custom(): OpenAPI documents are rebuilt when
  // it moves.
  uint64_t generation() const { return generation_.load(); }

  // Storage key prefix of a kind ("/registry/apps/deployments/"); versions of
  // one resource share it.
  static std::string storage_prefix(const Kind& k);
  // The key of one object; ns is ignored for cluster-scoped kinds.
  static std::string key(const Kind& k, std::string_view ns, std::string_view name);

 private:
  void rebuild_locked();

  std::shared_ptr<const KindSet> builtin_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::shared_ptr<const Kind>>> custom_;  // by CRD name
  std::shared_ptr<const KindSet> current_;                                  // guarded by mu_
  std::atomic<uint64_t> generation_{0};
};

}  // namespace vkube::apiserver
