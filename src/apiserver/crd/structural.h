// CustomResourceDefinition structural schemas (apiextensions.k8s.io/v1 openAPIV3Schema): what
// kube-apiserver's apiextensions-apiserver does with a custom resource between decoding and
// storage - pruning, defaulting and schema validation - and the checks a CRD's schema must pass.
// Pure functions over JSON, no I/O. Errors are worded as kube-apiserver words them, including
// kube-openapi's "spec.replicas in body must be of type integer: \"string\"" messages.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "field_errors.h"

namespace vkube::apiserver::crd {

using json = nlohmann::json;

// Validates `value`, a whole custom resource, against `schema` (the version's openAPIV3Schema)
// as the custom resource strategy does: kube-openapi value validation (type, format, enum,
// bounds, lengths, pattern, required, allOf/anyOf/oneOf/not, ...), then embedded resources
// (x-kubernetes-embedded-resource: apiVersion and kind present and well formed), then
// x-kubernetes-list-type set/map uniqueness. Appends to `errs`; never throws. Value errors name
// the field as kube-openapi does ("spec.items[0].name", map entries "spec.labels.foo");
// embedded-resource and list errors as field.Path does ("spec.labels[foo]"). Errors kube
// reports without a field (anyOf/oneOf/allOf/not, int32 range) have the field "<nil>".
// Thread-safe: compiled `pattern`s are cached per thread.
void validate(const json& schema, const json& value, FieldErrors& errs);

// Applies the schema's `default`s to `value` as kube's structural defaulting does: a property
// that is absent, or null while not nullable, gets its default; then each property, each
// additionalProperties entry and each array item is defaulted in turn (null entries of a
// non-nullable additionalProperties / items schema take that schema's default), so objects a
// parent default created get their own defaults. Never throws.
void apply_defaults(const json& schema, json& value);

// Prunes `value`, a whole custom resource, as the request decoder does before defaulting:
// removes object fields the schema does not specify (keeping everything under
// x-kubernetes-preserve-unknown-fields except what a known property's schema prunes), keeps
// apiVersion, kind and metadata of the resource and of x-kubernetes-embedded-resource objects,
// reduces metadata to ObjectMeta's fields, and drops nulls of non-nullable fields that have no
// default. Returns the removed fields' paths sorted as kube reports them ("spec.foo",
// "spec.items[0].bar", "metadata.foo", "spec.template.metadata.foo"), which become
// `unknown field "spec.foo"` warnings or strict-decoding errors.
std::vector<std::string> prune(const json& schema, json& value);

// Checks that `schema`, a CRD version's openAPIV3Schema, is structural and otherwise valid as
// CRD validation requires (apiextensions.k8s.io/v1 rules for new CRDs): a type everywhere outside
// x-kubernetes-preserve-unknown-fields / x-kubernetes-int-or-string, object at the root, no
// additionalProperties next to properties or at the root, root metadata limited to name and
// generateName, value validations (allOf/anyOf/oneOf/not) without structural keywords,
// defaults that are pruned and valid, consistent x-kubernetes-list-type / list-map-keys /
// map-type / embedded-resource, no unsupported keywords. Appends errors whose fields start with
// `path` (e.g. "spec.versions[0].schema.openAPIV3Schema"). x-kubernetes-validations (CEL) are
// not checked here.
void check_schema(const json& schema, const std::string& path, FieldErrors& errs);

}  // namespace vkube::apiserver::crd
