// The strategy of kinds served from CustomResourceDefinitions, and of the
// CRDs themselves, beside the built-in kinds' (builtin/kinds.h): defaults
// and validation from the CRD's structural schema and rules, pruning of
// unknown fields, the stored version and Table rows from printer columns.
// (The scale subresource reads the CRD's paths in scale.cpp.)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "custom_conversion.h"
#include "errors.h"
#include "registry.h"

namespace vkube::apiserver {

class Server;

// Kube's defaulting for `k`: the built-in strategy's, or the defaults of the
// CRD schema of a custom kind.
void apply_kind_defaults(const Kind& k, json& obj);
// The kind's own rules (metadata is checked by the caller): built-in
// validation, or the CRD schema and x-kubernetes-validations rules; a CRD
// itself is checked as kube checks CRDs.
void validate_kind(const Kind& k, const json& obj, const json* old, FieldErrors& errs);
// Removes what a custom kind's schema does not specify; returns the paths.
std::vector<std::string> prune_custom(const Kind& k, json& obj);
// Warnings to answer a write of `obj` with (CRD rules vkube does not enforce).
std::vector<std::string> kind_warnings(const Kind& k, const json& obj);
// Converts a custom resource to the CRD's storage version (custom_conversion.h: a
// conversion webhook may fail, kInternal); nothing for built-in kinds.
[[nodiscard]] Status to_storage_version(Server& s, const Kind& k, json& obj);
// Refuses creates of a kind whose CRD is being deleted (405, as kube).
std::optional<ApiError> admit_custom_create(const Kind& k);

// Table cells of a custom resource: one per printer column, after the name.
json custom_table_cells(const Kind& k, const json& obj, int64_t now);

// Brings the served kinds and the stored status of the CRD `name` up to date
// after it was written (or deleted): accepted names, conditions, and the
// registry entry. Thread-safe; serialised per server.
void sync_crd(Server& s, const std::string& name);
// Registers every stored CRD (at start-up).
void load_crds(Server& s);

}  // namespace vkube::apiserver
