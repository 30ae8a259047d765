// Validation of Jobs and CronJobs (pkg/apis/batch/validation).
#include <string>

#include "cron.h"
#include "kind_util.h"
#include "pod_spec.h"
#include "validation_kinds.h"

namespace vkube::apiserver::builtin {

namespace {

using namespace util;

const json kEmpty = json::object();

// validateJobSpec: counts, completion mode, template and its restart policy.
// `path` is "spec" for a Job and "spec.jobTemplate.spec" for a CronJob.
void validate_job_spec(const json& spec, const std::string& path, FieldErrors& errs) {
  if (!spec.is_object()) return invalid(errs, path, spec, "must be of type object");
  for (const char* f : {"parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                        "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes"}) {
    nonnegative(errs, spec, f, path);
  }
  std::string mode = get_string(spec, "completionMode");
  if (!mode.empty() && mode != "NonIndexed" && mode != "Indexed") {
    not_supported(errs, child(path, "completionMode"), mode, {"NonIndexed", "Indexed"});
  }
  if (mode == "Indexed" && get(spec, "completions") == nullptr) {
    required(errs, child(path, "completions"), "when completion mode is Indexed");
  }
  std::string replacement = get_string(spec, "podReplacementPolicy");
  if (!replacement.empty() && replacement != "TerminatingOrFailed" && replacement != "Failed") {
    not_supported(errs, child(path, "podReplacementPolicy"), replacement,
                  {"Failed", "TerminatingOrFailed"});
  }
  const json* tmpl = get(spec, "template");
  std::string tp = child(path, "template");
  validate_pod_template(tmpl ? tmpl : &kEmpty, tp, errs);
  const json* tspec = tmpl ? get_object(*tmpl, "spec") : nullptr;
  std::string policy = tspec ? get_string(*tspec, "restartPolicy") : "";
  std::string rp = child(tp, "spec.restartPolicy");
  if (policy.empty() || policy == "Always") {
    required(errs, rp, "valid values: \"OnFailure\", \"Never\"");
  } else if (policy != "OnFailure" && policy != "Never") {
    not_supported(errs, rp, policy, {"OnFailure", "Never"});
  } else if (get(spec, "podFailurePolicy") != nullptr && policy != "Never") {
    invalid(errs, rp, policy, "only \"Never\" is supported when podFailurePolicy is specified");
  }
}

const json* template_labels(const json& spec) {
  const json* tmpl = get_object(spec, "template");
  const json* meta = tmpl ? get_object(*tmpl, "metadata") : nullptr;
  return meta ? get(*meta, "labels") : nullptr;
}

// The generated selector and labels still name this Job's uid.
void validate_generated_selector(const json& obj, const json& spec, FieldErrors& errs) {
  const json* meta = get_object(obj, "metadata");
  std::string uid = meta ? get_string(*meta, "uid") : "";
  const json* labels = template_labels(spec);
  if (uid.empty() || labels == nullptr || !labels->is_object()) return;
  for (const char* k : {"controller-uid", "batch.kubernetes.io/controller-uid"}) {
    if (get_string(*labels, k) != uid) {
      invalid(errs, key("spec.template.metadata.labels", k),
              labels->contains(k) ? (*labels)[k] : json(""), "must be '" + uid + "'");
    }
  }
  const json* selector = get_object(spec, "selector");
  const json* match = selector ? get_object(*selector, "matchLabels") : nullptr;
  if (selector != nullptr &&
      (match == nullptr || get_string(*match, "batch.kubernetes.io/controller-uid") != uid)) {
    invalid(errs, "spec.selector", *selector, "`selector` not auto-generated");
  }
}

// Scheduling directives of a suspended Job that never started may change.
json without_scheduling(const json& tmpl) {
  json out = tmpl;
  if (json* spec = get_object(out, "spec")) {
    for (const char* k : {"nodeSelector", "affinity", "tolerations", "schedulingGates"}) {
      spec->erase(k);
    }
  }
  if (json* meta = get_object(out, "metadata")) {
    meta->erase("labels");
    meta->erase("annotations");
  }
  return out;
}

void validate_job_update(const json& spec, const json& old_job, FieldErrors& errs) {
  const json* old_spec_ptr = get_object(old_job, "spec");
  const json& old_spec = old_spec_ptr ? *old_spec_ptr : kEmpty;
  for (const char* k : {"selector", "completionMode", "podFailurePolicy", "backoffLimitPerIndex",
                        "managedBy", "successPolicy"}) {
    immutable(errs, child("spec", k), get(spec, k), get(old_spec, k));
  }
  // Elastic indexed Jobs scale completions together with parallelism.
  bool elastic = get_string(spec, "completionMode") == "Indexed" &&
                 get_int(spec, "completions") == get_int(spec, "parallelism") &&
                 get_int(old_spec, "completions") == get_int(old_spec, "parallelism");
  if (!elastic)
    immutable(errs, "spec.completions", get(spec, "completions"), get(old_spec, "completions"));
  const json* tmpl = get(spec, "template");
  const json* old_tmpl = get(old_spec, "template");
  const json* status = get_object(old_job, "status");
  bool not_started = status == nullptr || get(*status, "startTime") == nullptr;
  if (get_bool(old_spec, "suspend") && not_started && tmpl && old_tmpl) {
    if (without_scheduling(*tmpl) != without_scheduling(*old_tmpl)) {
      invalid(errs, "spec.template", *tmpl, "field is immutable");
    }
  } else {
    immutable(errs, "spec.template", tmpl, old_tmpl);
  }
}

}  // namespace

void validate_job(const json& obj, const json* old, FieldErrors& errs) {
  const json* spec_ptr = get(obj, "spec");
  const json& spec = spec_ptr ? *spec_ptr : kEmpty;
  validate_job_spec(spec, "spec", errs);
  if (!spec.is_object()) return;
  const json* selector = get(spec, "selector");
  if (selector == nullptr) {
    required(errs, "spec.selector");
  } else {
    size_t before = errs.size();
    validate_label_selector(errs, *selector, "spec.selector");
    const json* labels = template_labels(spec);
    if (errs.size() == before && !selector_matches(*selector, labels ? *labels : json(nullptr))) {
      invalid(errs, "spec.template.metadata.labels", labels ? *labels : json(nullptr),
              "`selector` does not match template `labels`");
    }
  }
  if (!get_bool(spec, "manualSelector")) validate_generated_selector(obj, spec, errs);
  if (old != nullptr) validate_job_update(spec, *old, errs);
}

void validate_cron_job(const json& obj, const json* old, FieldErrors& errs) {
  const json* meta = get_object(obj, "metadata");
  std::string name = meta ? get_string(*meta, "name") : "";
  if (old == nullptr && name.size() > 52) {
    invalid(errs, "metadata.name", name, "must be no more than 52 characters");
  }
  const json* spec_ptr = get_object(obj, "spec");
  const json& spec = spec_ptr ? *spec_ptr : kEmpty;
  check_string(errs, spec, "schedule", "spec");
  std::string schedule = get_string(spec, "schedule");
  if (schedule.empty()) {
    required(errs, "spec.schedule");
  } else {
    if (auto err = cron_schedule_error(schedule)) invalid(errs, "spec.schedule", schedule, *err);
    const json* old_spec = old ? get_object(*old, "spec") : nullptr;
    bool had_tz = old_spec && get_string(*old_spec, "schedule").find("TZ") != std::string::npos;
    if (schedule.find("TZ") != std::string::npos) {
      if (get(spec, "timeZone") != nullptr) {
        invalid(errs, "spec.schedule", schedule,
                "cannot use both timeZone field and TZ or CRON_TZ in schedule");
      } else if (!had_tz) {
        invalid(errs, "spec.schedule", schedule,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
      }
    }
  }
  if (const json* tz = get(spec, "timeZone")) {
    std::string zone = tz->is_string() ? tz->get<std::string>() : "";
    if (zone.empty()) {
      invalid(errs, "spec.timeZone", *tz, "timeZone must be nil or non-empty string");
    } else if (zone == "Local" || zone == "local" ||
               zone.find_first_of(" \t:") != std::string::npos) {
      invalid(errs, "spec.timeZone", zone,
              "timeZone must be an explicit time zone as defined in "
              "https://www.iana.org/time-zones");
    }
  }
  std::string policy = get_string(spec, "concurrencyPolicy");
  if (policy.empty()) {
    required(errs, "spec.concurrencyPolicy");
  } else if (policy != "Allow" && policy != "Forbid" && policy != "Replace") {
    not_supported(errs, "spec.concurrencyPolicy", policy, {"Allow", "Forbid", "Replace"});
  }
  for (const char* f :
       {"startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"}) {
    nonnegative(errs, spec, f, "spec");
  }
  const json* job_template = get_object(spec, "jobTemplate");
  const json* job_spec = job_template ? get(*job_template, "spec") : nullptr;
  validate_job_spec(job_spec ? *job_spec : kEmpty, "spec.jobTemplate.spec", errs);
  if (job_spec == nullptr || !job_spec->is_object()) return;
  if (const json* selector = get(*job_spec, "selector")) {
    invalid(errs, "spec.jobTemplate.spec.selector", *selector, "`selector` will be auto-generated");
  }
  if (get_bool(*job_spec, "manualSelector")) {
    not_supported(errs, "spec.jobTemplate.spec.manualSelector", true, {"nil", "false"});
  }
}

}  // namespace vkube::apiserver::builtin
