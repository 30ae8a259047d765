// Dynamic admission: MutatingWebhookConfigurations, ValidatingWebhookConfigurations and
// ValidatingAdmissionPolicies (with their bindings), applied in the request path of every write
// as kube-apiserver's MutatingAdmissionWebhook, ValidatingAdmissionPolicy and
// ValidatingAdmissionWebhook plugins apply them:
//
//   decode, default -> mutate() -> validation -> built-in admission -> validate() -> storage
//
// The configurations are read from the store once and kept compiled until one of them changes
// (PrefixRevision, as the RBAC authorizer keeps its policy), so a write costs one
// comparison while none exist. Files: admission.cpp (the snapshot, matching, the mutating and
// validating passes), admission_webhook.cpp (reaching a webhook and the AdmissionReview
// exchange), admission_policy.cpp (ValidatingAdmissionPolicy over CEL), admission_validation.cpp
// (the expressions' checks when a policy or configuration is written).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "errors.h"
#include "prefix_revision.h"
#include "vkube/storage/backend.h"

namespace vkube::apiserver {

using json = nlohmann::json;
struct Context;

// One admission request: what kube's admission.Attributes carry.
struct AdmissionRequest {
  std::string operation;  // CREATE, UPDATE, DELETE or CONNECT
  std::string subresource;
  std::string name, ns;
  // The object after the request (null for DELETE) and before it (null for CREATE).
  json object;
  json old_object;
  // CreateOptions, UpdateOptions, DeleteOptions (or null).
  json options;
  // The object's kind when it is not the resource's: a CONNECT's PodExecOptions,
  // PodAttachOptions or PodPortForwardOptions.
  std::string kind = {};
  // That kind's group/version where it is not the resource's: "autoscaling/v1" for the
  // Scale a webhook sees on the scale subresource.
  std::string kind_group_version = {};
  // The version the objects are shown at where a matchPolicy Equivalent rule matched
  // another served version of the resource (empty: the request's own).
  std::string shown_version = {};
};

namespace admission {
struct Snapshot;

// What kube's validation of a ValidatingAdmissionPolicy or a webhook configuration says of its
// CEL expressions (admission_validation.cpp): one that does not compile is Invalid,
//   spec.validations[0].expression: Invalid value: "object.x ==": compilation failed: ERROR: ...
// an empty one Required. One using what vkube's CEL lacks is accepted with a warning (it fails
// at admission under the failurePolicy). An expression `old` already holds is not checked again
// (kube compiles stored expressions leniently). Either out-parameter may be null.
void check_expressions(const std::string& kind, const json& obj, const json* old,
                       std::vector<struct FieldError>* errors, std::vector<std::string>* warnings);
}

class Admission {
 public:
  // `backend` (not owned) must outlive the admission or its shutdown().
  explicit Admission(storage::Backend* backend);
  ~Admission();
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // Whether any webhook configuration or policy binding is stored: when none is, a write skips
  // dynamic admission altogether. Cheap; thread-safe.
  bool active();

  // The mutating webhooks that match, in the order of their configurations' names and then their
  // own, each given the object as the previous one left it (JSONPatch answers applied), those
  // with reinvocationPolicy IfNeeded once more when a later one changed it. On success
  // `r.object` is the mutated object. A denial, or a failing call of a webhook whose
  // failurePolicy is Fail, is the error kube answers.
  std::optional<ApiError> mutate(Context& c, AdmissionRequest& r);
  // The validating admission policies, then the validating webhooks (in parallel, as kube calls
  // them) that match; the first denial or failure is the answer.
  std::optional<ApiError> validate(Context& c, const AdmissionRequest& r);

  // Ends the watch (before the backend closes). Idempotent.
  void shutdown();

  // What the passes record, as kube-apiserver's admission metrics name it:
  //   apiserver_admission_webhook_request_total{name,type,operation,code,rejected}
  //   apiserver_admission_webhook_admission_duration_seconds{name,type,operation,rejected}
  //   apiserver_validating_admission_policy_check_total{policy,policy_binding,enforcement_action}
  // `code` is the webhook's HTTP answer (0: none came); `type` admit or validating.
  void record_webhook(const std::string& name, bool mutating, const std::string& operation,
                      int code, bool rejected, double seconds);
  void record_policy(const std::string& policy, const std::string& binding,
                     const std::string& action);
  std::string render_metrics() const;

 private:
  std::shared_ptr<const admission::Snapshot> snapshot(std::string* error);

  storage::Backend* backend_;
  std::unique_ptr<PrefixRevision> revision_;  // the newest write of the four kinds
  // Writes of the four kinds seen, and active()'s last answer: generation * 4 + 2 + answer
  // (0: none yet). An answer of an older generation is not used.
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> active_{0};
  std::mutex mu_;
  std::shared_ptr<const admission::Snapshot> snapshot_;  // guarded by mu_
  storage::Revision built_revision_ = -1;                 // guarded by mu_
  std::mutex rebuild_mu_;                                 // one rebuild at a time

  struct Histogram {
    std::vector<uint64_t> counts;
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex metrics_mu_;
  std::map<std::vector<std::string>, uint64_t> webhook_requests_;  // guarded by metrics_mu_
  std::map<std::vector<std::string>, Histogram> webhook_latency_;  // guarded by metrics_mu_
  std::map<std::vector<std::string>, uint64_t> policy_checks_;     // guarded by metrics_mu_
};

}  // namespace vkube::apiserver
