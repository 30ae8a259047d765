// The deletion of one object, shared by DELETE, deletecollection and
// pods/eviction (delete.cpp), and the DeleteOptions that steer it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server_impl.h"

namespace vkube::apiserver {

struct DeleteOptions {
  std::optional<int64_t> grace_period;
  std::string propagation;  // Background, Foreground, Orphan or ""
  std::string precondition_uid, precondition_rv;
  bool orphan_dependents_false = false;  // orphanDependents: false, explicitly
  std::vector<std::string> dry_run;      // as given; kube supports only "All"
};

// The options a DeleteOptions object gives (a DELETE's body, an Eviction's
// deleteOptions; null for none): 400 for a field of the wrong type. The
// dryRun values are checked by check_dry_run_values.
Result<DeleteOptions> delete_options_from(const json& body);

// Outcome of deleting one object.
struct Deleted {
  json object;
  bool gone = false;  // removed now (else marked for deletion: 202)
};

// Deletes object ns/name of c's kind, or marks it for deletion (finalizers,
// a pod's grace period); when c.dry_run() nothing is written and the answer
// is the object as it would be. kNotFound when missing; kConflict with a
// "Precondition failed: ..." message when a precondition does not hold.
Result<Deleted> delete_one(Context& c, const std::string& ns, const std::string& name,
                           const DeleteOptions& o);

}  // namespace vkube::apiserver
