// Service account credentials on the host: one Secret per tenant service
// account that a tenant pod runs as, holding a token for the tenant's API.
// It lives while a tenant pod of that account exists, and goes with the
// last one (a namespace deleted, a release uninstalled), so the host keeps
// no credentials of accounts nothing runs as.
#include "syncer_impl.h"

namespace vkube::syncer {

std::string SyncerImpl::account_of(const json& pod) {
  std::string sa = str_at(pod.value("spec", json::object()), "serviceAccountName");
  return sa.empty() ? "default" : sa;
}

bool SyncerImpl::account_in_use(const std::string& ns, const std::string& sa) const {
  for (const ObjectPtr& pod : t_pods->list(ns))
    if (account_of(*pod) == sa) return true;
  return false;
}

Status SyncerImpl::ensure_api_access(const std::string& ns, const std::string& sa,
                                     std::string* secret) {
  *secret = names_.token_secret_name(ns, sa);
  // Serialised with reconcile_token: a Secret it finds unused and deletes
  // is made again here, never deleted after a pod was given it.
  std::lock_guard lock(tokens_mu_);
  if (h_secrets->get(o_.host_namespace + "/" + *secret)) return Status::ok();
  // A long-lived token: the host Secret is not refreshed as a kubelet
  // refreshes a projected token.
  json request = {{"apiVersion", "authentication.k8s.io/v1"},
                  {"kind", "TokenRequest"},
                  {"spec", {{"expirationSeconds", int64_t{365} * 24 * 3600}}}};
  auto r = tenant_call("POST", "/api/v1/namespaces/" + ns + "/serviceaccounts/" + sa + "/token",
                       request);
  if (!r.ok())
    return Status::unavailable("token for service account " + ns + "/" + sa + ": " + r.body.dump());
  const std::string token = r.body.value("status", json::object()).value("token", "");
  json obj = {{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"type", std::string(kApiAccessType)},
              {"metadata",
               {{"name", *secret},
                {"namespace", o_.host_namespace},
                {"labels",
                 {{std::string(kManagedByLabel), std::string(kManagedByValue)},
                  {std::string(kTenantLabel), o_.tenant},
                  {std::string(kNamespaceLabel), ns}}},
                {"annotations", {{std::string(kServiceAccountAnnotation), sa}}},
                {"ownerReferences", json::array({owner()})}}},
              {"stringData", {{"token", token}, {"ca.crt", o_.tenant_ca_pem}, {"namespace", ns}}}};
  Status s = host_create(*h_secrets, "secrets", obj);
  if (s.code() == Code::kConflict) return Status::ok();  // made by another worker
  return s;
}

Status SyncerImpl::reconcile_token(const std::string& key) {
  const std::string ns = ns_of(key), sa = name_of(key);
  std::lock_guard lock(tokens_mu_);
  if (account_in_use(ns, sa)) return Status::ok();
  ObjectPtr host = h_secrets->get(o_.host_namespace + "/" + names_.token_secret_name(ns, sa));
  if (!host) return Status::ok();
  auto origin = names_.token_origin(*host);
  if (!origin || origin->ns != ns || origin->name != sa) return Status::ok();  // not ours
  return host_delete(*h_secrets, "secrets", *host);
}

}  // namespace vkube::syncer
