#include "statefulset_pods.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "workload_common.h"

namespace vkube::controllers::statefulset {

using workload::int_at;
using workload::str_at;

std::pair<std::string, int> parent_and_ordinal(std::string_view name) {
  // kube's "(.*)-([0-9]+)$" with the ordinal parsed as a 32-bit integer.
  size_t digits = name.size();
  while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9') --digits;
  if (digits == name.size() || digits == 0 || name[digits - 1] != '-') return {"", -1};
  std::string_view number = name.substr(digits);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || value > std::numeric_limits<int32_t>::max()) return {"", -1};
  return {std::string(name.substr(0, digits - 1)), static_cast<int>(value)};
}

int ordinal_of(const json& pod) {
  return parent_and_ordinal(meta(pod, "name")).second;
}

int start_ordinal(const json& set) {
  return static_cast<int>(int_at(set, {"spec", "ordinals", "start"}, 0));
}

int replicas_of(const json& set) {
  return static_cast<int>(int_at(set, {"spec", "replicas"}, 1));
}

bool in_ordinal_range(const json& set, int ordinal) {
  int start = start_ordinal(set);
  return ordinal >= start && ordinal < start + replicas_of(set);
}

std::string pod_name(const json& set, int ordinal) {
  return meta(set, "name") + "-" + std::to_string(ordinal);
}

std::string claim_name(const json& set, const json& claim_template, int ordinal) {
  return meta(claim_template, "name") + "-" + meta(set, "name") + "-" + std::to_string(ordinal);
}

bool allows_burst(const json& set) {
  return str_at(set, {"spec", "podManagementPolicy"}) == "Parallel";
}

namespace {

const json& claim_templates(const json& set) {
  static const json empty = json::array();
  auto spec = set.find("spec");
  if (spec == set.end() || !spec->is_object()) return empty;
  auto t = spec->find("volumeClaimTemplates");
  return t != spec->end() && t->is_array() ? *t : empty;
}

json match_labels(const json& set) {
  auto spec = set.find("spec");
  if (spec == set.end() || !spec->is_object()) return json::object();
  auto sel = spec->find("selector");
  if (sel == spec->end() || !sel->is_object()) return json::object();
  auto m = sel->find("matchLabels");
  return m != sel->end() && m->is_object() ? *m : json::object();
}

bool refers_to(const json& ref, const json& owner) {
  return ref.value("uid", "") == meta(owner, "uid");
}

}  // namespace

std::vector<json> claims_for(const json& set, int ordinal) {
  std::vector<json> claims;
  for (const json& t : claim_templates(set)) {
    json claim = {{"apiVersion", "v1"}, {"kind", "PersistentVolumeClaim"}};
    json m = json::object();
    m["name"] = claim_name(set, t, ordinal);
    m["namespace"] = meta(set, "namespace");
    json labels = labels_of(t);
    const json selected = match_labels(set);
    for (auto& [k, v] : selected.items()) labels[k] = v;
    if (!labels.empty()) m["labels"] = labels;
    if (t.contains("metadata") && t["metadata"].contains("annotations"))
      m["annotations"] = t["metadata"]["annotations"];
    claim["metadata"] = std::move(m);
    claim["spec"] = t.value("spec", json::object());
    claims.push_back(std::move(claim));
  }
  return claims;
}

json new_pod(const json& set, const json& pod_template, int ordinal, const std::string& revision) {
  std::string name = pod_name(set, ordinal);
  json pod = pod_from_template(pod_template, set, "", name);
  json& labels = pod["metadata"]["labels"];
  if (!labels.is_object()) labels = json::object();
  labels[std::string(kPodNameLabel)] = name;
  labels[std::string(kPodIndexLabel)] = std::to_string(ordinal);
  labels[std::string(kRevisionLabel)] = revision;
  json& spec = pod["spec"];
  spec["hostname"] = name;
  std::string service = str_at(set, {"spec", "serviceName"});
  if (!service.empty()) spec["subdomain"] = service;
  // Claims first, in template order, then the template's other volumes.
  json volumes = json::array();
  std::vector<std::string> claimed;
  for (const json& t : claim_templates(set)) {
    std::string volume = meta(t, "name");
    claimed.push_back(volume);
    volumes.push_back({{"name", volume},
                       {"persistentVolumeClaim", {{"claimName", claim_name(set, t, ordinal)}}}});
  }
  for (const json& v : spec.value("volumes", json::array())) {
    if (std::find(claimed.begin(), claimed.end(), v.value("name", "")) == claimed.end())
      volumes.push_back(v);
  }
  if (!volumes.empty()) spec["volumes"] = std::move(volumes);
  return pod;
}

bool identity_matches(const json& set, const json& pod) {
  auto [parent, ordinal] = parent_and_ordinal(meta(pod, "name"));
  const json& labels = labels_of(pod);
  return ordinal >= 0 && parent == meta(set, "name") &&
         meta(pod, "namespace") == meta(set, "namespace") &&
         labels.value(std::string(kPodNameLabel), "") == meta(pod, "name") &&
         labels.value(std::string(kPodIndexLabel), "") == std::to_string(ordinal);
}

bool storage_matches(const json& set, const json& pod) {
  int ordinal = ordinal_of(pod);
  if (ordinal < 0) return false;
  const json empty = json::array();
  const json& volumes = pod.contains("spec") ? pod["spec"].value("volumes", empty) : empty;
  for (const json& t : claim_templates(set)) {
    bool found = false;
    for (const json& v : volumes) {
      if (v.value("name", "") != meta(t, "name")) continue;
      found = str_at(v, {"persistentVolumeClaim", "claimName"}) == claim_name(set, t, ordinal);
      break;
    }
    if (!found) return false;
  }
  return true;
}

bool is_created(const json& pod) {
  return !pod_phase(pod).empty();
}

bool running_and_ready(const json& pod) {
  return pod_phase(pod) == "Running" && pod_ready(pod);
}

bool running_and_available(const json& pod, int64_t min_ready_seconds, TimePoint now) {
  return pod_phase(pod) == "Running" && pod_available(pod, min_ready_seconds, now);
}

bool unavailable(const json& pod, int64_t min_ready_seconds, TimePoint now) {
  return !running_and_available(pod, min_ready_seconds, now) || is_terminating(pod);
}

std::string pod_revision(const json& pod) {
  return labels_of(pod).value(std::string(kRevisionLabel), "");
}

Counts count_pods(const std::vector<const json*>& pods, int64_t min_ready_seconds, TimePoint now,
                  const std::string& current_revision, const std::string& update_revision) {
  Counts c;
  for (const json* pod : pods) {
    if (is_created(*pod)) ++c.replicas;
    if (running_and_ready(*pod)) {
      ++c.ready;
      if (running_and_available(*pod, min_ready_seconds, now)) ++c.available;
    }
    if (is_created(*pod) && !is_terminating(*pod)) {
      std::string revision = pod_revision(*pod);
      if (revision == current_revision) ++c.current;
      if (revision == update_revision) ++c.updated;
    }
  }
  return c;
}

json claim_owner_refs(const json& set, const json& claim, const json& pod) {
  const bool delete_on_delete =
      str_at(set, {"spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted"}) == "Delete";
  const bool delete_on_scale =
      str_at(set, {"spec", "persistentVolumeClaimRetentionPolicy", "whenScaled"}) == "Delete";
  const bool scaled_down = !in_ordinal_range(set, ordinal_of(pod));
  const bool want_set = delete_on_delete && !(delete_on_scale && scaled_down);
  const bool want_pod = delete_on_scale && scaled_down && !meta(pod, "uid").empty();

  json refs = json::array();
  bool has_set = false, has_pod = false;
  const json empty = json::array();
  const json& current =
      claim.contains("metadata") ? claim["metadata"].value("ownerReferences", empty) : empty;
  for (const json& ref : current) {
    if (refers_to(ref, set)) {
      if (!want_set) continue;
      has_set = true;
    } else if (ref.value("kind", "") == "Pod" && ref.value("name", "") == meta(pod, "name")) {
      if (!want_pod || !refers_to(ref, pod)) continue;
      has_pod = true;
    }
    refs.push_back(ref);
  }
  if (want_set && !has_set) {
    json ref = controller_owner_ref(workload::with_type(set, "apps/v1", "StatefulSet"));
    // A claim has at most one controller: another one makes ours a plain owner.
    if (controller_ref(claim) != nullptr) ref.erase("controller");
    refs.push_back(std::move(ref));
  }
  if (want_pod && !has_pod) {
    refs.push_back({{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"name", meta(pod, "name")},
                    {"uid", meta(pod, "uid")}});
  }
  return refs;
}

bool claim_is_stale(const json& claim, const json& pod) {
  const json empty = json::array();
  const json& refs =
      claim.contains("metadata") ? claim["metadata"].value("ownerReferences", empty) : empty;
  for (const json& ref : refs) {
    if (ref.value("kind", "") == "Pod" && ref.value("name", "") == meta(pod, "name") &&
        ref.value("uid", "") != meta(pod, "uid"))
      return true;
  }
  return false;
}

}  // namespace vkube::controllers::statefulset
