// validate: the kind-specific part of kube-apiserver 1.32's validation for
// the built-in kinds. Objects arrive defaulted (apply_defaults), as in kube.
#include <algorithm>
#include <string>

#include "kind_util.h"
#include "kinds.h"
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

void validate_pod(const json& obj, const json* old, FieldErrors& errs) {
  const json* spec = get(obj, "spec");
  validate_pod_spec(spec ? *spec : kEmpty, "spec", errs);
  if (old != nullptr) validate_pod_update(obj, *old, errs);
}

void validate_pvc(const json& obj, FieldErrors& errs) {
  const json& spec = spec_of(obj);
  const json* modes = get_array(spec, "accessModes");
  if (modes == nullptr || modes->empty()) {
    required(errs, "spec.accessModes", "at least 1 access mode is required");
  }
  const json* resources = get_object(spec, "resources");
  const json* requests = resources ? get_object(*resources, "requests") : nullptr;
  bool has_source = get(spec, "dataSource") != nullptr || get(spec, "dataSourceRef") != nullptr;
  if (!has_source && (requests == nullptr || !requests->contains("storage"))) {
    required(errs, "spec.resources[storage]");
  }
  if (resources != nullptr) validate_resources(*resources, "spec.resources", errs);
  std::string mode = get_string(spec, "volumeMode");
  if (!mode.empty() && mode != "Block" && mode != "Filesystem") {
    not_supported(errs, "spec.volumeMode", mode, {"Block", "Filesystem"});
  }
}

void validate_hpa(const json& obj, FieldErrors& errs) {
  const json& spec = spec_of(obj);
  const json* ref = get_object(spec, "scaleTargetRef");
  for (const char* k : {"kind", "name"}) {
    if (ref == nullptr || get_string(*ref, k).empty())
      required(errs, child("spec.scaleTargetRef", k));
  }
  std::optional<int64_t> min = get_int(spec, "minReplicas");
  int64_t max = get_int(spec, "maxReplicas").value_or(0);
  if (min && *min < 1)
    invalid(errs, "spec.minReplicas", *min, "must be greater than or equal to 1");
  if (max < 1) invalid(errs, "spec.maxReplicas", max, "must be greater than 0");
  if (min && max < *min) {
    invalid(errs, "spec.maxReplicas", max, "must be greater than or equal to `minReplicas`");
  }
}

void validate_storage_class(const json& obj, const json* old, FieldErrors& errs) {
  std::string provisioner = get_string(obj, "provisioner");
  if (provisioner.empty()) required(errs, "provisioner");
  std::string reclaim = get_string(obj, "reclaimPolicy");
  if (!reclaim.empty() && reclaim != "Delete" && reclaim != "Retain") {
    not_supported(errs, "reclaimPolicy", reclaim, {"Delete", "Retain"});
  }
  std::string binding = get_string(obj, "volumeBindingMode");
  if (!binding.empty() && binding != "Immediate" && binding != "WaitForFirstConsumer") {
    not_supported(errs, "volumeBindingMode", binding, {"Immediate", "WaitForFirstConsumer"});
  }
  if (old == nullptr) return;
  for (const char* k : {"parameters", "provisioner", "reclaimPolicy", "volumeBindingMode"}) {
    const json* now = get(obj, k);
    const json* before = get(*old, k);
    if ((now ? *now : json()) != (before ? *before : json())) {
      forbidden(errs, k, std::string("updates to ") + k + " are forbidden.");
    }
  }
}

void validate_lease(const json& obj, FieldErrors& errs) {
  const json& spec = spec_of(obj);
  std::optional<int64_t> duration = get_int(spec, "leaseDurationSeconds");
  if (duration && *duration <= 0) {
    invalid(errs, "spec.leaseDurationSeconds", *duration, "must be greater than 0");
  }
  nonnegative(errs, spec, "leaseTransitions", "spec");
}

void one_of(FieldErrors& errs, const json& obj, const char* k, const std::string& path,
            const std::vector<std::string>& allowed) {
  std::string v = get_string(obj, k);
  if (!v.empty() && std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    not_supported(errs, child(path, k), v, allowed);
}

// admissionregistration/v1 ValidateMutating/ValidatingWebhookConfiguration, reduced to the
// fields a client gets wrong.
void validate_webhooks(const json& obj, bool mutating, FieldErrors& errs) {
  const json* hooks = get_array(obj, "webhooks");
  if (hooks == nullptr) return;
  for (size_t i = 0; i < hooks->size(); ++i) {
    const json& h = (*hooks)[i];
    const std::string path = "webhooks[" + std::to_string(i) + "]";
    if (!h.is_object()) continue;
    if (get_string(h, "name").empty()) required(errs, child(path, "name"));
    std::string side = get_string(h, "sideEffects");
    if (side.empty()) required(errs, child(path, "sideEffects"));
    else one_of(errs, h, "sideEffects", path, {"None", "NoneOnDryRun"});
    const json* versions = get_array(h, "admissionReviewVersions");
    if (versions == nullptr || versions->empty())
      required(errs, child(path, "admissionReviewVersions"), "must specify one of v1, v1beta1");
    one_of(errs, h, "failurePolicy", path, {"Fail", "Ignore"});
    one_of(errs, h, "matchPolicy", path, {"Equivalent", "Exact"});
    if (mutating) one_of(errs, h, "reinvocationPolicy", path, {"IfNeeded", "Never"});
    if (auto t = get_int(h, "timeoutSeconds"); t && (*t < 1 || *t > 30))
      invalid(errs, child(path, "timeoutSeconds"), *t,
              "the timeout value must be between 1 and 30 seconds");
    const json* cc = get_object(h, "clientConfig");
    const bool url = cc && !get_string(*cc, "url").empty();
    const bool svc = cc && get_object(*cc, "service") != nullptr;
    if (url == svc)
      required(errs, child(path, "clientConfig"), "exactly one of url or service is required");
  }
}

void validate_admission(const std::string& kind, const json& obj, FieldErrors& errs) {
  if (kind == "MutatingWebhookConfiguration" || kind == "ValidatingWebhookConfiguration") {
    validate_webhooks(obj, kind == "MutatingWebhookConfiguration", errs);
    return;
  }
  const json& spec = spec_of(obj);
  if (kind == "ValidatingAdmissionPolicy") {
    const json* v = get_array(spec, "validations");
    const json* a = get_array(spec, "auditAnnotations");
    if ((v == nullptr || v->empty()) && (a == nullptr || a->empty()))
      required(errs, "spec.validations",
               "validations or auditAnnotations must contain at least one item");
    one_of(errs, spec, "failurePolicy", "spec", {"Fail", "Ignore"});
  } else if (kind == "ValidatingAdmissionPolicyBinding") {
    if (get_string(spec, "policyName").empty()) required(errs, "spec.policyName");
    const json* actions = get_array(spec, "validationActions");
    if (actions == nullptr || actions->empty()) required(errs, "spec.validationActions");
  }
}

void validate_core(const std::string& kind, const json& obj, const json* old, FieldErrors& errs) {
  if (kind == "Pod") validate_pod(obj, old, errs);
  if (kind == "PodTemplate") validate_pod_template(get(obj, "template"), "template", errs);
  if (kind == "ReplicationController") validate_replication_controller(obj, old, errs);
  if (kind == "Service") validate_service(obj, old, errs);
  if (kind == "ConfigMap") validate_config_map(obj, old, errs);
  if (kind == "Secret") validate_secret(obj, old, errs);
  if (kind == "Event") validate_event(obj, old, false, errs);
  if (kind == "PersistentVolumeClaim") validate_pvc(obj, errs);
}

}  // namespace

void validate(const api::Resource& r, const json& obj, const json* old, FieldErrors& errors) {
  if (r.is_custom || !obj.is_object()) return;
  if (old != nullptr && !old->is_object()) old = nullptr;
  const std::string& g = r.gv.group;
  const std::string& kind = r.kind;
  if (g.empty()) {
    validate_core(kind, obj, old, errors);
  } else if (g == "apps") {
    if (kind == "Deployment") validate_deployment(obj, old, errors);
    if (kind == "ReplicaSet") validate_replica_set(obj, old, errors);
    if (kind == "StatefulSet") validate_stateful_set(obj, old, errors);
    if (kind == "DaemonSet") validate_daemon_set(obj, old, errors);
  } else if (g == "batch") {
    if (kind == "Job") validate_job(obj, old, errors);
    if (kind == "CronJob") validate_cron_job(obj, old, errors);
  } else if (g == "rbac.authorization.k8s.io") {
    validate_rbac(kind, obj, old, errors);
  } else if (g == "networking.k8s.io") {
    if (kind == "Ingress") validate_ingress(obj, errors);
    if (kind == "NetworkPolicy") validate_network_policy(obj, errors);
  } else if (g == "policy") {
    if (kind == "PodDisruptionBudget") validate_pdb(obj, errors);
  } else if (g == "admissionregistration.k8s.io") {
    validate_admission(kind, obj, errors);
  } else if (g == "scheduling.k8s.io") {
    validate_priority_class(obj, old, errors);
  } else if (g == "events.k8s.io") {
    validate_event(obj, old, true, errors);
  } else if (g == "autoscaling") {
    validate_hpa(obj, errors);
  } else if (g == "storage.k8s.io") {
    if (kind == "StorageClass") validate_storage_class(obj, old, errors);
  } else if (g == "coordination.k8s.io") {
    validate_lease(obj, errors);
  } else if (g == "apiregistration.k8s.io") {
    validate_api_service(obj, errors);
  }
}

}  // namespace vkube::apiserver::builtin
