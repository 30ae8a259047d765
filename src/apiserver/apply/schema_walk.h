// The schema-driven steps shared by the walks of typed.cpp and merge.cpp:
// what type a value has, how list elements are named, which fields the
// server owns. Private to the apply library.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "typed.h"

namespace vkube::apiserver::apply::detail {

// Where a walk is: the object's top level and its metadata have fields the
// server owns, which no manager tracks.
enum class Level { kRoot, kMeta, kOther };

bool object_message(const schema::Message* m);
// The type of values of field f.
Type field_type(const schema::Field* f);
// The type of the value at `key` of a struct or map of type t.
Type child_type(const Type& t, std::string_view key, Level lv);
Type element_type(const Type& list);
Level child_level(Level lv, std::string_view key);
// apiVersion, kind, the metadata the server owns, and what `scope` leaves out.
bool skipped(Level lv, std::string_view key, Scope scope);
// The shape values a and b (either may be null) of type t are walked with:
// values that do not fit their type are leaves.
Shape actual_shape(const Type& t, const json* a, const json* b);
inline bool is_list(Shape s) {
  return s == Shape::kAssocList || s == Shape::kSetList;
}
inline bool is_mapish(Shape s) {
  return s == Shape::kStruct || s == Shape::kMap || s == Shape::kUntyped;
}
// The path element of list element `item` (at `index`): "k:{...}" by the
// list's keys, "v:..." in a set, "i:N" when keys are missing; with `missing`
// given, nullopt and the missing key's name instead of "i:N".
std::optional<std::string> item_pe(const Type& list, const json& item, size_t index,
                                   std::string* missing = nullptr);
// A list's elements with their path elements, in order.
using Items = std::vector<std::pair<std::string, const json*>>;
Items index_items(const Type& t, const json* list);
const json* find_key(const json* obj, const std::string& key);

}  // namespace vkube::apiserver::apply::detail
