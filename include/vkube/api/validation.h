// Name and value validation as Kubernetes defines it (apimachinery's
// validation package, Kubernetes 1.32). Each check returns the list of
// problems, empty when valid, worded as kube-apiserver words them, e.g.
// "must be no more than 63 characters". Callers add the field path and the
// value ("metadata.name: Invalid value: \"x\": " + message). Pure functions:
// thread-safe, no allocation when the value is valid.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkube::api {

// RFC 1123 label: lowercase alphanumerics and '-', starts and ends
// alphanumeric, at most 63 characters (namespaces, services, ...).
std::vector<std::string> validate_dns1123_label(std::string_view value);
// RFC 1123 subdomain: labels joined by '.', at most 253 (most objects).
std::vector<std::string> validate_dns1123_subdomain(std::string_view value);
// RFC 1035 label: like a 1123 label but must start with a letter (services).
std::vector<std::string> validate_dns1035_label(std::string_view value);
// Path segment names: not "." or "..", no '/' or '%' (RBAC objects, ...).
std::vector<std::string> validate_path_segment_name(std::string_view value);
// Label/annotation keys: [prefix/]name, prefix a DNS subdomain, name <= 63
// of alphanumerics, '-', '_', '.', starting and ending alphanumeric.
std::vector<std::string> validate_qualified_name(std::string_view value);
// Label values: empty or <= 63 chars of the same alphabet as names.
std::vector<std::string> validate_label_value(std::string_view value);
// C identifier-ish env var names: [-._a-zA-Z][-._a-zA-Z0-9]*, and not ".",
// "..", or starting with "..".
std::vector<std::string> validate_env_var_name(std::string_view value);
// The relaxed rule Kubernetes 1.32 applies to container env names by default
// (RelaxedEnvironmentVariableValidation): non-empty printable ASCII, no '='.
std::vector<std::string> validate_relaxed_env_var_name(std::string_view value);

// One Invalid value in an object's metadata, as kube's ValidateObjectMeta
// reports it: the field path ("metadata.finalizers"), the offending value and
// why.
struct MetaError {
  std::string field;
  nlohmann::json value;
  std::string detail;
};

// metadata.finalizers: each a qualified name; "orphan" and
// "foregroundDeletion" not both. Non-string entries are left to decoding.
std::vector<MetaError> validate_finalizers(const nlohmann::json& finalizers);
// metadata.ownerReferences: apiVersion with a version, kind, name and uid
// non-empty, no Event owner, at most one with controller=true.
std::vector<MetaError> validate_owner_references(const nlohmann::json& refs);
// kube's warnings for finalizer names without a domain path ("example.com/x"),
// other than the standard ones; on update (`old` set) only for finalizers
// the write adds.
std::vector<std::string> finalizer_warnings(const nlohmann::json& finalizers,
                                            const nlohmann::json* old);

}  // namespace vkube::api
