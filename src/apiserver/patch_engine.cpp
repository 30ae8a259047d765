#include "patch_engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "json_patch.h"
#include "patch_decode.h"
#include "vkube/api/limits.h"

namespace vkube::apiserver {

Result<PatchType> patch_type(std::string_view ct) {
  ct = ct.substr(0, ct.find(';'));
  if (ct == "application/json-patch+json") return PatchType::kJson;
  if (ct == "application/merge-patch+json") return PatchType::kMerge;
  if (ct == "application/strategic-merge-patch+json") return PatchType::kStrategic;
  if (ct == "application/apply-patch+yaml") return PatchType::kApply;
  // kube's NewUnsupportedMediaTypeError with the patch types it serves.
  return Status(Code::kUnsupportedMediaType,
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, "
                "application/strategic-merge-patch+json, application/apply-patch+yaml");
}

namespace {

using schema::Field;
using schema::Message;

// The message a field's values have (the element for lists, the value for
// maps of messages), or nullptr for scalars and special messages that
// merge as values (Quantity, Time, IntOrString, raw JSON).
const Message* value_message(const Field* f) {
  if (f == nullptr || f->message == nullptr) return nullptr;
  if (f->message->json_format != schema::JsonFormat::kObject) return nullptr;
  return f->message;
}

bool merges(const Field* f) {
  return f != nullptr && f->patch_strategy.find("merge") != std::string::npos;
}

// Removes the directives ($patch, $retainKeys, $setElementOrder/...) from a
// value of the patch that is copied as is.
json strip_directives(const json& v) {
  if (v.is_object()) {
    json out = json::object();
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!it.key().starts_with("$")) out[it.key()] = strip_directives(it.value());
    return out;
  }
  if (v.is_array()) {
    json out = json::array();
    for (const json& e : v)
      if (!(e.is_object() && e.contains("$patch"))) out.push_back(strip_directives(e));
    return out;
  }
  return v;
}

Status merge_map(json& target, const json& patch, const Message* m);

// Orders `list` by $setElementOrder: the listed elements in that order, the
// others (only on the server) after them, in their own order.
void set_order(json& list, const json& order, const std::string& key) {
  if (!order.is_array()) return;
  json sorted = json::array();
  std::vector<bool> used(list.size(), false);
  for (const json& o : order) {
    json k = key.empty() ? o : (o.is_object() ? o.value(key, json()) : json());
    for (size_t i = 0; i < list.size(); ++i) {
      if (used[i]) continue;
      const json& t = list[i];
      bool same = key.empty() ? t == k : (t.is_object() && t.value(key, json()) == k);
      if (same) {
        sorted.push_back(t);
        used[i] = true;
        break;
      }
    }
  }
  for (size_t i = 0; i < list.size(); ++i)
    if (!used[i]) sorted.push_back(list[i]);
  list = std::move(sorted);
}

Status merge_list(json& target, const json& patch, const Field* f, const json* order) {
  if (!merges(f)) {
    target = strip_directives(patch);  // atomic or replace: the patch's list wins
    return Status::ok();
  }
  if (!target.is_array()) target = json::array();
  const std::string& key = f->patch_merge_key;
  if (key.empty()) {
    // A set of primitives: union, keeping the server's order.
    for (const json& v : patch)
      if (std::find(target.begin(), target.end(), v) == target.end()) target.push_back(v);
    if (order) set_order(target, *order, "");
    return Status::ok();
  }
  const Message* elem = value_message(f);
  // {"$patch": "replace"} anywhere in the list: the rest of the list replaces it.
  for (const json& item : patch) {
    if (item.is_object() && item.value("$patch", "") == "replace" && !item.contains(key)) {
      json out = json::array();
      for (const json& e : patch)
        if (!(e.is_object() && e.contains("$patch") && !e.contains(key)))
          out.push_back(strip_directives(e));
      target = std::move(out);
      return Status::ok();
    }
  }
  for (const json& item : patch) {
    if (!item.is_object() || !item.contains(key))
      return Status::bad_request("map: " + go_value(item) +
                                 " does not contain declared merge key: " + key);
    auto it = std::find_if(target.begin(), target.end(), [&](const json& t) {
      return t.is_object() && t.contains(key) && t[key] == item[key];
    });
    std::string directive = item.value("$patch", "");
    if (directive == "delete") {
      while (it != target.end()) {  // every element with that key
        target.erase(it);
        it = std::find_if(target.begin(), target.end(), [&](const json& t) {
          return t.is_object() && t.contains(key) && t[key] == item[key];
        });
      }
      continue;
    }
    if (directive == "replace") {
      json copy = strip_directives(item);
      if (it != target.end())
        *it = std::move(copy);
      else
        target.push_back(std::move(copy));
      continue;
    }
    if (!directive.empty() && directive != "merge")
      return Status::bad_request("unknown patch type: " + directive + " in map: " + go_value(item));
    if (it == target.end()) {
      json fresh = json::object();
      VKUBE_RETURN_IF_ERROR(merge_map(fresh, item, elem));
      target.push_back(std::move(fresh));
    } else {
      VKUBE_RETURN_IF_ERROR(merge_map(*it, item, elem));
    }
  }
  if (order) set_order(target, *order, key);
  return Status::ok();
}

Status merge_map(json& target, const json& patch, const Message* m) {
  if (!patch.is_object()) {
    target = patch;
    return Status::ok();
  }
  if (!target.is_object()) target = json::object();
  std::string directive = patch.value("$patch", "");
  if (directive == "replace") {
    target = strip_directives(patch);
    return Status::ok();
  }
  if (directive == "delete") {
    target = json::object();
    return Status::ok();
  }
  if (!directive.empty() && directive != "merge")
    return Status::bad_request("unknown patch type: " + directive + " in map: " + go_value(patch));
  if (patch.contains("$retainKeys")) {
    const json& keep = patch["$retainKeys"];
    if (!keep.is_array()) return Status::bad_request("invalid patch format of retainKeys");
    for (auto it = target.begin(); it != target.end();) {
      if (std::find(keep.begin(), keep.end(), it.key()) == keep.end())
        it = target.erase(it);
      else
        ++it;
    }
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (k.starts_with("$deleteFromPrimitiveList/")) {
      std::string field = k.substr(25);
      if (!v.is_array()) return Status::bad_request("invalid patch format of primitive list");
      if (target.contains(field) && target[field].is_array()) {
        json& list = target[field];
        for (const json& d : v) list.erase(std::remove(list.begin(), list.end(), d), list.end());
      }
      continue;
    }
    if (k.starts_with("$")) continue;  // $setElementOrder with its list; $patch, $retainKeys above
    if (v.is_null()) {
      target.erase(k);
      continue;
    }
    const Field* f = m ? m->field(k) : nullptr;
    if (v.is_array()) {
      const json* order = nullptr;
      auto o = patch.find("$setElementOrder/" + k);
      if (o != patch.end()) order = &*o;
      json& t = target[k];
      if (t.is_null()) t = json::array();
      VKUBE_RETURN_IF_ERROR(merge_list(t, v, f, order));
    } else if (v.is_object()) {
      // Maps of strings (labels) and messages merge key by key; a map of
      // messages merges each value with the value's message.
      const Message* sub = nullptr;
      if (f != nullptr && !f->is_map) sub = value_message(f);
      if (f != nullptr && f->is_map) {
        json& t = target[k];
        if (!t.is_object()) t = json::object();
        if (v.value("$patch", "") == "replace") {
          t = strip_directives(v);
          continue;
        }
        for (auto e = v.begin(); e != v.end(); ++e) {
          if (e.key().starts_with("$")) continue;
          if (e.value().is_null())
            t.erase(e.key());
          else if (f->map_value == schema::Type::kMessage && value_message(f) &&
                   e.value().is_object())
            VKUBE_RETURN_IF_ERROR(merge_map(t[e.key()], e.value(), value_message(f)));
          else
            t[e.key()] = e.value();
        }
      } else if (f != nullptr && f->message != nullptr && sub == nullptr) {
        target[k] = strip_directives(v);  // a special message (raw JSON): a value
      } else {
        VKUBE_RETURN_IF_ERROR(merge_map(target[k], v, sub));
      }
    } else {
      target[k] = v;
    }
  }
  // An order for a list the patch did not otherwise touch.
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (!it.key().starts_with("$setElementOrder/")) continue;
    std::string field = it.key().substr(17);
    if (!patch.contains(field) && target.contains(field) && target[field].is_array()) {
      const Field* f = m ? m->field(field) : nullptr;
      set_order(target[field], it.value(), f ? f->patch_merge_key : "");
    }
  }
  return Status::ok();
}

}  // namespace

Status strategic_merge_into(json& target, const json& patch, const schema::Message* m) {
  if (!patch.is_object())
    return Status::bad_request("a strategic merge patch must be a JSON object");
  return merge_map(target, patch, m);
}

Result<json> strategic_merge(const json& target, const json& patch, const schema::Message* m) {
  json out = target;
  VKUBE_RETURN_IF_ERROR(strategic_merge_into(out, patch, m));
  return out;
}

namespace {

// A patched object nesting deeper than the limit is refused as kube refuses
// a patched object its decoder cannot read back: 422.
Status too_deep(const char* what, size_t limit) {
  return Status::invalid(std::string(what) + " nests objects or arrays deeper than " +
                         std::to_string(limit) + " levels");
}

}  // namespace

Result<json> apply_patch(PatchType type, const json& target, const json& patch,
                         const schema::Message* m) {
  return patch_object(type, json(target), target, patch, m);
}

Result<json> patch_object(PatchType type, json target, const json& original, const json& patch,
                          const schema::Message* m) {
  if (type == PatchType::kApply)
    return Status(Code::kUnsupportedMediaType,
                  "apply patches are merged by server-side apply (apply/), not patched");
  if (type == PatchType::kJson) {
    auto out = apply_json_patch(target, patch);
    if (!out.is_ok()) return out;
    VKUBE_RETURN_IF_ERROR(check_decodes(type, original, patch, *out, m));
    return out;
  }
  if (!patch.is_object()) {
    // kube reads a strategic merge patch into a map (null leaves it empty)
    // and gives a merge patch to json-patch, which wants a document.
    if (type == PatchType::kStrategic && patch.is_null()) return target;
    if (type == PatchType::kMerge) return Status::bad_request("Invalid JSON Patch");
    return Status::bad_request("json: cannot unmarshal " +
                               std::string(patch.is_array()     ? "array"
                                           : patch.is_string()  ? "string"
                                           : patch.is_boolean() ? "bool"
                                                                : "number") +
                               " into Go value of type map[string]interface {}");
  }
  // Both merges recurse along the patch and the target: bounded by
  // their depths. Neither amplifies: the result holds at most the target
  // and the patch, and storage refuses objects past api::kMaxObjectBytes.
  if (!api::within_object_limit(target)) return too_deep("the object", api::kMaxObjectNestingDepth);
  if (!api::within_nesting_limit(patch)) return too_deep("the patch", api::kMaxNestingDepth);
  // Merged in place: the target is the caller's copy.
  if (type == PatchType::kMerge)
    target.merge_patch(patch);
  else
    VKUBE_RETURN_IF_ERROR(strategic_merge_into(target, patch, m));
  if (!api::within_object_limit(target))
    return too_deep("the patched object", api::kMaxObjectNestingDepth);
  VKUBE_RETURN_IF_ERROR(check_decodes(type, original, patch, target, m));
  return target;
}

}  // namespace vkube::apiserver
