// CustomResourceDefinitions as the API server serves them: the kinds one
// CRD adds (one per served version), its status (accepted names and the
// NamesAccepted / Established / Terminating conditions) and its validation.
// Pure functions over JSON: no I/O, so each is tested on its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "field_errors.h"
#include "kinds.h"

namespace vkube::apiserver::crd {

using json = nlohmann::json;

// The finalizer kube's CRD storage adds when a CRD is deleted; the cleanup
// controller removes it once every custom resource of the CRD is gone.
inline constexpr const char* kCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io";

// One additionalPrinterColumns entry.
struct PrinterColumn {
  std::string name, type, format, description, json_path;
  int priority = 0;
};

// What the generic strategy needs to serve one version of a CRD.
struct CustomVersion {
  std::string crd_name;         // "crontabs.stable.example.com"
  std::string storage_version;  // objects are stored with this apiVersion's version
  json schema;                  // openAPIV3Schema; null when the version has none
  std::vector<PrinterColumn> columns;
  // The scale subresource's JSON paths (".spec.replicas"); empty without one.
  std::string spec_replicas_path, status_replicas_path, label_selector_path;
  bool terminating = false;         // the CRD is being deleted: creates are refused
  std::string deprecation_warning;  // set for deprecated versions
  // spec.conversion.webhook when the strategy is Webhook (custom_conversion.cpp calls it);
  // null for the None strategy, which only changes apiVersion.
  json conversion_webhook;
};

// The apiVersion objects of `v` are stored with ("stable.example.com/v1").
std::string storage_api_version(const api::Resource& r, const CustomVersion& v);

// Kube's version priority: GA before beta before alpha, higher numbers first,
// then non-kube-like versions alphabetically. True when a sorts before b.
bool version_before(const std::string& a, const std::string& b);

// The kinds a CRD serves (one per served version, highest priority first),
// using its accepted names. Empty unless the CRD is Established.
std::vector<builtin::Kind> kinds_of(const json& crd);

// The names the CRD claims; conflicts with `others` (the other CRDs of
// the same group, and the built-in resources of that group) yield an
// unaccepted status. Returns the whole new .status: acceptedNames,
// conditions (lastTransitionTime kept when a condition does not change),
// storedVersions.
json compute_status(const json& crd, const std::vector<json>& others, const std::string& now);

// Kube's defaults for a CRD (conversion strategy None, singular and
// listKind names, each version's schema left as given).
void apply_definition_defaults(json& crd);

// Validation of a CRD create (old == nullptr) or update, worded as
// kube-apiserver's (spec.names.plural, spec.versions[0].schema...).
void validate_definition(const json& crd, const json* old, FieldErrors& errs);
// The spec.conversion part of it: strategy None or Webhook, and a Webhook's clientConfig
// (exactly one of an https URL or a Service) and conversionReviewVersions (v1 or v1beta1).
void validate_conversion(const json& crd, FieldErrors& errs);

// Warnings a create or update answers with (x-kubernetes-validations rules
// that cannot be enforced, deprecated versions being used...).
std::vector<std::string> definition_warnings(const json& crd);

}  // namespace vkube::apiserver::crd
