// Private to admission*.cpp: the compiled configurations and the pieces the passes share.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "admission.h"
#include "vkube/api/selector.h"
#include "vkube/cel/cel.h"

namespace vkube::apiserver::admission {

// Readers of configurations and answers that may have any shape.
inline const json& at(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}
// The array at `key`, or an empty one: no copy either way.
inline const json& list_at(const json& obj, const char* key) {
  static const json kEmpty = json::array();
  const json& v = at(obj, key);
  return v.is_array() ? v : kEmpty;
}
inline std::string text(const json& obj, const char* key, std::string fallback = "") {
  const json& v = at(obj, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

// admissionregistration/v1 RuleWithOperations (and NamedRuleWithOperations).
struct Rule {
  std::vector<std::string> operations, groups, versions, resources, resource_names;
  std::string scope = "*";
};

// What is asked, as the rules see it.
struct Target {
  std::string operation, group, version, resource, subresource, name;
  bool namespaced = false;
};

bool rule_matches(const Rule& rule, const Target& t);
// The version `rules` match the request at: "" for its own; under matchPolicy Equivalent
// another served version of the same custom resource (vkube's CRDs convert with strategy
// None, so its objects differ only in apiVersion); nullopt when none matches.
std::optional<std::string> matched_version(Context& c, const std::vector<Rule>& rules,
                                           bool equivalent, const Target& t);
// The request as a webhook or policy that matched at `version` sees it (r itself for "").
AdmissionRequest shown_at(Context& c, const AdmissionRequest& r, const std::string& version);
std::vector<Rule> parse_rules(const json& rules);

// A CEL expression compiled for admission (the variables of admission_policy.cpp's env).
struct Expression {
  std::string source;
  std::shared_ptr<const cel::Program> program;  // null: did not compile (error)
  std::string error;
};
Expression compile_expression(const std::string& source, bool with_params);

struct MatchCondition {
  std::string name;
  Expression expression;
};
std::vector<MatchCondition> parse_match_conditions(const json& conditions, bool with_params);

// The CEL activation of one request: object, oldObject, request, namespaceObject (params and
// variables are added by the policy pass).
json cel_activation(Context& c, const AdmissionRequest& r, const json& namespace_object);
// Evaluates the match conditions: true (all hold), false (one does not), or an error message.
struct ConditionOutcome {
  bool matches = true;
  std::string error;  // set when one failed to evaluate
};
ConditionOutcome evaluate_conditions(const std::vector<MatchCondition>& conditions,
                                     const json& activation, const cel::EvalOptions& options);
// The `authorizer` of a request's expressions: its user, its resource, the server's RBAC.
// Refers to c.server; lives no longer than the request.
cel::Authorizer cel_authorizer(Context& c, const AdmissionRequest& r);

struct Webhook {
  std::string config, name;
  bool mutating = false;
  std::vector<Rule> rules;
  bool equivalent = true;   // matchPolicy Equivalent (the v1 default), else Exact
  bool fail_closed = true;  // failurePolicy Fail (the v1 default), else Ignore
  api::LabelSelector namespace_selector, object_selector;
  std::string side_effects;  // None, NoneOnDryRun, Some, Unknown
  int timeout_seconds = 10;
  std::vector<std::string> review_versions;
  bool reinvoke = false;  // reinvocationPolicy IfNeeded
  std::vector<MatchCondition> match_conditions;
  // clientConfig: a URL, or a Service.
  std::string url;
  std::string service_namespace, service_name, service_path;
  int service_port = 443;
  std::string ca_pem;
};

struct Validation {
  Expression expression;
  std::string message;
  Expression message_expression;  // source empty: none
  std::string reason;             // Unauthorized, Forbidden, Invalid (default), RequestEntityTooLarge
};

struct MatchResources {
  std::vector<Rule> rules, exclude;
  bool equivalent = true;  // matchPolicy Equivalent (the default), else Exact
  api::LabelSelector namespace_selector, object_selector;
  bool set = false;  // a binding's matchResources given
};

struct Policy {
  std::string name;
  bool fail_closed = true;
  std::string param_api_version, param_kind;  // paramKind, empty: none
  MatchResources match;
  std::vector<MatchCondition> match_conditions;
  std::vector<std::pair<std::string, Expression>> variables;
  std::vector<Validation> validations;
  std::vector<std::pair<std::string, Expression>> audit_annotations;  // key, valueExpression
};

struct Binding {
  std::string name, policy;
  // paramRef
  bool has_param_ref = false;
  std::string param_name, param_namespace;
  api::LabelSelector param_selector;
  bool param_selector_set = false;
  bool deny_missing_param = true;  // parameterNotFoundAction Deny (the default), else Allow
  MatchResources match;
  bool deny = false, warn = false, audit = false;  // validationActions
};

struct Snapshot {
  std::vector<Webhook> mutating, validating;
  std::vector<Policy> policies;
  std::vector<Binding> bindings;
  bool empty() const {
    return mutating.empty() && validating.empty() && bindings.empty();
  }
};

// The objects under /registry/admissionregistration.k8s.io/, compiled.
std::shared_ptr<const Snapshot> compile_snapshot(const std::vector<std::pair<std::string, json>>& objects);

// Whether a selector-bearing rule set applies to the request: rules and namespace/object
// selectors. `namespace_labels` null: not namespaced (selector matches).
bool labels_match(const api::LabelSelector& s, const json& labels);

// The webhook call (admission_webhook.cpp). The answer of one webhook.
struct WebhookAnswer {
  bool called = false;   // false: failed before an answer (error says why)
  std::string error;     // the failure, worded as kube's "failed to call webhook: ..."
  bool allowed = false;
  json status;           // response.status of a denial
  json patch;            // the JSONPatch to apply (mutating), or null
  std::vector<std::string> warnings;
};
WebhookAnswer call_webhook(Context& c, const Webhook& w, const json& review);
// The AdmissionReview sent to `w` for `r`.
json admission_review(Context& c, const Webhook& w, const AdmissionRequest& r,
                      const std::string& uid);

// The policy pass (admission_policy.cpp).
std::optional<ApiError> run_policies(Context& c, const Snapshot& s, const AdmissionRequest& r,
                                     const Target& t, const json& namespace_object);

// Reads the namespace object of a namespaced request (null when not namespaced or absent).
json namespace_object(Context& c, const AdmissionRequest& r);
Target target_of(Context& c, const AdmissionRequest& r);
// request.kind of a review: {group, version, kind} of the object the webhook is shown.
json request_kind(Context& c, const AdmissionRequest& r);
// request.resource's version: the shown version, else the request's.
std::string resource_version(Context& c, const AdmissionRequest& r);
// Whether `m` matches the request: nullopt when not, else the version it matched at (as
// matched_version).
std::optional<std::string> resources_match(Context& c, const MatchResources& m, const Target& t,
                                           const AdmissionRequest& r, const json& namespace_object);

}  // namespace vkube::apiserver::admission
