// Defaulting of the workload kinds (apps/v1 and batch/v1 SetDefaults_*), and
// the selector the Job registry generates on create.
#include "defaults_kinds.h"
#include "kind_util.h"
#include "pod_spec.h"

namespace vkube::apiserver::builtin {

namespace {

using namespace util;

json* spec_of(json& obj) {
  return ensure_object(obj, "spec");
}

// The rolling-update parameters of a Deployment/DaemonSet strategy field.
void default_rolling(json& spec, const char* strategy_key, const json& max_unavailable,
                     const json& max_surge) {
  json* strategy = ensure_object(spec, strategy_key);
  if (strategy == nullptr) return;
  set_default(*strategy, "type", "RollingUpdate");
  if (get_string(*strategy, "type") != "RollingUpdate") return;
  json* rolling = ensure_object(*strategy, "rollingUpdate");
  if (rolling == nullptr) return;
  set_default(*rolling, "maxUnavailable", max_unavailable);
  set_default(*rolling, "maxSurge", max_surge);
}

// generateSelector (pkg/registry/batch/job): pods of a Job carry its name and
// uid, and the selector picks them by uid.
void generate_job_selector(json& job, json& spec) {
  const json* meta = get_object(job, "metadata");
  std::string name = meta ? get_string(*meta, "name") : "";
  std::string uid = meta ? get_string(*meta, "uid") : "";
  json* tmpl = ensure_object(spec, "template");
  if (tmpl == nullptr) return;
  json* tmeta = ensure_object(*tmpl, "metadata");
  if (tmeta == nullptr) return;
  json* labels = ensure_object(*tmeta, "labels");
  if (labels == nullptr) return;
  for (const char* k : {"job-name", "batch.kubernetes.io/job-name"}) {
    if (!labels->contains(k)) (*labels)[k] = name;
  }
  for (const char* k : {"controller-uid", "batch.kubernetes.io/controller-uid"}) {
    if (!labels->contains(k)) (*labels)[k] = uid;
  }
  json* selector = ensure_object(spec, "selector");
  if (selector == nullptr) return;
  json* match = ensure_object(*selector, "matchLabels");
  if (match == nullptr) return;
  if (!match->contains("batch.kubernetes.io/controller-uid")) {
    (*match)["batch.kubernetes.io/controller-uid"] = uid;
  }
}

// Labels of the template, copied to the object when it has none (RC, Job).
void labels_from_template(json& obj, const json& spec) {
  const json* tmpl = get_object(spec, "template");
  const json* tmeta = tmpl ? get_object(*tmpl, "metadata") : nullptr;
  const json* labels = tmeta ? get_object(*tmeta, "labels") : nullptr;
  if (labels == nullptr) return;
  json* meta = ensure_object(obj, "metadata");
  if (meta == nullptr) return;
  const json* current = get(*meta, "labels");
  if (current == nullptr || (current->is_object() && current->empty())) (*meta)["labels"] = *labels;
}

}  // namespace

void default_deployment(json& obj) {
  json* spec = spec_of(obj);
  if (spec == nullptr) return;
  set_default(*spec, "replicas", 1);
  default_rolling(*spec, "strategy", "25%", "25%");
  set_default(*spec, "revisionHistoryLimit", 10);
  set_default(*spec, "progressDeadlineSeconds", 600);
  default_pod_template(*spec, "template");
}

void default_replica_set(json& obj) {
  json* spec = spec_of(obj);
  if (spec == nullptr) return;
  set_default(*spec, "replicas", 1);
  default_pod_template(*spec, "template");
}

void default_replication_controller(json& obj) {
  json* spec = spec_of(obj);
  if (spec == nullptr) return;
  const json* tmpl = get_object(*spec, "template");
  const json* tmeta = tmpl ? get_object(*tmpl, "metadata") : nullptr;
  if (const json* labels = tmeta ? get_object(*tmeta, "labels") : nullptr) {
    const json* selector = get(*spec, "selector");
    if (selector == nullptr || (selector->is_object() && selector->empty())) {
      (*spec)["selector"] = *labels;
    }
    labels_from_template(obj, *spec);
  }
  set_default(*spec, "replicas", 1);
  default_pod_template(*spec, "template", false);
}

void default_stateful_set(json& obj) {
  json* spec = spec_of(obj);
  if (spec == nullptr) return;
  set_default(*spec, "podManagementPolicy", "OrderedReady");
  if (json* strategy = ensure_object(*spec, "updateStrategy")) {
    if (absent(*strategy, "type")) {
      (*strategy)["type"] = "RollingUpdate";
      ensure_object(*strategy, "rollingUpdate");
    }
    json* rolling = get_object(*strategy, "rollingUpdate");
    if (get_string(*strategy, "type") == "RollingUpdate" && rolling != nullptr) {
      set_default(*rolling, "partition", 0);
    }
  }
  if (json* retention = ensure_object(*spec, "persistentVolumeClaimRetentionPolicy")) {
    set_default(*retention, "whenDeleted", "Retain");
    set_default(*retention, "whenScaled", "Retain");
  }
  set_default(*spec, "replicas", 1);
  set_default(*spec, "revisionHistoryLimit", 10);
  default_pod_template(*spec, "template");
  if (json* claims = get_array(*spec, "volumeClaimTemplates")) {
    for (json& claim : *claims) {
      if (json* claim_spec = get_object(claim, "spec")) default_pvc_spec(*claim_spec);
      if (json* status = ensure_object(claim, "status")) set_default(*status, "phase", "Pending");
    }
  }
}

void default_daemon_set(json& obj) {
  json* spec = spec_of(obj);
  if (spec == nullptr) return;
  default_rolling(*spec, "updateStrategy", 1, 0);
  set_default(*spec, "revisionHistoryLimit", 10);
  default_pod_template(*spec, "template");
}

void default_job(json& obj) {
  json* spec = spec_of(obj);
  if (spec == nullptr) return;
  if (absent(*spec, "completions") && absent(*spec, "parallelism")) {
    (*spec)["completions"] = 1;
    (*spec)["parallelism"] = 1;
  }
  set_default(*spec, "parallelism", 1);
  set_default(*spec, "backoffLimit", absent(*spec, "backoffLimitPerIndex") ? 6 : 2147483647);
  set_default(*spec, "completionMode", "NonIndexed");
  set_default(*spec, "suspend", false);
  set_default(*spec, "podReplacementPolicy",
              absent(*spec, "podFailurePolicy") ? "TerminatingOrFailed" : "Failed");
  if (json* policy = get_object(*spec, "podFailurePolicy")) {
    if (json* rules = get_array(*policy, "rules")) {
      for (json& rule : *rules) {
        json* patterns = get_array(rule, "onPodConditions");
        if (patterns == nullptr) continue;
        for (json& p : *patterns) set_default(p, "status", "True");
      }
    }
  }
  const json* manual = get(*spec, "manualSelector");
  if (manual == nullptr || (manual->is_boolean() && !manual->get<bool>())) {
    generate_job_selector(obj, *spec);
  }
  labels_from_template(obj, *spec);
  default_pod_template(*spec, "template");
}

void default_cron_job(json& obj) {
  json* spec = spec_of(obj);
  if (spec == nullptr) return;
  set_default(*spec, "concurrencyPolicy", "Allow");
  set_default(*spec, "suspend", false);
  set_default(*spec, "successfulJobsHistoryLimit", 3);
  set_default(*spec, "failedJobsHistoryLimit", 1);
  json* job_template = ensure_object(*spec, "jobTemplate");
  json* job_spec = job_template ? ensure_object(*job_template, "spec") : nullptr;
  if (job_spec != nullptr) default_pod_template(*job_spec, "template");
}

}  // namespace vkube::apiserver::builtin
