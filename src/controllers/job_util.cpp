#include "job_util.h"

#include <algorithm>
#include <charconv>

#include "util.h"

namespace vkube::controllers::job {

namespace {

const json kEmptyObject = json::object();
const json kEmptyArray = json::array();

const json& array_field(const json& obj, std::string_view field) {
  if (!obj.is_object()) return kEmptyArray;
  auto it = obj.find(field);
  return it != obj.end() && it->is_array() ? *it : kEmptyArray;
}

std::optional<int64_t> to_int(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<TimePoint> time_field(const json& obj, std::string_view field) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(field);
  if (it == obj.end() || !it->is_string()) return std::nullopt;
  return parse_rfc3339(it->get<std::string>());
}

TimePoint creation_time(const json& obj) {
  return time_field(object_field(obj, "metadata"), "creationTimestamp").value_or(TimePoint{});
}

}  // namespace

int64_t int_field(const json& obj, std::string_view field, int64_t fallback) {
  return opt_int(obj, field).value_or(fallback);
}

std::optional<int64_t> opt_int(const json& obj, std::string_view field) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(field);
  if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

const json& object_field(const json& obj, std::string_view field) {
  if (!obj.is_object()) return kEmptyObject;
  auto it = obj.find(field);
  return it != obj.end() && it->is_object() ? *it : kEmptyObject;
}

// --- Indexed Jobs ------------------------------------------------------------

int64_t completion_index(const json& pod) {
  const json& annotations = object_field(object_field(pod, "metadata"), "annotations");
  auto it = annotations.find(kIndexAnnotation);
  if (it == annotations.end() || !it->is_string()) return -1;
  std::optional<int64_t> v = to_int(it->get<std::string>());
  return v && *v >= 0 ? *v : -1;
}

std::set<int64_t> parse_indexes(std::string_view s, int64_t completions) {
  std::set<int64_t> out;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view part = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    size_t dash = part.find('-');
    std::optional<int64_t> first = to_int(part.substr(0, dash));
    std::optional<int64_t> last =
        dash == std::string_view::npos ? first : to_int(part.substr(dash + 1));
    if (!first || !last || *first < 0 || *last < *first) continue;
    for (int64_t i = *first; i <= *last && i < completions; ++i) out.insert(i);
  }
  return out;
}

std::string format_indexes(const std::set<int64_t>& indexes) {
  std::string out;
  for (auto it = indexes.begin(); it != indexes.end();) {
    int64_t first = *it;
    int64_t last = first;
    while (++it != indexes.end() && *it == last + 1) ++last;
    if (!out.empty()) out += ',';
    out += std::to_string(first);
    if (last > first) out += (last == first + 1 ? "," : "-") + std::to_string(last);
  }
  return out;
}

json indexed_template(const json& pod_template, std::string_view job_name, int64_t index) {
  json t = pod_template;
  std::string value = std::to_string(index);
  t["metadata"]["annotations"][std::string(kIndexAnnotation)] = value;
  t["metadata"]["labels"][std::string(kIndexAnnotation)] = value;
  json& spec = t["spec"];
  spec["hostname"] = std::string(job_name) + "-" + value;
  // The kubelet resolves this from the pod's label (kube's PodIndexLabel).
  json env = {{"name", kIndexEnv},
              {"valueFrom",
               {{"fieldRef",
                 {{"fieldPath", "metadata.labels['" + std::string(kIndexAnnotation) + "']"}}}}}};
  for (const char* list : {"initContainers", "containers"}) {
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (json& c : spec[list]) {
      if (!c.is_object()) continue;
      bool present = false;
      for (const json& e : array_field(c, "env"))
        present |= e.is_object() && e.value("name", "") == kIndexEnv;
      if (!present) c["env"].push_back(env);
    }
  }
  return t;
}

std::string indexed_generate_name(std::string_view job_name, int64_t index) {
  constexpr size_t kMaxGeneratedName = 63 - 5;
  std::string suffix = "-" + std::to_string(index) + "-";
  std::string prefix = std::string(job_name) + suffix;
  if (prefix.size() > kMaxGeneratedName)
    prefix = std::string(job_name.substr(0, kMaxGeneratedName - suffix.size())) + suffix;
  return prefix;
}

// --- Pods ------------------------------------------------------------------

bool has_tracking_finalizer(const json& pod) {
  for (const json& f : array_field(object_field(pod, "metadata"), "finalizers"))
    if (f.is_string() && f.get<std::string>() == kTrackingFinalizer) return true;
  return false;
}

bool pod_failed_for(const json& pod, const json& job) {
  std::string phase = pod_phase(pod);
  if (phase == "Failed") return true;
  const json& spec = object_field(job, "spec");
  bool only_failed =
      spec.value("podReplacementPolicy", "") == "Failed" || spec.contains("podFailurePolicy");
  if (only_failed) return false;
  return is_terminating(pod) && phase != "Succeeded";
}

bool pod_terminating(const json& pod) {
  std::string phase = pod_phase(pod);
  return is_terminating(pod) && phase != "Succeeded" && phase != "Failed";
}

TimePoint finished_time(const json& pod) {
  const json& status = object_field(pod, "status");
  std::optional<TimePoint> latest;
  bool all_terminated = true;
  for (const json& c : array_field(status, "containerStatuses")) {
    auto t = time_field(object_field(object_field(c, "state"), "terminated"), "finishedAt");
    if (!t) {
      all_terminated = false;
      break;
    }
    if (!latest || *t > *latest) latest = t;
  }
  if (all_terminated && latest) return *latest;
  for (const json& c : array_field(status, "conditions")) {
    if (c.value("type", "") == "Ready" && c.value("status", "") == "False")
      if (auto t = time_field(c, "lastTransitionTime")) return *t;
  }
  const json& metadata = object_field(pod, "metadata");
  if (auto t = time_field(metadata, "deletionTimestamp"))
    return *t - std::chrono::seconds(int_field(metadata, "deletionGracePeriodSeconds"));
  return creation_time(pod);
}

void sort_for_removal(std::vector<ObjectPtr>& pods) {
  auto rank = [](const json& p) {
    std::string phase = pod_phase(p);
    return phase == "Running" ? 2 : phase == "Unknown" ? 1 : 0;
  };
  auto node = [](const json& p) { return object_field(p, "spec").value("nodeName", ""); };
  std::stable_sort(pods.begin(), pods.end(), [&](const ObjectPtr& a, const ObjectPtr& b) {
    bool a_unassigned = node(*a).empty();
    bool b_unassigned = node(*b).empty();
    if (a_unassigned != b_unassigned) return a_unassigned;
    if (rank(*a) != rank(*b)) return rank(*a) < rank(*b);
    if (pod_ready(*a) != pod_ready(*b)) return !pod_ready(*a);
    return creation_time(*a) > creation_time(*b);
  });
}

std::vector<ObjectPtr> pods_for_removal(const json& job, std::vector<ObjectPtr> active,
                                        size_t rm_at_least) {
  std::vector<ObjectPtr> rm;
  std::vector<ObjectPtr> left;
  const json& spec = object_field(job, "spec");
  if (spec.value("completionMode", "") == "Indexed") {
    int64_t completions = int_field(spec, "completions");
    std::stable_sort(active.begin(), active.end(), [](const ObjectPtr& a, const ObjectPtr& b) {
      return completion_index(*a) < completion_index(*b);
    });
    for (size_t i = 0; i < active.size();) {
      int64_t index = completion_index(*active[i]);
      size_t j = i;
      while (j < active.size() && completion_index(*active[j]) == index) ++j;
      std::vector<ObjectPtr> same(active.begin() + static_cast<long>(i),
                                  active.begin() + static_cast<long>(j));
      if (index < 0 || index >= completions) {
        rm.insert(rm.end(), same.begin(), same.end());
      } else {
        // Of pods sharing an index, the one most worth keeping stays.
        sort_for_removal(same);
        rm.insert(rm.end(), same.begin(), same.end() - 1);
        left.push_back(same.back());
      }
      i = j;
    }
  } else {
    left = std::move(active);
  }
  if (rm.size() < rm_at_least) {
    sort_for_removal(left);
    size_t more = std::min(left.size(), rm_at_least - rm.size());
    rm.insert(rm.end(), left.begin(), left.begin() + static_cast<long>(more));
  }
  return rm;
}

// --- Backoff -----------------------------------------------------------------

BackoffRecord next_backoff(BackoffRecord record, const std::vector<ObjectPtr>& succeeded,
                           const std::vector<ObjectPtr>& failed) {
  std::vector<TimePoint> failures;
  for (const ObjectPtr& p : failed) failures.push_back(finished_time(*p));
  std::sort(failures.begin(), failures.end());
  if (succeeded.empty()) {
    if (failures.empty()) return record;
    record.failures += static_cast<int64_t>(failures.size());
    record.last_failure = failures.back();
    return record;
  }
  TimePoint last_success{};
  for (const ObjectPtr& p : succeeded) last_success = std::max(last_success, finished_time(*p));
  record = BackoffRecord{};
  for (auto it = failures.rbegin(); it != failures.rend() && *it > last_success; ++it) {
    if (!record.last_failure) record.last_failure = *it;
    ++record.failures;
  }
  return record;
}

std::chrono::milliseconds remaining_backoff(const BackoffRecord& record, TimePoint now) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  if (record.failures == 0 || !record.last_failure) return milliseconds(0);
  milliseconds backoff = kPodFailureBackoff;
  for (int64_t i = 1; i < record.failures && backoff < kMaxPodFailureBackoff; ++i) backoff *= 2;
  backoff = std::min<milliseconds>(backoff, kMaxPodFailureBackoff);
  milliseconds elapsed = duration_cast<milliseconds>(now - *record.last_failure);
  return elapsed > backoff ? milliseconds(0) : backoff - elapsed;
}

// --- Conditions --------------------------------------------------------------

const json* find_condition(const json& job, std::string_view type) {
  for (const json& c : array_field(object_field(job, "status"), "conditions"))
    if (c.is_object() && c.value("type", "") == type) return &c;
  return nullptr;
}

bool condition_true(const json& job, std::string_view type) {
  const json* c = find_condition(job, type);
  return c != nullptr && c->value("status", "") == "True";
}

bool job_finished(const json& job) {
  return condition_true(job, "Complete") || condition_true(job, "Failed");
}

json new_condition(std::string_view type, std::string_view status, std::string_view reason,
                   std::string_view message, TimePoint now) {
  json c = {{"type", type},
            {"status", status},
            {"lastProbeTime", rfc3339(now)},
            {"lastTransitionTime", rfc3339(now)}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  return c;
}

bool ensure_condition(json& conditions, std::string_view type, std::string_view status,
                      std::string_view reason, std::string_view message, TimePoint now) {
  if (!conditions.is_array()) conditions = json::array();
  for (json& c : conditions) {
    if (!c.is_object() || c.value("type", "") != type) continue;
    if (c.value("status", "") == status && c.value("reason", "") == reason &&
        c.value("message", "") == message)
      return false;
    c = new_condition(type, status, reason, message, now);
    return true;
  }
  if (status == "False") return false;
  conditions.push_back(new_condition(type, status, reason, message, now));
  return true;
}

}  // namespace vkube::controllers::job
