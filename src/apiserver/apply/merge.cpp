// Merging an applied configuration into the live object, and removing what
// an applier no longer applies.
#include <unordered_map>

#include "schema_walk.h"
#include "typed.h"

namespace vkube::apiserver::apply {

namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): the walks' vocabulary

// ---------------------------------------------------------------- merge

json merge_value(const json* live, const json& cfg, const Type& t, Level lv);

json merge_list(const json* live, const json& cfg, const Type& t) {
  Type et = element_type(t);
  Items li = index_items(t, live), ri = index_items(t, &cfg);
  std::unordered_map<std::string_view, size_t> lpos, rpos;
  for (size_t i = 0; i < li.size(); ++i) lpos.emplace(li[i].first, i);
  for (size_t i = 0; i < ri.size(); ++i) rpos.emplace(ri[i].first, i);
  json out = json::array();
  std::vector<bool> done(ri.size(), false);
  size_t next = 0;
  auto emit = [&](size_t i) {
    if (done[i] || rpos[ri[i].first] != i) return;  // emitted, or a duplicate
    done[i] = true;
    auto l = lpos.find(ri[i].first);
    out.push_back(merge_value(l == lpos.end() ? nullptr : li[l->second].second, *ri[i].second, et,
                              Level::kOther));
  };
  for (const auto& [pe, v] : li) {
    auto r = rpos.find(pe);
    if (r == rpos.end()) {
      out.push_back(*v);
      continue;
    }
    for (; next <= r->second; ++next) emit(next);
  }
  for (; next < ri.size(); ++next) emit(next);
  return out;
}

json merge_value(const json* live, const json& cfg, const Type& t, Level lv) {
  Shape s = actual_shape(t, live, &cfg);
  if (cfg.is_null()) return cfg;
  if (is_list(s)) return merge_list(live, cfg, t);
  if (!is_mapish(s)) return cfg;
  // Only what the configuration leaves alone is copied from live: copying
  // the whole live value at every level copied a 40-container template once
  // per level of depth.
  json out = json::object();
  if (live && live->is_object())
    for (auto it = live->begin(); it != live->end(); ++it)
      if (!cfg.contains(it.key())) out[it.key()] = it.value();
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    if (it.value().is_null()) continue;
    out[it.key()] = merge_value(find_key(live, it.key()), it.value(), child_type(t, it.key(), lv),
                                child_level(lv, it.key()));
  }
  return out;
}

// ---------------------------------------------------------------- prune

// Would ToFieldSet make the value at `pe` (of a container of shape s) a member?
bool member_value(Shape container, std::string_view pe, const json& v, const Type& vt) {
  if (!pe.starts_with("f:") || container != Shape::kStruct) return true;  // elements, map keys
  if (v.is_null() || (v.is_object() && v.empty())) return true;
  return actual_shape(vt, &v, nullptr) == Shape::kLeaf;
}

void prune_at(json& obj, const FieldSet& last, const FieldSet* keep, const Type& t, Level lv) {
  Shape s = actual_shape(t, &obj, nullptr);
  if (is_mapish(s) && obj.is_object()) {
    for (const auto& [pe, lnode] : last.children()) {
      if (!pe.starts_with("f:")) continue;
      std::string key = pe.substr(2);
      auto it = obj.find(key);
      if (it == obj.end()) continue;
      const FieldSet* knode = keep ? keep->find(pe) : nullptr;
      Type ct = child_type(t, key, lv);
      if (lnode.member() && knode == nullptr && member_value(s, pe, *it, ct)) {
        obj.erase(it);
        continue;
      }
      if (lnode.children().empty()) continue;
      prune_at(*it, lnode, knode, ct, child_level(lv, key));
      Shape cs = ct.shape;
      bool container = cs == Shape::kMap || is_list(cs);
      if (container && it->empty() && !(ct.field && ct.field->required)) obj.erase(it);
    }
  } else if (is_list(s) && obj.is_array()) {
    Items items = index_items(t, &obj);
    std::vector<bool> drop(items.size(), false);
    Type et = element_type(t);
    for (size_t i = 0; i < items.size(); ++i) {
      const FieldSet* lnode = last.find(items[i].first);
      if (lnode == nullptr) continue;
      const FieldSet* knode = keep ? keep->find(items[i].first) : nullptr;
      if (lnode->member() && knode == nullptr)
        drop[i] = true;
      else if (!lnode->children().empty())
        prune_at(obj[i], *lnode, knode, et, Level::kOther);
    }
    json kept = json::array();
    for (size_t i = 0; i < obj.size(); ++i)
      if (!drop[i]) kept.push_back(std::move(obj[i]));
    obj = std::move(kept);
  }
}

}  // namespace

json merge(const json* live, const json& config, const Type& t) {
  return merge_value(live, config, t, Level::kRoot);
}

void prune(json& obj, const FieldSet& last, const FieldSet& keep, const Type& t) {
  prune_at(obj, last, &keep, t, Level::kRoot);
}

}  // namespace vkube::apiserver::apply
