// Defaulting and pruning of custom resources by their structural schema, as
// apiextensions-apiserver's decoder does before validation: unknown fields pruned (reported as
// `unknown field` paths), metadata reduced to ObjectMeta, nulls of non-nullable fields without
// a default dropped, then defaults applied top-down so defaulted objects get nested defaults.
#include <algorithm>
#include <set>

#include "structural.h"
#include "structural_internal.h"

namespace vkube::apiserver::crd {
namespace {

using namespace detail;

bool is_meta_field(std::string_view k) {
  return k == "apiVersion" || k == "kind" || k == "metadata";
}

bool nullable(const json& s) {
  return flag(s, "nullable");
}

// --- Defaulting -----------------------------------------------------------------------------

void default_value_tree(json& x, const json* s);

// A non-nullable null entry takes the entry schema's default (null when it has none).
void default_entry(json& x, const json* s) {
  if (s == nullptr) return;
  if (x.is_null() && !nullable(*s)) {
    const json* d = default_value(*s);
    x = d != nullptr ? *d : json();
  }
  default_value_tree(x, s);
}

void default_object(json& x, const json& s) {
  const json* props = keyword(s, "properties");
  if (props != nullptr && props->is_object()) {
    for (auto p = props->begin(); p != props->end(); ++p) {
      const json* d = default_value(*p);
      if (d == nullptr) continue;
      auto it = x.find(p.key());
      if (it == x.end())
        x[p.key()] = *d;
      else if (it->is_null() && !nullable(*p))
        *it = *d;
    }
  }
  const json* extra = additional_schema(s);
  for (auto it = x.begin(); it != x.end(); ++it) {
    const json* prop = property(s, it.key());
    if (prop != nullptr)
      default_value_tree(*it, prop);
    else
      default_entry(*it, extra);
  }
}

void default_value_tree(json& x, const json* s) {
  if (s == nullptr || !s->is_object()) return;
  if (x.is_object()) {
    default_object(x, *s);
  } else if (x.is_array()) {
    const json* items = items_schema(*s);
    for (json& item : x) default_entry(item, items);
  }
}

// --- Pruning ----------------------------------------------------------------------------------

// pruning.Prune with kube's unknown-field paths ("spec.foo", "spec.items[0].bar").
class Pruner {
 public:
  explicit Pruner(std::vector<std::string>* unknown) : unknown_(unknown) {}

  void prune(json& x, const json* s, bool root) {
    if (s == nullptr) return prune_all(x);
    if (flag(*s, "x-kubernetes-preserve-unknown-fields")) return skip(x, s, root);
    if (x.is_object()) {
      prune_object(x, *s, root);
    } else if (x.is_array()) {
      const json* items = items_schema(*s);
      for (std::size_t i = 0; i < x.size(); ++i) {
        std::size_t n = enter_index(i);
        prune(x[i], items, false);
        path_.resize(n);
      }
    }
  }

 private:
  // No schema: every object below loses all its fields. A loop, not recursion, because this
  // depth is the request's, not the schema's.
  void prune_all(json& x) {
    std::vector<std::pair<json*, std::string>> todo = {{&x, path_}};
    while (!todo.empty()) {
      auto [node, path] = std::move(todo.back());
      todo.pop_back();
      if (node->is_object()) {
        for (auto it = node->begin(); it != node->end(); ++it) {
          if (unknown_ != nullptr)
            unknown_->push_back(path.empty() ? it.key() : path + "." + it.key());
        }
        *node = json::object();
      } else if (node->is_array()) {
        for (std::size_t i = 0; i < node->size(); ++i) {
          todo.emplace_back(&(*node)[i], unknown_ != nullptr ? index(path, i) : std::string());
        }
      }
    }
  }

  // x-kubernetes-preserve-unknown-fields: unknown fields stay, known ones are pruned.
  void skip(json& x, const json* s, bool root) {
    if (s == nullptr) return;
    bool embedded = root || flag(*s, "x-kubernetes-embedded-resource");
    if (x.is_object()) {
      for (auto it = x.begin(); it != x.end(); ++it) {
        if (embedded && is_meta_field(it.key())) continue;
        const json* prop = property(*s, it.key());
        if (prop == nullptr && keyword(*s, "additionalProperties") == nullptr) continue;
        std::size_t n = enter_key(it.key());
        prune(*it, prop != nullptr ? prop : additional_schema(*s), false);
        path_.resize(n);
      }
    } else if (x.is_array()) {
      const json* items = items_schema(*s);
      for (std::size_t i = 0; i < x.size(); ++i) {
        std::size_t n = enter_index(i);
        skip(x[i], items, false);
        path_.resize(n);
      }
    }
  }

  void prune_object(json& x, const json& s, bool root) {
    bool embedded = root || flag(s, "x-kubernetes-embedded-resource");
    bool open = keyword(s, "additionalProperties") != nullptr;
    for (auto it = x.begin(); it != x.end();) {
      const std::string& k = it.key();
      const json* prop = embedded && is_meta_field(k) ? nullptr : property(s, k);
      if (embedded && is_meta_field(k)) {
        ++it;  // a resource's apiVersion, kind and metadata are kept as they are
      } else if (prop != nullptr || open) {
        std::size_t n = enter_key(k);
        prune(*it, prop != nullptr ? prop : additional_schema(s), false);
        path_.resize(n);
        ++it;
      } else {
        if (!is_meta_field(k) || !path_.empty()) record(k);
        it = x.erase(it);
      }
    }
  }

  std::size_t enter_key(const std::string& k) {
    std::size_t n = path_.size();
    if (unknown_ == nullptr) return n;
    if (!path_.empty()) path_ += '.';
    path_ += k;
    return n;
  }
  std::size_t enter_index(std::size_t i) {
    std::size_t n = path_.size();
    if (unknown_ != nullptr) path_ += '[' + std::to_string(i) + ']';
    return n;
  }
  void record(const std::string& k) {
    if (unknown_ != nullptr) unknown_->push_back(path_.empty() ? k : path_ + "." + k);
  }

  std::vector<std::string>* unknown_;
  std::string path_;
};

// defaulting.PruneNonNullableNullsWithoutDefaults.
void prune_nulls(json& x, const json* s) {
  if (x.is_object()) {
    for (auto it = x.begin(); it != x.end();) {
      const json* sub = s == nullptr ? nullptr : property(*s, it.key());
      if (sub == nullptr && s != nullptr) sub = additional_schema(*s);
      if (it->is_null() && sub != nullptr && !nullable(*sub) && default_value(*sub) == nullptr) {
        it = x.erase(it);
        continue;
      }
      prune_nulls(*it, sub);
      ++it;
    }
  } else if (x.is_array()) {
    const json* items = s != nullptr ? items_schema(*s) : nullptr;
    for (json& item : x) prune_nulls(item, items);
  }
}

// --- ObjectMeta -----------------------------------------------------------------------------

const std::set<std::string_view, std::less<>>& object_meta_fields() {
  static const std::set<std::string_view, std::less<>> kFields = {"name",
                                                                  "generateName",
                                                                  "namespace",
                                                                  "selfLink",
                                                                  "uid",
                                                                  "resourceVersion",
                                                                  "generation",
                                                                  "creationTimestamp",
                                                                  "deletionTimestamp",
                                                                  "deletionGracePeriodSeconds",
                                                                  "labels",
                                                                  "annotations",
                                                                  "ownerReferences",
                                                                  "finalizers",
                                                                  "managedFields"};
  return kFields;
}

bool owner_reference_field(std::string_view k) {
  return k == "apiVersion" || k == "kind" || k == "name" || k == "uid" || k == "controller" ||
         k == "blockOwnerDeletion";
}

// What decoding into metav1.ObjectMeta drops: unknown fields, here and in ownerReferences.
void drop_unknown_meta(json& meta, const std::string& prefix, std::vector<std::string>& unknown) {
  for (auto it = meta.begin(); it != meta.end();) {
    if (object_meta_fields().count(it.key()) == 0) {
      unknown.push_back(prefix + "." + it.key());
      it = meta.erase(it);
      continue;
    }
    ++it;
  }
  auto refs = meta.find("ownerReferences");
  if (refs == meta.end() || !refs->is_array()) return;
  for (std::size_t i = 0; i < refs->size(); ++i) {
    json& ref = (*refs)[i];
    if (!ref.is_object()) continue;
    for (auto it = ref.begin(); it != ref.end();) {
      if (owner_reference_field(it.key())) {
        ++it;
        continue;
      }
      unknown.push_back(prefix + ".ownerReferences[" + std::to_string(i) + "]." + it.key());
      it = ref.erase(it);
    }
  }
}

bool is_empty_value(const json& v) {
  return v.is_null() || (v.is_string() && v.get_ref<const std::string&>().empty()) ||
         (v.is_number() && as_double(v) == 0) || (v.is_boolean() && !v.get<bool>()) ||
         ((v.is_object() || v.is_array()) && v.empty());
}

// An embedded resource's metadata after the ObjectMeta round trip: unknown fields gone, and the
// empty fields Go's omitempty leaves out (deletionGracePeriodSeconds is a pointer: 0 stays).
void coerce_embedded_meta(json& meta, const std::string& path, std::vector<std::string>& unknown) {
  drop_unknown_meta(meta, child(path, "metadata"), unknown);
  for (auto it = meta.begin(); it != meta.end();) {
    bool keep = it.key() == "deletionGracePeriodSeconds" ? !it->is_null() : !is_empty_value(*it);
    it = keep ? std::next(it) : meta.erase(it);
  }
}

// objectmeta.Coerce below the resource root: every embedded resource's metadata.
void coerce_embedded(json& x, const json* s, const std::string& path,
                     std::vector<std::string>& unknown) {
  if (s == nullptr) return;
  if (x.is_object()) {
    if (flag(*s, "x-kubernetes-embedded-resource")) {
      auto meta = x.find("metadata");
      if (meta != x.end() && meta->is_object()) coerce_embedded_meta(*meta, path, unknown);
    }
    for (auto it = x.begin(); it != x.end(); ++it) {
      if (const json* prop = property(*s, it.key())) {
        coerce_embedded(*it, prop, child(path, it.key()), unknown);
      } else if (const json* extra = additional_schema(*s)) {
        coerce_embedded(*it, extra, key(path, it.key()), unknown);
      }
    }
  } else if (x.is_array()) {
    const json* items = items_schema(*s);
    for (std::size_t i = 0; i < x.size(); ++i)
      coerce_embedded(x[i], items, index(path, i), unknown);
  }
}

}  // namespace

namespace detail {

void prune_fields(json& value, const json& schema, bool resource_root,
                  std::vector<std::string>* unknown) {
  Pruner(unknown).prune(value, &schema, resource_root);
}

}  // namespace detail

void apply_defaults(const json& schema, json& value) {
  default_value_tree(value, &schema);
}

std::vector<std::string> prune(const json& schema, json& value) {
  std::vector<std::string> unknown;
  if (!value.is_object()) return unknown;
  auto meta = value.find("metadata");
  if (meta != value.end() && meta->is_object()) drop_unknown_meta(*meta, "metadata", unknown);
  std::vector<std::string> pruned;
  Pruner(&pruned).prune(value, &schema, true);
  std::sort(pruned.begin(), pruned.end());
  prune_nulls(value, &schema);
  std::vector<std::string> embedded;
  coerce_embedded(value, &schema, "", embedded);
  std::sort(embedded.begin(), embedded.end());
  unknown.insert(unknown.end(), pruned.begin(), pruned.end());
  unknown.insert(unknown.end(), embedded.begin(), embedded.end());
  return unknown;
}

}  // namespace vkube::apiserver::crd
