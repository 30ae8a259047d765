// An in-memory controllers::Lister for tests and fuzz harnesses that need
// informer caches (DNS lookups) without a store: objects keyed "ns/name".
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/controllers/informers.h"

namespace vkube::testing {

class FakeLister final : public controllers::Lister {
 public:
  void add(controllers::json obj) {
    std::string key = obj["metadata"]["namespace"].get<std::string>() + "/" +
                      obj["metadata"]["name"].get<std::string>();
    objects_[key] = std::make_shared<const controllers::json>(std::move(obj));
  }
  controllers::ObjectPtr get(std::string_view key) const override {
    auto it = objects_.find(std::string(key));
    return it == objects_.end() ? nullptr : it->second;
  }
  std::vector<controllers::ObjectPtr> list(std::string_view ns) const override {
    std::vector<controllers::ObjectPtr> out;
    for (const auto& [key, obj] : objects_)
      if (ns.empty() || key.starts_with(std::string(ns) + "/")) out.push_back(obj);
    return out;
  }
  std::vector<controllers::ObjectPtr> controlled_by(std::string_view) const override { return {}; }
  size_t size() const override { return objects_.size(); }

 private:
  std::map<std::string, controllers::ObjectPtr> objects_;
};

}  // namespace vkube::testing
