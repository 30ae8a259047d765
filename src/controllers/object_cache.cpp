#include "vkube/controllers/object_cache.h"

#include <mutex>

namespace vkube::controllers {
namespace {

std::string meta_string(const json& obj, const char* field) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return {};
  auto f = m->find(field);
  return f != m->end() && f->is_string() ? f->get<std::string>() : std::string();
}

}  // namespace

// The uid of the controller ownerReference, or "".
std::string controller_uid(const json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return {};
  auto refs = m->find("ownerReferences");
  if (refs == m->end() || !refs->is_array()) return {};
  for (const json& r : *refs) {
    if (!r.is_object()) continue;
    auto c = r.find("controller");
    if (c != r.end() && c->is_boolean() && c->get<bool>()) {
      auto uid = r.find("uid");
      return uid != r.end() && uid->is_string() ? uid->get<std::string>() : std::string();
    }
  }
  return {};
}

std::string object_key(const json& obj) {
  std::string name = meta_string(obj, "name");
  if (name.empty()) return {};
  std::string ns = meta_string(obj, "namespace");
  return ns.empty() ? name : ns + "/" + name;
}

ObjectPtr Lister::get(std::string_view ns, std::string_view name) const {
  if (ns.empty()) return get(name);
  std::string key;
  key.reserve(ns.size() + name.size() + 1);
  key.append(ns).append("/").append(name);
  return get(key);
}

std::string resource_version(const json& obj) {
  return meta_string(obj, "resourceVersion");
}

ObjectPtr ObjectCache::get(std::string_view key) const {
  std::shared_lock lock(mu_);
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> ObjectCache::list(std::string_view ns) const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  if (ns.empty()) {
    out.reserve(objects_.size());
    for (const auto& [k, v] : objects_) out.push_back(v);
    return out;
  }
  std::string prefix = std::string(ns) + "/";
  for (auto it = objects_.lower_bound(prefix);
       it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
    out.push_back(it->second);
  return out;
}

std::vector<ObjectPtr> ObjectCache::controlled_by(std::string_view owner_uid) const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  auto it = by_owner_.find(std::string(owner_uid));
  if (it == by_owner_.end()) return out;
  for (const std::string& k : it->second) {
    auto o = objects_.find(k);
    if (o != objects_.end()) out.push_back(o->second);
  }
  return out;
}

size_t ObjectCache::size() const {
  std::shared_lock lock(mu_);
  return objects_.size();
}

ObjectPtr ObjectCache::put(const std::string& key, ObjectPtr obj) {
  std::unique_lock lock(mu_);
  ObjectPtr old;
  auto it = objects_.find(key);
  if (it != objects_.end()) {
    old = it->second;
    unindex(key, *old);
    it->second = obj;
  } else {
    objects_.emplace(key, obj);
  }
  std::string uid = controller_uid(*obj);
  if (!uid.empty()) by_owner_[uid].insert(key);
  return old;
}

ObjectPtr ObjectCache::remove(const std::string& key) {
  std::unique_lock lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return nullptr;
  ObjectPtr old = it->second;
  unindex(key, *old);
  objects_.erase(it);
  return old;
}

std::vector<std::string> ObjectCache::keys() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  out.reserve(objects_.size());
  for (const auto& [k, v] : objects_) out.push_back(k);
  return out;
}

void ObjectCache::unindex(const std::string& key, const json& obj) {
  std::string uid = controller_uid(obj);
  if (uid.empty()) return;
  auto it = by_owner_.find(uid);
  if (it == by_owner_.end()) return;
  it->second.erase(key);
  if (it->second.empty()) by_owner_.erase(it);
}

}  // namespace vkube::controllers
