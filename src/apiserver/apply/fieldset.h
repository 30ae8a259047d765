// A set of field paths, as server-side apply tracks ownership: a trie whose
// edges are path elements in their FieldsV1 spelling and whose nodes say
// whether the path to them is itself in the set.
//
//   "f:<name>"   a struct field or a map key
//   "k:<json>"   an element of an associative list, by its key fields
//                (a JSON object with the keys sorted: k:{"name":"app"})
//   "v:<json>"   an element of a set list, by its value (v:"a")
//   "i:<index>"  an element of a list by position
//
// The FieldsV1 form is the JSON object of the trie: a member path is an
// empty object, or carries "." when it also has members below it:
//   {"f:metadata":{"f:labels":{".":{},"f:app":{}}}}
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"

namespace vkube::apiserver::apply {

using json = nlohmann::json;

class FieldSet {
 public:
  // Children sorted by path element.
  using Children = std::vector<std::pair<std::string, FieldSet>>;
  using Path = std::vector<std::string_view>;

  bool empty() const { return !member_ && children_.empty(); }
  // The path to this node is in the set.
  bool member() const { return member_; }
  void set_member(bool m = true) { member_ = m; }
  const Children& children() const { return children_; }

  // The child at `pe`, created (empty) when absent. Empty children must not
  // be left behind: add_child() is the way to attach a built subtree.
  FieldSet& child(std::string_view pe);
  const FieldSet* find(std::string_view pe) const;
  FieldSet* find(std::string_view pe);
  // Attaches `sub` at `pe` (uniting it with what is there); ignores an empty one.
  void add_child(std::string pe, FieldSet&& sub);
  void erase(std::string_view pe);

  // Adds a path (its last element becomes a member).
  void insert(const std::vector<std::string>& path);
  bool contains(const std::vector<std::string>& path) const;
  // Number of member paths.
  size_t size() const;

  // this ∪ other.
  void unite(const FieldSet& other);
  // Removes the members of `other` (not what lies below them), and the
  // nodes left empty.
  void subtract(const FieldSet& other);
  // The members in both.
  FieldSet intersect(const FieldSet& other) const;

  // Calls fn for each member path, in order.
  void for_each(const std::function<void(const Path&)>& fn) const;

  // FieldsV1 JSON form.
  json to_json() const;
  // Parses FieldsV1; normalizes "k:" keys to their canonical (sorted,
  // compact) spelling. kBadRequest for a malformed value.
  static Result<FieldSet> from_json(const json& v);

  bool operator==(const FieldSet& other) const = default;

 private:
  void for_each_at(Path& prefix, const std::function<void(const Path&)>& fn) const;

  bool member_ = false;
  Children children_;
};

// A path as kube prints it in conflicts: .spec.containers[name="app"].image
// (keys as [k=v,...], set values as [=v], indexes as [i]).
std::string path_string(const FieldSet::Path& path);

// "f:" + name.
inline std::string field_pe(std::string_view name) {
  std::string s = "f:";
  s += name;
  return s;
}

}  // namespace vkube::apiserver::apply
