// The Apply operation of server-side apply (PATCH application/apply-patch+yaml):
// merges an applied configuration into the live object, checks it against the
// other managers, removes what the applier stopped applying, and records the
// applier's fields.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "managed_fields.h"
#include "typed.h"
#include "vkube/common/status.h"

namespace vkube::apiserver::apply {

// kubectl's client-side apply annotation, which kube keeps up to date for
// the "kubectl" applier and uses to let it take over from client-side apply.
inline constexpr const char* kLastAppliedAnnotation =
    "kubectl.kubernetes.io/last-applied-configuration";

struct ApplyRequest {
  const json* live = nullptr;  // nullptr: the object does not exist yet
  const json* config = nullptr;
  Type type;
  Scope scope = Scope::kAll;
  Writer writer;  // the applier
  bool force = false;
  // The object in error messages: "ns/name; apps/v1, Kind=Deployment".
  std::string object_ref;
};

// A field another manager owns and the apply would change.
struct Conflict {
  std::string manager;  // as ManagedEntry::describe() names it
  std::string path;     // .spec.replicas
};

struct ApplyResult {
  json object;                      // the merged object, with its managedFields
  std::vector<Conflict> conflicts;  // not empty: refused, `object` unset
};

// Runs an apply. An object without managedFields first gets a
// "before-first-apply" Update entry owning what it has (so its fields can
// conflict). Conflicts are the fields of other managers whose values the
// merge changes; `force` takes them over. The "kubectl" applier may change
// fields the last-applied annotation shows it set with client-side apply, and
// rewrites that annotation from its configuration. Errors: kInternal (as
// kube answers) when the configuration does not fit the schema ("failed to
// create typed patch object (<object_ref>): .spec.replicas: expected ...") or
// the live managedFields do not decode; kBadRequest for a configuration, and
// kInvalid for a live object, nested deeper than api::kMaxNestingDepth (the
// walks recurse once per level, so nothing deeper is walked).
Result<ApplyResult> run_apply(const ApplyRequest& r);

// The 409 message kube gives for conflicts:
//   Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.replicas
std::string conflict_message(const std::vector<Conflict>& conflicts);

}  // namespace vkube::apiserver::apply
