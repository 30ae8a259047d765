// Gang markers to the host, borrowing back to the tenant (see gpu_sharing.h).
#include "vkube/syncer/gpu_sharing.h"

#include <algorithm>
#include <cctype>

#include "vkube/gpu/host_queues.h"

namespace vkube::syncer {

namespace {

using json = nlohmann::json;
using gpu::kBorrowingAnnotation;
using gpu::kPodGroupAnnotation;
using gpu::kPodGroupSizeAnnotation;

// Where a group's name may be written, and where its size is then read.
struct Marker {
  std::string_view name_key;
  bool in_labels, in_annotations;
  std::string_view size_key;  // an annotation, or a label when size_in_labels
  bool size_in_labels;
};

constexpr std::string_view kCoschedulingName = "pod-group.scheduling.sigs.k8s.io/name";
constexpr std::string_view kCoschedulingSize = "pod-group.scheduling.sigs.k8s.io/min-available";

// In the order they win (gpu_sharing.h).
constexpr Marker kMarkers[] = {
    {kPodGroupAnnotation, true, true, kPodGroupSizeAnnotation, false},
    {"scheduling.x-k8s.io/pod-group", true, true, kPodGroupSizeAnnotation, false},
    {kCoschedulingName, true, true, kCoschedulingSize, true},
    {"kueue.x-k8s.io/pod-group-name", true, false, "kueue.x-k8s.io/pod-group-total-count", false},
    {"pod-group-name", false, true, kPodGroupSizeAnnotation, false},
    {"scheduling.k8s.io/group-name", false, true, kPodGroupSizeAnnotation, false},
};

const json* map_of(const json& pod, const char* which) {
  auto m = pod.find("metadata");
  if (m == pod.end() || !m->is_object()) return nullptr;
  auto it = m->find(which);
  return it != m->end() && it->is_object() ? &*it : nullptr;
}

std::optional<std::string> value_in(const json* map, std::string_view key) {
  if (map == nullptr) return std::nullopt;
  auto it = map->find(std::string(key));
  if (it == map->end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// A label value's alphabet and ends, up to a DNS subdomain's length (an
// annotation may hold more than a label's 63).
bool valid_group_name(const std::string& s) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  return !s.empty() && s.size() <= 253 && alnum(s.front()) && alnum(s.back()) &&
         std::all_of(s.begin(), s.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// What Kueue requires of a group's name (IsDNS1123Subdomain); the host
// group is a label value as well, at most 63 characters (NameMapper's).
bool dns_subdomain(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (alnum(c)) continue;
    // '-' and '.' inside a label; '.' only between alphanumerics.
    if (i == 0 || i + 1 == s.size() || (c != '-' && c != '.')) return false;
    if (c == '.' && (!alnum(s[i - 1]) || !alnum(s[i + 1]))) return false;
  }
  return true;
}

std::optional<int64_t> parse_size(const std::string& s) {
  if (s.empty() || s.size() > 9 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const int64_t n = std::stoll(s);
  if (n < 1 || n > kMaxPodGroupSize) return std::nullopt;
  return n;
}

std::string str_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Result<std::optional<PodGroup>> tenant_pod_group(const json& tenant_pod) {
  const json* labels = map_of(tenant_pod, "labels");
  const json* annotations = map_of(tenant_pod, "annotations");
  for (const Marker& m : kMarkers) {
    std::optional<std::string> name;
    if (m.in_annotations) name = value_in(annotations, m.name_key);
    if (!name && m.in_labels) name = value_in(labels, m.name_key);
    if (!name) continue;
    const std::string where = std::string(m.name_key);
    if (!valid_group_name(*name))
      return Status::invalid("pod group " + where + "=\"" + name->substr(0, 64) +
                             "\": must be 1-253 letters, digits, '-', '_' or '.', starting and "
                             "ending with a letter or digit");
    std::optional<std::string> size = value_in(m.size_in_labels ? labels : annotations, m.size_key);
    // The lightweight coscheduling size may sit beside its name in either map.
    if (!size && m.size_in_labels) size = value_in(annotations, m.size_key);
    if (!size) return std::optional<PodGroup>();
    std::optional<int64_t> n = parse_size(*size);
    if (!n)
      return Status::invalid("pod group \"" + *name + "\": " + std::string(m.size_key) + "=\"" +
                             size->substr(0, 32) + "\" must be a whole number from 1 to " +
                             std::to_string(kMaxPodGroupSize));
    return std::optional<PodGroup>(PodGroup{*name, *n, where});
  }
  return std::optional<PodGroup>();
}

Status apply_gang_markers(const json& tenant_pod, const NameMapper& names, json& host_pod) {
  auto group = tenant_pod_group(tenant_pod);
  if (!group.is_ok()) return group.status();
  json& annotations = host_pod["metadata"]["annotations"];
  if (!annotations.is_object()) annotations = json::object();
  // The tenant's markers name a group of the tenant namespace: read by a
  // scheduler on the host, they would gather pods of every namespace of the
  // tenant. Only the translated pair travels.
  for (const Marker& m : kMarkers) {
    annotations.erase(std::string(m.name_key));
    annotations.erase(std::string(m.size_key));
  }
  if (!*group) return Status::ok();
  const std::string ns = str_at(tenant_pod.value("metadata", json::object()), "namespace");
  annotations[std::string(kPodGroupAnnotation)] = names.host_name(ns, (*group)->name);
  annotations[std::string(kPodGroupSizeAnnotation)] = std::to_string((*group)->size);
  return Status::ok();
}

Status apply_host_queue_gang(const json& tenant_pod,
                             const std::map<std::string, std::string>& policy_labels,
                             json& host_pod) {
  if (!policy_labels.count(std::string(gpu::kKueueQueueLabel))) return Status::ok();
  const json* annotations = map_of(host_pod, "annotations");
  std::optional<std::string> group = value_in(annotations, kPodGroupAnnotation);
  std::optional<std::string> size = value_in(annotations, kPodGroupSizeAnnotation);
  if (!group || !size) return Status::ok();
  if (!dns_subdomain(*group)) {
    // Named as the tenant wrote it, not as the host knows it.
    auto tenant_group = tenant_pod_group(tenant_pod);
    const std::string name = tenant_group.is_ok() && *tenant_group ? (*tenant_group)->name : *group;
    return Status::invalid("pod group \"" + name.substr(0, 64) +
                           "\": Kueue on the host names a Workload after the group, so its name "
                           "must be lowercase letters, digits, '-' and '.' (RFC 1123)");
  }
  json& meta = host_pod["metadata"];
  meta["labels"][std::string(kKueueGroupLabel)] = *group;
  meta["annotations"][std::string(kKueueGroupCountAnnotation)] = *size;
  return Status::ok();
}

std::string tenant_view_of_group(std::string text, const json& tenant_pod,
                                 const NameMapper& names) {
  auto group = tenant_pod_group(tenant_pod);
  if (!group.is_ok() || !*group) return text;
  const std::string ns = str_at(tenant_pod.value("metadata", json::object()), "namespace");
  const std::string from = names.host_name(ns, (*group)->name);
  const std::string& to = (*group)->name;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::optional<json> borrowing_condition(const json& host_pod) {
  const json* annotations = map_of(host_pod, "annotations");
  std::optional<std::string> value = value_in(annotations, kBorrowingAnnotation);
  if (!value || value->empty() || value->size() > 12 ||
      !std::all_of(value->begin(), value->end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const int64_t milli = std::stoll(*value);
  if (milli <= 0) return std::nullopt;
  const std::string held = milli == 1000 ? "1 GPU" : gpu::format_gpus(milli) + " GPUs";
  json c = {{"type", std::string(kBorrowingCondition)},
            {"status", "True"},
            {"reason", std::string(kBorrowingReason)},
            {"message", "holds " + held + " beyond the tenant's deserved share; " +
                            (milli == 1000 ? "it" : "they") + " may be reclaimed"}};
  // Borrowing starts at the binding: the scheduler's condition says when,
  // and a time that never changes keeps the status copy from rewriting it.
  const json status = host_pod.value("status", json::object());
  for (const json& pc : status.value("conditions", json::array()))
    if (pc.is_object() && pc.value("type", "") == "PodScheduled" &&
        pc.contains("lastTransitionTime"))
      c["lastTransitionTime"] = pc["lastTransitionTime"];
  return c;
}

}  // namespace vkube::syncer
