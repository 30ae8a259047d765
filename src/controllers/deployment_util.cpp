#include "deployment_util.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

namespace vkube::controllers::deploy {

const json& section(const json& obj, std::string_view key) {
  static const json empty = json::object();
  if (!obj.is_object()) return empty;
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty;
}

int64_t int_at(const json& obj, std::string_view key, int64_t fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

int64_t spec_replicas(const json& obj) {
  return int_at(section(obj, "spec"), "replicas", 1);
}

int64_t status_count(const json& obj, std::string_view field) {
  return int_at(section(obj, "status"), field, 0);
}

std::string annotation(const json& obj, std::string_view key) {
  const json& a = section(section(obj, "metadata"), "annotations");
  auto it = a.find(key);
  return it != a.end() && it->is_string() ? it->get<std::string>() : std::string();
}

namespace {

std::optional<int64_t> parse_int(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0') return std::nullopt;
  return v;
}

// Where a walk of a pod template stands: the hash label is ignored only in
// the template's own metadata.labels.
enum class Level { kTemplate, kTemplateMeta, kTemplateLabels, kOther };

Level child_level(Level at, std::string_view key) {
  if (at == Level::kTemplate && key == "metadata") return Level::kTemplateMeta;
  if (at == Level::kTemplateMeta && key == "labels") return Level::kTemplateLabels;
  return Level::kOther;
}

bool ignored_key(Level at, std::string_view key) {
  return at == Level::kTemplateLabels && key == kHashLabel;
}

bool droppable(Level at, std::string_view key, const json& v);

// An object whose every entry Kubernetes' semantic equality ignores.
bool empty_after_drops(Level at, const json& obj) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!ignored_key(at, it.key()) && !droppable(child_level(at, it.key()), it.key(), it.value()))
      return false;
  return true;
}

// What semantic equality ignores: nulls (a nil pointer or map), empty lists,
// and metadata maps that are empty once their own ignored entries are gone.
bool droppable(Level at, std::string_view key, const json& v) {
  if (v.is_null() || (v.is_array() && v.empty())) return true;
  return v.is_object() && (key == "labels" || key == "annotations" || key == "metadata") &&
         empty_after_drops(at, v);
}

// Semantic equality of two JSON values, walked in place: the controller
// compares its template with every ReplicaSet's on each sync, so nothing is
// copied (the copies cost more than the comparison with hundreds of them).
bool semantic_equal(Level at, const json& a, const json& b) {
  if (a.is_object() && b.is_object()) {
    size_t kept_a = 0, kept_b = 0;
    for (auto it = a.begin(); it != a.end(); ++it) {
      Level child = child_level(at, it.key());
      if (ignored_key(at, it.key()) || droppable(child, it.key(), it.value())) continue;
      ++kept_a;
      auto other = b.find(it.key());
      if (other == b.end() || !semantic_equal(child, it.value(), *other)) return false;
    }
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!ignored_key(at, it.key()) && !droppable(child_level(at, it.key()), it.key(), it.value()))
        ++kept_b;
    return kept_a == kept_b;
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!semantic_equal(Level::kOther, a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

}  // namespace

int64_t revision_of(const json& rs) {
  return parse_int(annotation(rs, kRevisionAnnotation)).value_or(0);
}

bool equal_ignore_hash(const json& a, const json& b) {
  return semantic_equal(Level::kTemplate, a, b);
}

Result<int64_t> scaled_value(const json& v, int64_t total, bool round_up) {
  if (v.is_null()) return int64_t{0};
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!v.is_string()) return Status::invalid("invalid value for IntOrString: invalid type");
  std::string s = v.get<std::string>();
  if (s.empty() || s.back() != '%')
    return Status::invalid(
        "invalid value for IntOrString: invalid type: string is not a percentage");
  auto pct = parse_int(s.substr(0, s.size() - 1));
  if (!pct) return Status::invalid("invalid value \"" + s + "\": not a percentage");
  double value = static_cast<double>(*pct) * static_cast<double>(total) / 100.0;
  return static_cast<int64_t>(round_up ? std::ceil(value) : std::floor(value));
}

bool is_rolling(const json& d) {
  return section(section(d, "spec"), "strategy").value("type", "RollingUpdate") == "RollingUpdate";
}

namespace {

// kube's ResolveFenceposts.
std::pair<int64_t, int64_t> fenceposts(const json& d) {
  const json& ru = section(section(section(d, "spec"), "strategy"), "rollingUpdate");
  int64_t desired = spec_replicas(d);
  auto surge = scaled_value(ru.value("maxSurge", json()), desired, true);
  auto unavailable = scaled_value(ru.value("maxUnavailable", json()), desired, false);
  int64_t s = surge.is_ok() ? *surge : 0;
  int64_t u = unavailable.is_ok() ? *unavailable : 0;
  if (s == 0 && u == 0) u = 1;
  return {s, u};
}

}  // namespace

int64_t max_surge(const json& d) {
  return is_rolling(d) ? fenceposts(d).first : 0;
}

int64_t max_unavailable(const json& d) {
  int64_t desired = spec_replicas(d);
  if (!is_rolling(d) || desired == 0) return 0;
  return std::min(fenceposts(d).second, desired);
}

bool has_progress_deadline(const json& d) {
  const json& spec = section(d, "spec");
  auto it = spec.find("progressDeadlineSeconds");
  return it != spec.end() && it->is_number_integer() &&
         it->get<int64_t>() != std::numeric_limits<int32_t>::max();
}

std::optional<int64_t> int_annotation(const json& rs, std::string_view key) {
  return parse_int(annotation(rs, key));
}

bool replicas_annotations_need_update(const json& rs, int64_t desired, int64_t max) {
  return annotation(rs, kDesiredReplicasAnnotation) != std::to_string(desired) ||
         annotation(rs, kMaxReplicasAnnotation) != std::to_string(max);
}

bool set_replicas_annotations(json& rs, int64_t desired, int64_t max) {
  if (!replicas_annotations_need_update(rs, desired, max)) return false;
  json& a = rs["metadata"]["annotations"];
  if (!a.is_object()) a = json::object();
  a[kDesiredReplicasAnnotation] = std::to_string(desired);
  a[kMaxReplicasAnnotation] = std::to_string(max);
  return true;
}

namespace {

// Annotations that stay the deployment's (kube's skipCopyAnnotation).
bool skip_copy(const std::string& key) {
  return key == "kubectl.kubernetes.io/last-applied-configuration" || key == kRevisionAnnotation ||
         key == kRevisionHistoryAnnotation || key == kDesiredReplicasAnnotation ||
         key == kMaxReplicasAnnotation || key == "deprecated.deployment.rollback.to";
}

constexpr size_t kMaxRevisionHistoryChars = 2000;

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

bool set_new_rs_annotations(const json& d, json& rs, const std::string& new_revision, bool exists) {
  json& a = rs["metadata"]["annotations"];
  if (!a.is_object()) a = json::object();
  bool changed = false;
  const json& da = section(section(d, "metadata"), "annotations");
  for (auto it = da.begin(); it != da.end(); ++it) {
    if (skip_copy(it.key()) || (a.contains(it.key()) && a[it.key()] == it.value())) continue;
    a[it.key()] = it.value();
    changed = true;
  }
  std::string old_revision = a.value(kRevisionAnnotation, "");
  bool had_revision = a.contains(kRevisionAnnotation);
  auto old_int = parse_int(old_revision);
  if (!old_int && !old_revision.empty()) return changed;  // kube leaves a malformed one
  int64_t old_rev = old_int.value_or(0);
  int64_t new_rev = parse_int(new_revision).value_or(0);
  if (old_rev < new_rev) {
    a[kRevisionAnnotation] = new_revision;
    changed = true;
    // Being new again (a rollback): the revisions it had stay in its history.
    if (had_revision) {
      std::string history = a.value(kRevisionHistoryAnnotation, "");
      if (history.empty()) {
        a[kRevisionHistoryAnnotation] = old_revision;
      } else {
        std::vector<std::string> revs = split_commas(history);
        size_t total = history.size() + old_revision.size() + 1;
        size_t start = 0;
        while (total > kMaxRevisionHistoryChars && start < revs.size())
          total -= revs[start++].size() + 1;
        if (total <= kMaxRevisionHistoryChars) {
          std::string joined;
          for (size_t i = start; i < revs.size(); ++i) joined += revs[i] + ",";
          a[kRevisionHistoryAnnotation] = joined + old_revision;
        }
      }
    }
  }
  if (!exists && set_replicas_annotations(rs, spec_replicas(d), spec_replicas(d) + max_surge(d)))
    changed = true;
  return changed;
}

bool is_saturated(const json& d, const json& rs) {
  auto desired = int_annotation(rs, kDesiredReplicasAnnotation);
  int64_t want = spec_replicas(d);
  return desired && spec_replicas(rs) == want && *desired == want &&
         status_count(rs, "availableReplicas") == want;
}

json new_condition(std::string_view type, std::string_view status, std::string_view reason,
                   std::string_view message, TimePoint now) {
  std::string t = rfc3339(now);
  return {{"type", type},     {"status", status},  {"lastUpdateTime", t}, {"lastTransitionTime", t},
          {"reason", reason}, {"message", message}};
}

const json* get_condition(const json& status, std::string_view type) {
  if (!status.is_object()) return nullptr;
  auto cs = status.find("conditions");
  if (cs == status.end() || !cs->is_array()) return nullptr;
  for (const json& c : *cs)
    if (c.is_object() && c.value("type", "") == type) return &c;
  return nullptr;
}

void set_condition(json& status, json condition) {
  std::string type = condition.value("type", "");
  if (const json* cur = get_condition(status, type)) {
    if (cur->value("status", "") == condition.value("status", "") &&
        cur->value("reason", "") == condition.value("reason", ""))
      return;
    if (cur->value("status", "") == condition.value("status", ""))
      condition["lastTransitionTime"] = cur->value("lastTransitionTime", json());
  }
  remove_condition(status, type);
  status["conditions"].push_back(std::move(condition));
}

void remove_condition(json& status, std::string_view type) {
  if (!status.is_object() || !status.contains("conditions")) return;
  json& cs = status["conditions"];
  if (!cs.is_array()) {
    status.erase("conditions");
    return;
  }
  json kept = json::array();
  for (json& c : cs)
    if (!c.is_object() || c.value("type", "") != type) kept.push_back(std::move(c));
  if (kept.empty())
    status.erase("conditions");
  else
    cs = std::move(kept);
}

bool deployment_complete(const json& d, const json& status) {
  int64_t want = spec_replicas(d);
  return int_at(status, "updatedReplicas") == want && int_at(status, "replicas") == want &&
         int_at(status, "availableReplicas") == want &&
         int_at(status, "observedGeneration") >= int_at(section(d, "metadata"), "generation");
}

bool deployment_progressing(const json& d, const json& status) {
  const json& old = section(d, "status");
  int64_t old_old = int_at(old, "replicas") - int_at(old, "updatedReplicas");
  int64_t new_old = int_at(status, "replicas") - int_at(status, "updatedReplicas");
  return int_at(status, "updatedReplicas") > int_at(old, "updatedReplicas") || new_old < old_old ||
         int_at(status, "readyReplicas") > int_at(old, "readyReplicas") ||
         int_at(status, "availableReplicas") > int_at(old, "availableReplicas");
}

bool deployment_timed_out(const json& d, const json& status, TimePoint now) {
  if (!has_progress_deadline(d)) return false;
  const json* c = get_condition(status, "Progressing");
  if (c == nullptr) return false;
  std::string reason = c->value("reason", "");
  if (reason == kNewRSAvailableReason) return false;
  if (reason == kTimedOutReason) return true;
  auto from = parse_rfc3339(c->value("lastUpdateTime", ""));
  if (!from) return false;
  auto deadline = std::chrono::seconds(int_at(section(d, "spec"), "progressDeadlineSeconds"));
  return *from + deadline < now;
}

}  // namespace vkube::controllers::deploy
