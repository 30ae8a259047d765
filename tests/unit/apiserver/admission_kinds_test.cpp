// admissionregistration.k8s.io/v1 kinds: what a chart's webhook configuration
// reads back as after create (kube's defaults) and the 422 errors it gets.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kinds.h"

namespace vkube::apiserver::builtin {
namespace {

using json = nlohmann::json;
constexpr const char* kGroup = "admissionregistration.k8s.io";

const api::Resource& resource(const std::string& kind) {
  for (const Kind& k : builtin_kinds())
    if (k.resource.gv.group == kGroup && k.resource.kind == kind) return k.resource;
  FAIL("no built-in kind " << kind);
  throw;
}

std::vector<std::string> errors(const std::string& kind, json obj) {
  const api::Resource& r = resource(kind);
  apply_defaults(r, obj);
  FieldErrors errs;
  validate(r, obj, nullptr, errs);
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.to_string());
  return out;
}

json webhook() {
  return {{"name", "x.example.com"},
          {"sideEffects", "None"},
          {"admissionReviewVersions", {"v1"}},
          {"clientConfig", {{"service", {{"namespace", "ns"}, {"name", "svc"}}}}},
          {"rules", {{{"operations", {"CREATE"}}, {"apiGroups", {""}}, {"apiVersions", {"v1"}},
                      {"resources", {"pods"}}}}}};
}

TEST_CASE("webhook configurations are served cluster-scoped and defaulted as kube does",
          "[admission]") {
  const api::Resource& r = resource("MutatingWebhookConfiguration");
  CHECK_FALSE(r.namespaced);
  CHECK(r.plural == "mutatingwebhookconfigurations");
  json obj = {{"webhooks", {webhook()}}};
  apply_defaults(r, obj);
  const json& h = obj["webhooks"][0];
  CHECK(h["failurePolicy"] == "Fail");
  CHECK(h["matchPolicy"] == "Equivalent");
  CHECK(h["timeoutSeconds"] == 10);
  CHECK(h["reinvocationPolicy"] == "Never");
  CHECK(h["namespaceSelector"] == json::object());
  CHECK(h["objectSelector"] == json::object());
  CHECK(h["rules"][0]["scope"] == "*");
  CHECK(h["clientConfig"]["service"]["port"] == 443);

  json v = {{"webhooks", {webhook()}}};
  apply_defaults(resource("ValidatingWebhookConfiguration"), v);
  CHECK_FALSE(v["webhooks"][0].contains("reinvocationPolicy"));
}

TEST_CASE("webhook configurations are refused with kube's field errors", "[admission]") {
  json h = webhook();
  h.erase("sideEffects");
  h.erase("admissionReviewVersions");
  h["timeoutSeconds"] = 31;
  h["failurePolicy"] = "Sometimes";
  auto errs = errors("ValidatingWebhookConfiguration", {{"webhooks", {h}}});
  using Catch::Matchers::VectorContains;
  CHECK_THAT(errs, VectorContains(std::string("webhooks[0].sideEffects: Required value")));
  CHECK_THAT(errs, VectorContains(std::string(
                       "webhooks[0].admissionReviewVersions: Required value: must specify one "
                       "of v1, v1beta1")));
  CHECK_THAT(errs, VectorContains(std::string(
                       "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must "
                       "be between 1 and 30 seconds")));
  CHECK_THAT(errs, VectorContains(std::string(
                       "webhooks[0].failurePolicy: Unsupported value: \"Sometimes\": supported "
                       "values: \"Fail\", \"Ignore\"")));
  CHECK(errors("MutatingWebhookConfiguration", {{"webhooks", {webhook()}}}).empty());
}

TEST_CASE("validating admission policies need validations, bindings a policy and actions",
          "[admission]") {
  CHECK(errors("ValidatingAdmissionPolicy", {{"spec", json::object()}}) ==
        std::vector<std::string>{
            "spec.validations: Required value: validations or auditAnnotations must contain at "
            "least one item"});
  json policy = {{"spec",
                  {{"validations", {{{"expression", "object.spec.replicas <= 5"}}}},
                   {"matchConstraints", {{"resourceRules", {{{"operations", {"CREATE"}}}}}}}}}};
  const api::Resource& r = resource("ValidatingAdmissionPolicy");
  apply_defaults(r, policy);
  CHECK(policy["spec"]["failurePolicy"] == "Fail");
  CHECK(policy["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent");
  CHECK(policy["spec"]["matchConstraints"]["resourceRules"][0]["scope"] == "*");
  CHECK(errors("ValidatingAdmissionPolicyBinding", {{"spec", json::object()}}) ==
        std::vector<std::string>{"spec.policyName: Required value",
                                 "spec.validationActions: Required value"});
}

}  // namespace
}  // namespace vkube::apiserver::builtin
