#include "schema_walk.h"

#include <algorithm>
#include <array>

namespace vkube::apiserver::apply::detail {

using schema::Field;
using schema::Message;

bool object_message(const Message* m) {
  return m != nullptr && m->json_format == schema::JsonFormat::kObject;
}

namespace {

// Types Kubernetes marks +structType=atomic: replaced, and owned, whole.
bool atomic_struct(const Message* m) {
  static constexpr std::array<std::string_view, 13> kAtomic = {
      "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector",
      "k8s.io.api.core.v1.ConfigMapKeySelector",
      "k8s.io.api.core.v1.LocalObjectReference",
      "k8s.io.api.core.v1.NodeSelector",
      "k8s.io.api.core.v1.NodeSelectorTerm",
      "k8s.io.api.core.v1.ObjectFieldSelector",
      "k8s.io.api.core.v1.ObjectReference",
      "k8s.io.api.core.v1.ResourceFieldSelector",
      "k8s.io.api.core.v1.SecretKeySelector",
      "k8s.io.api.core.v1.SecretReference",
      "k8s.io.api.core.v1.TopologySelectorTerm",
      "k8s.io.api.core.v1.TypedLocalObjectReference",
      "k8s.io.api.core.v1.TypedObjectReference",
  };
  return std::find(kAtomic.begin(), kAtomic.end(), m->full_name) != kAtomic.end();
}

const Message* object_meta() {
  static const Message* m =
      schema::Registry::get().find("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  return m;
}

Type leaf() {
  return Type{Shape::kLeaf, nullptr, nullptr};
}

}  // namespace

Type field_type(const Field* f) {
  const Message* value = object_message(f->message) ? f->message : nullptr;
  if (f->is_map) {
    if (f->map_type == "atomic") return leaf();
    return Type{Shape::kMap, f->map_value == schema::Type::kMessage ? value : nullptr, f};
  }
  if (f->repeated) {
    if (f->list_type == "map") return Type{Shape::kAssocList, value, f};
    if (f->list_type == "set") return Type{Shape::kSetList, value, f};
    if (f->list_type.empty() && !f->patch_merge_key.empty())
      return Type{Shape::kAssocList, value, f};
    if (f->list_type.empty() && value == nullptr &&
        f->patch_strategy.find("merge") != std::string::npos)
      return Type{Shape::kSetList, nullptr, f};
    return leaf();
  }
  if (f->type != schema::Type::kMessage || value == nullptr) return leaf();
  if (f->map_type == "atomic" || atomic_struct(value)) return leaf();
  return Type{Shape::kStruct, value, nullptr};
}

// The type of the value at `key` of a struct or map of type t.
Type child_type(const Type& t, std::string_view key, Level lv) {
  switch (t.shape) {
    case Shape::kStruct: {
      const Field* f = t.message->field(key);
      return f ? field_type(f) : Type{};
    }
    case Shape::kMap:
      return t.message ? Type{Shape::kStruct, t.message, nullptr} : leaf();
    case Shape::kUntyped:
      if (lv == Level::kRoot && key == "metadata" && object_meta())
        return Type{Shape::kStruct, object_meta(), nullptr};
      return Type{};
    default:
      return Type{};
  }
}

Type element_type(const Type& list) {
  return list.message ? Type{Shape::kStruct, list.message, nullptr} : leaf();
}

Level child_level(Level lv, std::string_view key) {
  return lv == Level::kRoot && key == "metadata" ? Level::kMeta : Level::kOther;
}

bool skipped(Level lv, std::string_view key, Scope scope) {
  if (lv == Level::kRoot) {
    if (key == "apiVersion" || key == "kind") return true;
    if (scope == Scope::kNoStatus) return key == "status";
    if (scope == Scope::kStatusOnly) return key != "status";
    if (scope == Scope::kNoSpec) return key == "spec";
    return false;
  }
  if (lv == Level::kMeta) {
    if (scope == Scope::kNoSpec && key == "labels") return true;
    static constexpr std::array<std::string_view, 9> kServerOwned = {
        "name",        "namespace",  "creationTimestamp", "selfLink",       "uid",
        "clusterName", "generation", "managedFields",     "resourceVersion"};
    return std::find(kServerOwned.begin(), kServerOwned.end(), key) != kServerOwned.end();
  }
  return false;
}

// The shape a value of type t actually has: values that do not fit their
// type are compared and replaced as leaves.
Shape actual_shape(const Type& t, const json* a, const json* b) {
  auto fits = [](const json* v, bool (json::*is)() const noexcept) {
    return v == nullptr || v->is_null() || (v->*is)();
  };
  switch (t.shape) {
    case Shape::kStruct:
    case Shape::kMap:
      return fits(a, &json::is_object) && fits(b, &json::is_object) ? t.shape : Shape::kLeaf;
    case Shape::kAssocList:
    case Shape::kSetList:
      return fits(a, &json::is_array) && fits(b, &json::is_array) ? t.shape : Shape::kLeaf;
    case Shape::kUntyped:
      if ((a && a->is_object()) || (b && b->is_object()))
        return fits(a, &json::is_object) && fits(b, &json::is_object) ? Shape::kUntyped
                                                                      : Shape::kLeaf;
      return Shape::kLeaf;
    case Shape::kLeaf:
      break;
  }
  return Shape::kLeaf;
}

// The path element of list element `item` (at `index`), or nullopt with
// the missing key's name in *missing.
std::optional<std::string> item_pe(const Type& list, const json& item, size_t index,
                                   std::string* missing) {
  if (list.shape == Shape::kSetList)
    return "v:" + item.dump(-1, ' ', false, json::error_handler_t::replace);
  if (item.is_object()) {
    static const json kTcp = "TCP";  // the default kube's schema gives ports
    const std::string* merge_key = &list.field->patch_merge_key;
    const bool map_keys = !list.field->list_map_keys.empty();
    const size_t n = map_keys ? list.field->list_map_keys.size() : 1;
    // The key fields as a JSON object would hold them (by name, ascending),
    // written straight out: no object is built for every element of the list.
    std::vector<std::pair<const std::string*, const json*>> k;
    k.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const std::string& name = map_keys ? list.field->list_map_keys[i] : *merge_key;
      auto it = item.find(name);
      if (it != item.end() && !it->is_null())
        k.emplace_back(&name, &*it);
      else if (name == "protocol")
        k.emplace_back(&name, &kTcp);
      else if (missing) {
        *missing = name;
        return std::nullopt;
      }
    }
    std::stable_sort(k.begin(), k.end(),
                     [](const auto& a, const auto& b) { return *a.first < *b.first; });
    if (!k.empty()) {
      std::string pe = "k:{";
      for (size_t i = 0; i < k.size(); ++i) {
        // A name given twice counts once, as in an object (the last value).
        if (i + 1 < k.size() && *k[i + 1].first == *k[i].first) continue;
        if (pe.size() > 3) pe += ',';
        pe += json(*k[i].first).dump(-1, ' ', false, json::error_handler_t::replace);
        pe += ':';
        pe += k[i].second->dump(-1, ' ', false, json::error_handler_t::replace);
      }
      pe += '}';
      return pe;
    }
  }
  if (missing)
    *missing = list.field->list_map_keys.empty() ? list.field->patch_merge_key
                                                 : list.field->list_map_keys.front();
  if (missing) return std::nullopt;
  return "i:" + std::to_string(index);
}

using Items = std::vector<std::pair<std::string, const json*>>;

Items index_items(const Type& t, const json* list) {
  Items out;
  if (list == nullptr || !list->is_array()) return out;
  out.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i)
    out.emplace_back(*item_pe(t, (*list)[i], i), &(*list)[i]);
  return out;
}

const json* find_key(const json* obj, const std::string& key) {
  if (obj == nullptr || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}

}  // namespace vkube::apiserver::apply::detail
