// The objects an informer holds, in process (Informers) or
// over HTTP (hostclient::Informer): a Lister with an index by controller
// owner. Readers take a shared lock; the informer's one thread writes. Its
// own small library (vkube_object_cache), so that the host client shares it
// without linking the controllers.
#pragma once

#include <map>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "vkube/controllers/informers.h"

namespace vkube::controllers {

class ObjectCache final : public Lister {
 public:
  ObjectPtr get(std::string_view key) const override;
  std::vector<ObjectPtr> list(std::string_view ns) const override;
  std::vector<ObjectPtr> controlled_by(std::string_view owner_uid) const override;
  size_t size() const override;

  // Stores `obj` under `key`; returns the previous state (null: new).
  ObjectPtr put(const std::string& key, ObjectPtr obj);
  // Removes `key`; returns its last state (null: was absent).
  ObjectPtr remove(const std::string& key);
  std::vector<std::string> keys() const;

 private:
  void unindex(const std::string& key, const json& obj);

  mutable std::shared_mutex mu_;
  std::map<std::string, ObjectPtr, std::less<>> objects_;
  std::unordered_map<std::string, std::set<std::string>> by_owner_;
};

// The uid of the controller ownerReference, or "".
std::string controller_uid(const json& obj);
// "ns/name", or "name" for a cluster-scoped object; "" without a name.
std::string object_key(const json& obj);
// metadata.resourceVersion, or "".
std::string resource_version(const json& obj);

}  // namespace vkube::controllers
