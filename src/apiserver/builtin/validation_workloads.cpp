// Validation of the pod controllers: pkg/apis/apps/validation and the
// ReplicationController part of pkg/apis/core/validation.
#include <string>

#include "kind_util.h"
#include "pod_spec.h"
#include "validation_kinds.h"

namespace vkube::apiserver::builtin {

namespace {

using namespace util;

const json kEmpty = json::object();

const json& spec_of(const json& obj) {
  const json* spec = get_object(obj, "spec");
  return spec ? *spec : kEmpty;
}

const json* template_labels(const json& spec) {
  const json* tmpl = get_object(spec, "template");
  const json* meta = tmpl ? get_object(*tmpl, "metadata") : nullptr;
  return meta ? get(*meta, "labels") : nullptr;
}

// Selector and template of an apps/v1 controller: selector required, not
// empty, matching the template's labels; the template restarts Always.
// `kind` words the messages ("deployment", "ReplicaSet", ...).
void validate_selector_template(const json& spec, const char* empty_kind, const char* deadline_kind,
                                FieldErrors& errs) {
  const json* selector = get(spec, "selector");
  if (selector == nullptr) {
    required(errs, "spec.selector");
  } else {
    size_t before = errs.size();
    validate_label_selector(errs, *selector, "spec.selector");
    if (errs.size() == before) {
      if (selector_empty(*selector)) {
        invalid(errs, "spec.selector", *selector,
                std::string("empty selector is invalid for ") + empty_kind);
      } else {
        const json* labels = template_labels(spec);
        if (!selector_matches(*selector, labels ? *labels : json(nullptr))) {
          invalid(errs, "spec.template.metadata.labels", labels ? *labels : json(nullptr),
                  "`selector` does not match template `labels`");
        }
      }
    }
  }
  const json* tmpl = get(spec, "template");
  validate_pod_template(tmpl ? tmpl : &kEmpty, "spec.template", errs);
  const json* tspec = tmpl ? get_object(*tmpl, "spec") : nullptr;
  if (tspec == nullptr) return;
  std::string policy = get_string(*tspec, "restartPolicy");
  if (!policy.empty() && policy != "Always") {
    not_supported(errs, "spec.template.spec.restartPolicy", policy, {"Always"});
  }
  if (get(*tspec, "activeDeadlineSeconds") != nullptr) {
    invalid(errs, "spec.template.spec.activeDeadlineSeconds", (*tspec)["activeDeadlineSeconds"],
            std::string("activeDeadlineSeconds in ") + deadline_kind + " is not Supported");
  }
}

void validate_counts(const json& spec, FieldErrors& errs,
                     std::initializer_list<const char*> fields) {
  for (const char* f : fields) nonnegative(errs, spec, f, "spec");
}

// The rolling-update parameters shared by Deployments and DaemonSets.
void validate_rolling(const json& rolling, const std::string& path, FieldErrors& errs) {
  const json* unavailable = get(rolling, "maxUnavailable");
  const json* surge = get(rolling, "maxSurge");
  if (unavailable) int_or_percent(errs, *unavailable, child(path, "maxUnavailable"));
  if (surge) int_or_percent(errs, *surge, child(path, "maxSurge"));
  auto is_zero = [](const json* v) {
    if (v == nullptr) return true;
    if (v->is_number()) return v->get<double>() == 0;
    if (v->is_string()) {
      std::string s = v->get<std::string>();
      return s == "0%" || s == "0";
    }
    return false;
  };
  if (is_zero(unavailable) && is_zero(surge)) {
    invalid(errs, child(path, "maxUnavailable"), unavailable ? *unavailable : json(0),
            "may not be 0 when `maxSurge` is 0");
  }
  if (unavailable && unavailable->is_string()) {
    std::string s = unavailable->get<std::string>();
    if (s.size() > 1 && s.back() == '%' && s.size() < 12 &&
        s.find_first_not_of("0123456789") == s.size() - 1 && std::stoll(s) > 100) {
      invalid(errs, child(path, "maxUnavailable"), *unavailable, "must not be greater than 100%");
    }
  }
}

void selector_immutable(const json& obj, const json* old, FieldErrors& errs) {
  if (old == nullptr) return;
  immutable(errs, "spec.selector", get(spec_of(obj), "selector"), get(spec_of(*old), "selector"));
}

}  // namespace

void validate_deployment(const json& obj, const json* old, FieldErrors& errs) {
  const json& spec = spec_of(obj);
  validate_counts(
      spec, errs,
      {"replicas", "minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"});
  validate_selector_template(spec, "deployment", "ReplicaSet", errs);
  if (const json* strategy = get_object(spec, "strategy")) {
    std::string type = get_string(*strategy, "type");
    const json* rolling = get(*strategy, "rollingUpdate");
    if (type == "Recreate") {
      if (rolling) {
        forbidden(errs, "spec.strategy.rollingUpdate",
                  "may not be specified when strategy `type` is 'Recreate'");
      }
    } else if (type == "RollingUpdate") {
      if (rolling == nullptr) {
        required(errs, "spec.strategy.rollingUpdate", "this should be defaulted and never be nil");
      } else {
        validate_rolling(*rolling, "spec.strategy.rollingUpdate", errs);
      }
    } else {
      not_supported(errs, "spec.strategy", type, {"Recreate", "RollingUpdate"});
    }
  }
  std::optional<int64_t> deadline = get_int(spec, "progressDeadlineSeconds");
  if (deadline && *deadline <= get_int(spec, "minReadySeconds").value_or(0)) {
    invalid(errs, "spec.progressDeadlineSeconds", *deadline,
            "must be greater than minReadySeconds");
  }
  selector_immutable(obj, old, errs);
}

void validate_replica_set(const json& obj, const json* old, FieldErrors& errs) {
  const json& spec = spec_of(obj);
  validate_counts(spec, errs, {"replicas", "minReadySeconds"});
  validate_selector_template(spec, "deployment", "ReplicaSet", errs);
  selector_immutable(obj, old, errs);
}

void validate_daemon_set(const json& obj, const json* old, FieldErrors& errs) {
  const json& spec = spec_of(obj);
  validate_counts(spec, errs, {"minReadySeconds", "revisionHistoryLimit"});
  validate_selector_template(spec, "daemonset", "DaemonSet", errs);
  if (const json* strategy = get_object(spec, "updateStrategy")) {
    std::string type = get_string(*strategy, "type");
    if (type == "RollingUpdate") {
      if (const json* rolling = get_object(*strategy, "rollingUpdate")) {
        validate_rolling(*rolling, "spec.updateStrategy.rollingUpdate", errs);
      } else {
        required(errs, "spec.updateStrategy.rollingUpdate");
      }
    } else if (type.empty()) {
      required(errs, "spec.updateStrategy.type");
    } else if (type != "OnDelete") {
      not_supported(errs, "spec.updateStrategy.type", type, {"OnDelete", "RollingUpdate"});
    }
  }
  selector_immutable(obj, old, errs);
}

void validate_stateful_set(const json& obj, const json* old, FieldErrors& errs) {
  const json& spec = spec_of(obj);
  validate_counts(spec, errs, {"replicas", "minReadySeconds", "revisionHistoryLimit"});
  // Containers may mount each volumeClaimTemplate by name, as kube's
  // validation sees the claims as the template's volumes.
  json with_claims = spec;
  if (spec.contains("volumeClaimTemplates") && spec["volumeClaimTemplates"].is_array() &&
      with_claims.contains("template") && with_claims["template"].is_object()) {
    json& pod_spec = with_claims["template"]["spec"];
    if (pod_spec.is_object()) {
      if (!pod_spec.contains("volumes") || !pod_spec["volumes"].is_array())
        pod_spec["volumes"] = json::array();
      for (const json& claim : spec["volumeClaimTemplates"]) {
        std::string name = claim.is_object() && claim.contains("metadata") && claim["metadata"].is_object()
                               ? claim["metadata"].value("name", "")
                               : "";
        if (name.empty()) continue;
        bool present = false;
        for (const json& v : pod_spec["volumes"]) present |= v.is_object() && v.value("name", "") == name;
        if (!present)
          pod_spec["volumes"].push_back({{"name", name}, {"persistentVolumeClaim", {{"claimName", name}}}});
      }
    }
  }
  validate_selector_template(with_claims, "statefulset", "StatefulSet", errs);
  std::string policy = get_string(spec, "podManagementPolicy");
  if (!policy.empty() && policy != "OrderedReady" && policy != "Parallel") {
    not_supported(errs, "spec.podManagementPolicy", policy, {"OrderedReady", "Parallel"});
  }
  if (const json* strategy = get_object(spec, "updateStrategy")) {
    std::string type = get_string(*strategy, "type");
    const json* rolling = get(*strategy, "rollingUpdate");
    if (type.empty()) {
      required(errs, "spec.updateStrategy");
    } else if (type == "OnDelete") {
      if (rolling) {
        invalid(errs, "spec.updateStrategy.rollingUpdate", *rolling,
                "only allowed for updateStrategy 'RollingUpdate'");
      }
    } else if (type == "RollingUpdate") {
      if (rolling) nonnegative(errs, *rolling, "partition", "spec.updateStrategy.rollingUpdate");
    } else {
      not_supported(errs, "spec.updateStrategy", type, {"OnDelete", "RollingUpdate"});
    }
  }
  if (old == nullptr) return;
  json now = spec;
  const json& before = spec_of(*old);
  for (const char* k : {"replicas", "template", "updateStrategy", "minReadySeconds", "ordinals",
                        "revisionHistoryLimit", "persistentVolumeClaimRetentionPolicy"}) {
    if (before.contains(k)) {
      now[k] = before[k];
    } else {
      now.erase(k);
    }
  }
  if (now != before) {
    forbidden(errs, "spec",
              "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
              "'template', 'updateStrategy', 'revisionHistoryLimit', "
              "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden");
  }
}

void validate_replication_controller(const json& obj, const json*, FieldErrors& errs) {
  const json& spec = spec_of(obj);
  validate_counts(spec, errs, {"replicas", "minReadySeconds"});
  const json* selector = get(spec, "selector");
  if (selector == nullptr || (selector->is_object() && selector->empty())) {
    required(errs, "spec.selector");
  } else if (!selector->is_object()) {
    invalid(errs, "spec.selector", *selector, "must be of type object");
  } else {
    validate_labels(*selector, "spec.selector", errs);
  }
  const json* tmpl = get(spec, "template");
  validate_pod_template(tmpl, "spec.template", errs);
  if (tmpl == nullptr || !tmpl->is_object()) return;
  if (selector != nullptr && selector->is_object() && !selector->empty()) {
    const json* labels = template_labels(spec);
    bool match = true;
    for (const auto& [k, v] : selector->items()) {
      match &= labels != nullptr && labels->is_object() && labels->contains(k) && (*labels)[k] == v;
    }
    if (!match) {
      invalid(errs, "spec.template.metadata.labels", labels ? *labels : json(nullptr),
              "`selector` does not match template `labels`");
    }
  }
  if (const json* tspec = get_object(*tmpl, "spec")) {
    std::string policy = get_string(*tspec, "restartPolicy");
    if (!policy.empty() && policy != "Always") {
      not_supported(errs, "spec.template.spec.restartPolicy", policy, {"Always"});
    }
    if (get(*tspec, "activeDeadlineSeconds") != nullptr) {
      forbidden(errs, "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in ReplicationController is not Supported");
    }
  }
}

}  // namespace vkube::apiserver::builtin
