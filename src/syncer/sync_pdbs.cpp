// PodDisruptionBudgets: each tenant budget has a host copy in the tenant's
// host namespace, selecting the host pods of the tenant's pods, so that a
// host operator's `kubectl drain` (pods/eviction) honours the tenant's
// budgets. The host copy goes with the tenant budget; a resync deletes
// leftovers (a deletion missed while the syncer was down).
#include "syncer_impl.h"
#include "vkube/syncer/compare.h"
#include "vkube/syncer/translate_objects.h"

namespace vkube::syncer {

namespace {

constexpr const char* kPlural = "poddisruptionbudgets";

// The syncer owns the whole spec: a field the tenant dropped (minAvailable
// replaced by maxUnavailable) must go on the host too, which covers() alone
// would not see.
bool pdb_differs(const json& have, const json& want) {
  if (!metadata_patch(have, want).is_null()) return true;
  const json hspec = have.value("spec", json::object()), wspec = want.value("spec", json::object());
  for (const char* field :
       {"minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy", "selector"})
    if (hspec.value(field, json()) != wspec.value(field, json())) return true;
  return false;
}

}  // namespace

Status SyncerImpl::reconcile_pdb(const std::string& key) {
  ObjectPtr tenant = t_pdbs->get(key);
  ObjectPtr host = h_pdbs->get(host_key(ns_of(key), name_of(key)));
  // Never touch a host budget that is not this tenant's copy of ns/name.
  if (host && !names_.stands_for(*host, ns_of(key), name_of(key))) return Status::ok();
  if (!tenant) return host ? host_delete(*h_pdbs, kPlural, *host) : Status::ok();
  if (host && names_.stale(*host, *tenant)) {
    VKUBE_RETURN_IF_ERROR(host_delete(*h_pdbs, kPlural, *host));
    host = nullptr;
  }
  ObjectContext ctx{&names_, o_.host_namespace, owner()};
  auto want = translate_pdb(*tenant, ctx);
  if (!want.is_ok()) return want.status();
  record_managed_annotations(*want);
  if (!host) {
    Status s = host_create(*h_pdbs, kPlural, *want);
    if (s.code() == Code::kConflict) {
      pdbs.queue.add_after(key, std::chrono::milliseconds(100));
      return Status::ok();
    }
    if (s.code() == Code::kInvalid) {  // the host refuses it: said once, not retried
      warn(*tenant, "SyncError", s.message());
      return Status::ok();
    }
    return s;
  }
  if (!pdb_differs(*host, *want)) return Status::ok();
  return host_put(*h_pdbs, kPlural, replacement(*host, *want));
}

}  // namespace vkube::syncer
