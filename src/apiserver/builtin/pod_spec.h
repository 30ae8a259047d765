// The PodSpec part of defaulting and validation, shared by Pods and every kind
// that embeds a pod template (Deployments, Jobs, ...).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "field_errors.h"

namespace vkube::apiserver::builtin {

using json = nlohmann::json;

// --- Defaulting (defaults_pod.cpp) ---------------------------------------------

// SetDefaults_PodSpec and the declarative defaults below it (containers,
// probes, ports, volumes). Applies to pods and pod templates alike.
void default_pod_spec(json& spec);
// default_pod_spec on obj[key].spec. `create`: the template is a struct in
// kube's types (Deployments, Jobs, ...), so an absent one is created; else
// (ReplicationControllers) only a present template is defaulted.
void default_pod_template(json& obj, const char* key, bool create = true);
// SetDefaults_Pod plus what the ServiceAccount, Priority and
// DefaultTolerationSeconds admission plugins add on create. Only for Pods.
void default_pod(json& pod);
// A volume source's own defaults (hostPath type, ...), shared with PVs.
void default_volume_source(json& source);
// SetDefaults_PersistentVolumeClaimSpec.
void default_pvc_spec(json& spec);

// --- Validation (validation_pod*.cpp) -----------------------------------------------

// ValidatePodSpec: containers, init containers, volumes, policies.
void validate_pod_spec(const json& spec, const std::string& path, FieldErrors& errs);
// ValidatePodTemplateSpec: template labels plus the spec at `path`.spec.
// `path` names the template ("spec.template"); a missing template is Required.
void validate_pod_template(const json* tmpl, const std::string& path, FieldErrors& errs);
// ValidatePodUpdate's spec rules (what may change on a running pod).
void validate_pod_update(const json& pod, const json& old, FieldErrors& errs);
// ValidateLabels for a labels map at `path`.
void validate_labels(const json& labels, const std::string& path, FieldErrors& errs);
// validateTolerations for a pod's tolerations list at `path`.
void validate_tolerations(const json& list, const std::string& path, FieldErrors& errs);
// ValidateResourceRequirements for a container's or the pod's resources.
void validate_resources(const json& resources, const std::string& path, FieldErrors& errs);

}  // namespace vkube::apiserver::builtin
