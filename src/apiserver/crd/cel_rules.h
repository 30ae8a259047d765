// CEL validation rules of CustomResourceDefinitions (x-kubernetes-validations): the schema
// walker that applies a CRD's rules to a custom resource with kube's error wording, and the
// checks a CRD's rules must pass when it is written. The language itself is the cel module's
// (vkube/cel/cel.h); this binds it to structural schemas, as kube's apiextensions-apiserver
// binds k8s.io/apiserver's cel packages.
#pragma once

#include <string>
#include <vector>

#include "field_errors.h"
#include "vkube/cel/cel.h"

namespace vkube::apiserver::crd {

// The CRD code and its tests spell the shared regex engine crd::Regex.
using vkube::cel::Regex;

namespace cel {

using json = nlohmann::json;
using FieldErrors = vkube::apiserver::FieldErrors;

// The CEL module's interface, reachable as crd::cel::X where CRD code and tests spell it so.
namespace detail = vkube::cel::detail;
using vkube::cel::admission_names;
using vkube::cel::Authorizer;
using vkube::cel::AuthzAttributes;
using vkube::cel::AuthzDecision;
using vkube::cel::check_types;
using vkube::cel::compile;
using vkube::cel::compile_cached;
using vkube::cel::compile_in;
using vkube::cel::compile_in_cached;
using vkube::cel::EvalOptions;
using vkube::cel::EvalResult;
using vkube::cel::evaluate;
using vkube::cel::kMaxAstDepth;
using vkube::cel::kMaxExpressionCodePoints;
using vkube::cel::kMaxExpressionNesting;
using vkube::cel::kPerCallCostLimit;
using vkube::cel::kRuntimeCostBudget;
using vkube::cel::Program;
using vkube::cel::TypeEnv;
using vkube::cel::unsupported_by_vkube;

// Evaluates every x-kubernetes-validations rule of `schema` (a CRD version's openAPIV3Schema)
// against `obj`, `self` bound to the value at each rule's node; transition rules (those using
// oldSelf) only when `old` is non-null and holds a value at the same place (correlated through
// object properties, map keys and list-type=map keys, as kube does). Appends kube's errors:
//   <nil>: Invalid value: "object": failed rule: self.a < self.b
//   spec.x: Invalid value: "integer": no such key: y evaluating rule: self.y > 0
// Rules are compiled once per process (compile_cached). Never throws.
void validate_rules(const json& schema, const json& obj, const json* old, FieldErrors& errs);

// For CRD create/update: what kube's CRD validation reports about the rules in `schema` (rooted at
// `path`, e.g. "spec.versions[0].schema.openAPIV3Schema"), one "<field>: <detail>" string each:
//   <path>.properties[spec].x-kubernetes-validations[0].rule: compilation failed: ERROR: ...
// (rules and messageExpressions that do not compile, transition rules on uncorrelatable nodes,
// invalid fieldPaths and reasons). Empty when every rule is usable.
std::vector<std::string> check_rules(const json& schema, const std::string& path);

}  // namespace cel
}  // namespace vkube::apiserver::crd
