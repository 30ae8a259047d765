// The Pod Security Standards as kube's pod-security-admission evaluates them:
// every check of the baseline and restricted levels, each at the policy
// version it changed in, with kube's forbidden reasons and details. Pure
// functions over the JSON pod: no I/O, so they are table-tested directly.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkube::apiserver::pod_security {

using json = nlohmann::json;

enum class Level { kPrivileged, kBaseline, kRestricted };

// The newest policy version whose checks differ from the one before; a later
// version (and "latest") evaluates as this one.
inline constexpr int kNewestMinor = 37;

// A level at a policy version: minor is the x of "v1.x", or nullopt for
// "latest".
struct LevelVersion {
  Level level = Level::kPrivileged;
  std::optional<int> minor;

  // "baseline:latest", "restricted:v1.25", as kube prints it.
  std::string str() const;
  bool operator==(const LevelVersion& o) const { return level == o.level && minor == o.minor; }
};

// One failed check: kube's ForbiddenReason and ForbiddenDetail.
struct Violation {
  std::string reason;
  std::string detail;
};

// The checks `pod_meta` and `pod_spec` fail at lv, in kube's order (baseline
// checks by ID, then restricted ones). Never throws: fields of the wrong type
// count as unset.
std::vector<Violation> evaluate(const LevelVersion& lv, const json& pod_meta, const json& pod_spec);

// "reason (detail), reason (detail)", as kube joins them in its messages.
std::string join(const std::vector<Violation>& v);

// The reasons only, "reason, reason" (kube's per-pod namespace warnings).
std::string reasons(const std::vector<Violation>& v);

// What a namespace asks for: one level and version per mode.
struct Policy {
  LevelVersion enforce, audit, warn;
};

// A label kube's PodSecurity refuses: the label key, its value and why.
struct LabelError {
  std::string label;
  std::string value;
  std::string message;
};

// The policy of a namespace with `labels` (its pod-security.kubernetes.io/*
// labels over `defaults`), as kube's PolicyToEvaluate reads them: a bad
// enforce level fails closed (restricted), a bad warn or audit level open
// (privileged), a bad version is latest; warn follows a stricter enforce
// label unless warn is set. Each bad label is appended to `errors`.
Policy policy_from_labels(const json& labels, const Policy& defaults,
                          std::vector<LabelError>* errors);

// The level named `s`, or nullopt.
std::optional<Level> parse_level(const std::string& s);
// "privileged", "baseline" or "restricted".
const char* level_name(Level l);

// What a pod must meet, in order, where a namespace's enforce policy is
// `label` and the operator's level is `ceiling` (which a label may tighten,
// never loosen): a looser label yields the ceiling at latest; a stricter or
// equal one itself, and the ceiling at latest too unless the label is exactly
// it (an old version of a level may admit what latest refuses).
std::vector<LevelVersion> enforced_levels(const LevelVersion& label, Level ceiling);

}  // namespace vkube::apiserver::pod_security
