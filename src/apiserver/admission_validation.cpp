// The CEL expressions of ValidatingAdmissionPolicies and webhook configurations, checked when
// one is written, as kube's admissionregistration validation compiles them: the field path and
// wording of kube's errors, messageExpression without `authorizer` (kube declares none there).
#include <algorithm>
#include <cctype>
#include <functional>
#include <string>
#include <vector>

#include "admission.h"
#include "field_errors.h"
#include "vkube/cel/cel.h"

namespace vkube::apiserver::admission {
namespace {

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

// Every expression string `old` holds anywhere: those are not checked again on an update.
void collect_strings(const json& j, std::vector<std::string>& out) {
  if (j.is_string()) out.push_back(j.get<std::string>());
  if (j.is_structured())
    for (const json& e : j) collect_strings(e, out);
}

class Checker {
 public:
  Checker(const json* old, std::vector<FieldError>* errors, std::vector<std::string>* warnings)
      : errors_(errors), warnings_(warnings) {
    if (old != nullptr) collect_strings(*old, stored_);
  }

  // The expression in the string field `key` of `parent` (at `path`). `required`: kube's
  // detail when it is missing or blank; nullptr: the field is optional.
  void field(const json& parent, const std::string& path, const char* key, bool params,
             bool authorizer, const char* required) {
    const std::string at = path + "." + key;
    auto it = parent.is_object() ? parent.find(key) : parent.end();
    const bool present = it != parent.end() && it->is_string();
    const std::string expr = present ? it->get<std::string>() : "";
    if (blank(expr)) {
      if (required != nullptr)
        add({FieldError::Type::kRequired, at, required, nullptr});
      else if (!expr.empty())
        add({FieldError::Type::kInvalid, at, "must be non-empty if specified", expr});
      return;
    }
    if (std::find(stored_.begin(), stored_.end(), expr) != stored_.end()) return;
    std::string error;
    if (cel::compile_in_cached(expr, cel::admission_names(params, authorizer), &error)) return;
    if (cel::unsupported_by_vkube(error)) {
      if (warnings_ != nullptr)
        warnings_->push_back(at +
                             ": vkube cannot evaluate this expression, so it fails at "
                             "admission under the failurePolicy: " +
                             error);
      return;
    }
    add({FieldError::Type::kInvalid, at, "compilation failed: " + error, expr});
  }

  void each(const json& parent, const std::string& path, const char* key,
            const std::function<void(const json&, const std::string&)>& f) {
    auto it = parent.is_object() ? parent.find(key) : parent.end();
    if (it == parent.end() || !it->is_array()) return;
    for (std::size_t i = 0; i < it->size(); ++i)
      f((*it)[i], path + "." + key + "[" + std::to_string(i) + "]");
  }

 private:
  void add(FieldError e) {
    if (errors_ != nullptr) errors_->push_back(std::move(e));
  }

  std::vector<FieldError>* errors_;
  std::vector<std::string>* warnings_;
  std::vector<std::string> stored_;
};

}  // namespace

void check_expressions(const std::string& kind, const json& obj, const json* old,
                       std::vector<FieldError>* errors, std::vector<std::string>* warnings) {
  Checker check(old, errors, warnings);
  if (kind == "MutatingWebhookConfiguration" || kind == "ValidatingWebhookConfiguration") {
    check.each(obj, "", "webhooks", [&](const json& hook, const std::string& path) {
      check.each(hook, path.substr(1), "matchConditions", [&](const json& m, const std::string& p) {
        check.field(m, p, "expression", false, true, "");
      });
    });
    return;
  }
  if (kind != "ValidatingAdmissionPolicy" || !obj.is_object()) return;
  auto spec_it = obj.find("spec");
  if (spec_it == obj.end() || !spec_it->is_object()) return;
  const json& spec = *spec_it;
  const bool params = spec.contains("paramKind") && spec["paramKind"].is_object();
  check.each(spec, "spec", "matchConditions", [&](const json& m, const std::string& p) {
    check.field(m, p, "expression", params, true, "");
  });
  check.each(spec, "spec", "variables", [&](const json& v, const std::string& p) {
    check.field(v, p, "expression", params, true, "expression is not specified");
  });
  check.each(spec, "spec", "validations", [&](const json& v, const std::string& p) {
    check.field(v, p, "expression", params, true, "expression is not specified");
    check.field(v, p, "messageExpression", params, false, nullptr);
  });
  check.each(spec, "spec", "auditAnnotations", [&](const json& a, const std::string& p) {
    check.field(a, p, "valueExpression", params, true, "valueExpression is not specified");
  });
}

}  // namespace vkube::apiserver::admission
