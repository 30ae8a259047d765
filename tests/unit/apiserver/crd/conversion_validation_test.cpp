// A CRD's spec.conversion (crd/conversion_validation.cpp) and an APIService
// (builtin/validation_apiservice.cpp), worded as kube's validation.
#include <catch2/catch.hpp>

#include "definition.h"
#include "kinds.h"

namespace vkube::apiserver::crd {
namespace {

std::vector<std::string> conversion_errors(const json& conversion, bool preserve = false) {
  json crd = {{"spec", {{"conversion", conversion}}}};
  if (preserve) crd["spec"]["preserveUnknownFields"] = true;
  FieldErrors errs;
  validate_conversion(crd, errs);
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.to_string());
  return out;
}

json webhook(json client_config, json versions = json::array({"v1"})) {
  return {{"strategy", "Webhook"},
          {"webhook", {{"clientConfig", client_config}, {"conversionReviewVersions", versions}}}};
}

using Catch::Matchers::VectorContains;

TEST_CASE("conversion webhooks are accepted and checked as kube checks them", "[apiserver][crd]") {
  CHECK(conversion_errors({{"strategy", "None"}}).empty());
  CHECK(conversion_errors(webhook({{"url", "https://127.0.0.1:8443/convert"}})).empty());
  CHECK(conversion_errors(webhook({{"service",
                                    {{"name", "conv"},
                                     {"namespace", "default"},
                                     {"path", "/convert"},
                                     {"port", 443}}}}))
            .empty());
  CHECK_THAT(conversion_errors({{"strategy", "Magic"}}),
             VectorContains(std::string("spec.conversion.strategy: Unsupported value: \"Magic\": "
                                        "supported values: \"None\", \"Webhook\"")));
  CHECK_THAT(conversion_errors({{"strategy", "Webhook"}}),
             VectorContains(std::string("spec.conversion.webhookClientConfig: Required value: "
                                        "required when strategy is set to Webhook")));
  CHECK_THAT(conversion_errors(webhook({{"url", "http://127.0.0.1/convert"}})),
             VectorContains(std::string("spec.conversion.webhookClientConfig.url: Invalid value: "
                                        "\"http://127.0.0.1/convert\": 'https' is the only "
                                        "allowed URL scheme")));
  CHECK_THAT(conversion_errors(webhook({{"url", "https://x/c"}, {"service", {{"name", "a"}}}})),
             VectorContains(std::string("spec.conversion.webhookClientConfig: Required value: "
                                        "exactly one of url or service is required")));
  CHECK_THAT(conversion_errors(webhook({{"service", {{"name", "a"}, {"path", "convert"}}}})),
             VectorContains(std::string("spec.conversion.webhookClientConfig.service.path: "
                                        "Invalid value: \"convert\": must start with a '/'")));
  CHECK_THAT(conversion_errors(webhook({{"url", "https://x/c"}}, json::array({"v2"}))),
             VectorContains(std::string("spec.conversion.conversionReviewVersions: Invalid value: "
                                        "[\"v2\"]: must include at least one of v1, v1beta1")));
  CHECK_THAT(conversion_errors(webhook({{"url", "https://x/c"}}), true),
             VectorContains(std::string("spec.conversion.strategy: Invalid value: \"Webhook\": "
                                        "must be None if spec.preserveUnknownFields is true")));
}

TEST_CASE("a Webhook CRD's kinds carry the webhook; the Service port defaults to 443",
          "[apiserver][crd]") {
  json crd = json::parse(R"({
    "metadata": {"name": "crontabs.stable.example.com"},
    "spec": {"group": "stable.example.com", "scope": "Namespaced",
      "names": {"plural": "crontabs", "kind": "CronTab"},
      "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": "conv", "namespace": "default"}}}},
      "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}})");
  apply_definition_defaults(crd);
  CHECK(crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443);
  crd["status"] = compute_status(crd, {}, "2026-01-01T00:00:00Z");
  std::vector<builtin::Kind> kinds = kinds_of(crd);
  REQUIRE(kinds.size() == 1);
  CHECK(kinds[0].custom->conversion_webhook["clientConfig"]["service"]["name"] == "conv");
}

std::vector<std::string> api_service_errors(const json& obj) {
  for (const builtin::Kind& k : builtin::builtin_kinds()) {
    if (k.resource.kind != "APIService") continue;
    FieldErrors errs;
    builtin::validate(k.resource, obj, nullptr, errs);
    std::vector<std::string> out;
    for (const FieldError& e : errs) out.push_back(e.to_string());
    return out;
  }
  FAIL("APIService is not served");
  return {};
}

TEST_CASE("APIServices are named version.group and checked as kube-aggregator checks them",
          "[apiserver][aggregation]") {
  json local = {{"metadata", {{"name", "v1.x.io"}}},
                {"spec",
                 {{"group", "x.io"},
                  {"version", "v1"},
                  {"groupPriorityMinimum", 100},
                  {"versionPriority", 10}}}};
  CHECK(api_service_errors(local).empty());
  json wrong = local;
  wrong["metadata"]["name"] = "x";
  CHECK_THAT(api_service_errors(wrong),
             VectorContains(std::string("metadata.name: Invalid value: \"x\": must be "
                                        "`spec.version+\".\"+spec.group`: \"v1.x.io\"")));
  json priorities = local;
  priorities["spec"]["groupPriorityMinimum"] = 0;
  priorities["spec"]["versionPriority"] = 1001;
  CHECK(api_service_errors(priorities).size() == 2);
  json ca = local;
  ca["spec"]["caBundle"] = "YWJj";
  CHECK_THAT(api_service_errors(ca),
             VectorContains(std::string("spec.caBundle: Invalid value: \"3 bytes\": local "
                                        "APIServices may not have a caBundle")));
  json remote = local;
  remote["spec"]["service"] = {{"name", "wardle"}};
  remote["spec"]["insecureSkipTLSVerify"] = true;
  remote["spec"]["caBundle"] = "YWJj";
  std::vector<std::string> errs = api_service_errors(remote);
  CHECK_THAT(errs, VectorContains(std::string("spec.service.namespace: Required value")));
  CHECK_THAT(errs, VectorContains(std::string(
                       "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if "
                       "caBundle is present")));
}

}  // namespace
}  // namespace vkube::apiserver::crd
