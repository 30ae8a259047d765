#include "vkube/syncer/compare.h"

#include <set>
#include <string>

#include "vkube/api/quantity.h"

namespace vkube::syncer {

namespace {

using json = nlohmann::json;

const json& member(const json& obj, const char* a, const char* b) {
  static const json kNull;
  auto m = obj.find(a);
  if (m == obj.end() || !m->is_object()) return kNull;
  auto v = m->find(b);
  return v == m->end() ? kNull : *v;
}

std::set<std::string> managed_keys(const json& obj, std::string_view record = kManagedAnnotations) {
  std::set<std::string> keys;
  const json& a = member(obj, "metadata", "annotations");
  if (!a.is_object()) return keys;
  auto it = a.find(std::string(record));
  if (it == a.end() || !it->is_string()) return keys;
  const std::string text = it->get<std::string>();
  for (size_t i = 0; i < text.size();) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    if (j > i) keys.insert(text.substr(i, j - i));
    i = j + 1;
  }
  return keys;
}

}  // namespace

namespace {

// Maps whose values are quantities ("500m" and "0.5" are one amount); a
// ConfigMap's "1.10" and "1.1" are two strings.
bool quantity_map(const std::string& key) {
  return key == "limits" || key == "requests" || key == "capacity" || key == "allocatable" ||
         key == "hard" || key == "used";
}

bool covers_in(const json& have, const json& want, bool quantities) {
  if (want.is_object()) {
    if (!have.is_object()) return want.empty() && have.is_null();
    for (auto it = want.begin(); it != want.end(); ++it) {
      auto h = have.find(it.key());
      if (h == have.end()) {
        // An empty or null wish is met by absence (the host drops them).
        if (it->is_null() || ((it->is_object() || it->is_array()) && it->empty())) continue;
        if (it->is_boolean() && !it->get<bool>()) continue;
        return false;
      }
      if (!covers_in(*h, *it, quantities || quantity_map(it.key()))) return false;
    }
    return true;
  }
  if (want.is_array()) {
    if (!have.is_array() || have.size() != want.size()) return want.empty() && have.is_null();
    for (size_t i = 0; i < want.size(); ++i)
      if (!covers_in(have[i], want[i], false)) return false;
    return true;
  }
  if (want.is_number() && have.is_number()) return want.get<double>() == have.get<double>();
  if (want == have) return true;
  if (quantities && (want.is_string() || want.is_number()) &&
      (have.is_string() || have.is_number())) {
    auto a = api::quantity_milli(want), b = api::quantity_milli(have);
    return a && b && *a == *b;
  }
  return false;
}

}  // namespace

bool covers(const json& have, const json& want) {
  return covers_in(have, want, false);
}

namespace {
std::string joined_keys(const json& map, std::string_view skip) {
  std::string keys;
  if (map.is_object())
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (it.key() == skip) continue;
      if (!keys.empty()) keys += ',';
      keys += it.key();
    }
  return keys;
}
}  // namespace

void record_managed_annotations(json& want) {
  json& meta = want["metadata"];
  meta["annotations"][std::string(kManagedLabels)] =
      joined_keys(meta.value("labels", json::object()), "");
  meta["annotations"][std::string(kManagedAnnotations)] =
      joined_keys(meta["annotations"], kManagedAnnotations);
}

json metadata_patch(const json& have, const json& want) {
  json patch = json::object();
  const json& hl = member(have, "metadata", "labels");
  const json& wl = member(want, "metadata", "labels");
  json labels = json::object();
  if (wl.is_object())
    for (auto it = wl.begin(); it != wl.end(); ++it)
      if (!hl.is_object() || !hl.contains(it.key()) || hl[it.key()] != *it) labels[it.key()] = *it;
  // Labels the syncer set and the tenant dropped go; the host's own stay
  // (a webhook's label removed on every pass would be a write loop).
  for (const std::string& key : managed_keys(have, kManagedLabels))
    if (hl.is_object() && hl.contains(key) && (!wl.is_object() || !wl.contains(key)))
      labels[key] = nullptr;
  if (!labels.empty()) patch["labels"] = std::move(labels);

  const json& ha = member(have, "metadata", "annotations");
  const json& wa = member(want, "metadata", "annotations");
  json annotations = json::object();
  if (wa.is_object())
    for (auto it = wa.begin(); it != wa.end(); ++it)
      if (!ha.is_object() || !ha.contains(it.key()) || ha[it.key()] != *it)
        annotations[it.key()] = *it;
  for (const std::string& key : managed_keys(have))
    if (ha.is_object() && ha.contains(key) && (!wa.is_object() || !wa.contains(key)))
      annotations[key] = nullptr;
  if (!annotations.empty()) patch["annotations"] = std::move(annotations);

  const json& wo = member(want, "metadata", "ownerReferences");
  if (!wo.is_null() && !covers(member(have, "metadata", "ownerReferences"), wo))
    patch["ownerReferences"] = wo;
  if (patch.empty()) return nullptr;
  return {{"metadata", std::move(patch)}};
}

json replacement(const json& have, const json& want) {
  json body = want;
  json& meta = body["metadata"];
  const json hmeta = have.value("metadata", json::object());
  for (const char* field : {"resourceVersion", "uid", "creationTimestamp", "finalizers"})
    if (auto it = hmeta.find(field); it != hmeta.end()) meta[field] = *it;
  const std::set<std::string> managed_labels = managed_keys(have, kManagedLabels);
  if (auto l = hmeta.find("labels"); l != hmeta.end() && l->is_object())
    for (auto it = l->begin(); it != l->end(); ++it)
      if (!managed_labels.count(it.key()) && !meta["labels"].contains(it.key()))
        meta["labels"][it.key()] = *it;
  const std::set<std::string> managed = managed_keys(have);
  if (auto a = hmeta.find("annotations"); a != hmeta.end() && a->is_object())
    for (auto it = a->begin(); it != a->end(); ++it)
      if (!managed.count(it.key()) && !meta["annotations"].contains(it.key()))
        meta["annotations"][it.key()] = *it;
  return body;
}

}  // namespace vkube::syncer
