// The built-in kinds a tenant expects, and their per-kind behaviour
// (kube-apiserver's REST strategies): defaults, validation, table columns.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "field_errors.h"
#include "strategy.h"
#include "vkube/api/resource.h"

namespace vkube::apiserver::crd {
struct CustomVersion;  // crd/definition.h
}

namespace vkube::apiserver::builtin {

using json = nlohmann::json;

// How metadata.name is validated for a kind.
enum class NameRule { kSubdomain, kLabel, kDns1035Label, kPathSegment };

// A served resource plus the switches of its generic strategy.
struct Kind {
  api::Resource resource;
  NameRule name_rule = NameRule::kSubdomain;
  bool has_generation = false;         // metadata.generation tracks spec changes
  bool return_deleted_object = false;  // DELETE answers with the object, not a Status
  // Never stored: a POST answers with the object, its status computed from
  // the request (the access reviews), or acts on another kind (bindings).
  // Verbs: create only.
  bool create_only = false;
  // What the kind does beyond the generic store (builtin/strategy.h).
  Strategy strategy;
  // Set for a kind served from a CustomResourceDefinition: its schema,
  // printer columns and scale paths (crd/definition.h).
  std::shared_ptr<const crd::CustomVersion> custom;
};

// Every built-in resource, one row each (builtin/resources.cpp).
const std::vector<Kind>& builtin_kinds();

// Kube-apiserver's defaulting for a built-in kind (builtin/defaults.cpp).
// Idempotent: applying it to a defaulted object changes nothing.
void apply_defaults(const api::Resource& r, json& obj);

// Validation of a new object (old == nullptr) or of an update (builtin/
// validation.cpp), appending field errors worded as kube-apiserver's.
// Generic metadata (name, labels, annotations) is checked by the caller.
void validate(const api::Resource& r, const json& obj, const json* old, FieldErrors& errors);

// The Table columns of a built-in kind as kubectl shows them, NAME and AGE
// included where kubectl has them (builtin/tables.cpp).
std::vector<api::Column> table_columns(const api::Resource& r);

// A Table row for `obj`: one cell per column of table_columns(r)
// (builtin/tables.cpp). `now` is the Unix time for AGE-like cells.
json table_cells(const api::Resource& r, const json& obj, int64_t now);

// "5m", "3h12m", "2d" as kubectl prints ages (HumanDuration).
std::string human_duration(int64_t seconds);

}  // namespace vkube::apiserver::builtin
