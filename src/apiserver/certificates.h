// certificates.k8s.io CertificateSigningRequests: their strategy (kube's
// csrStrategy, csrStatusStrategy and csrApprovalStrategy), validation, and
// the admission plugins kube runs on them (CertificateApproval,
// CertificateSigning, CertificateSubjectRestriction). Every function is a
// no-op (false / nullopt) for other kinds, so the verb handlers call them
// without looking at the kind.
#pragma once

#include <optional>
#include <string>

#include "builtin/field_errors.h"
#include "errors.h"
#include "vkube/api/resource.h"

namespace vkube::apiserver {

struct Context;

// True for certificates.k8s.io certificatesigningrequests.
bool is_csr(const api::Resource& r);

// PrepareForCreate: spec.username, uid and groups become the requesting
// user's (whatever the body said; extra is dropped), and status starts empty.
void prepare_csr_create(const Context& c, json& obj);

// PrepareForUpdate of a CSR through `c`'s subresource: the object itself
// keeps its spec and status; /status keeps the spec and the Approved and
// Denied conditions; /approval takes only the conditions. Condition
// timestamps and statuses are defaulted as kube does. Returns false (and
// leaves `next` alone) for other kinds.
bool prepare_csr_update(const Context& c, const json& cur, json& next);

// Validation (422, kube's wording) and admission (403) of a CSR create (old
// null) or update through any subresource: the request must be a PEM
// certificate request with a valid signature, signerName a qualified name,
// usages known and unique, expirationSeconds >= 600, conditions well formed
// and never removed; /approval needs the `approve` verb and /status (when it
// changes something) the `sign` verb on certificates.k8s.io signers named
// after the signer (or "<domain>/*"); kubernetes.io/kube-apiserver-client
// requests may not ask for system:masters.
std::optional<ApiError> admit_csr(Context& c, const json& obj, const json* old);

// The validation part of admit_csr on its own (unit tests): `sub` is the
// subresource of an update ("" for the object, "status" or "approval").
void validate_csr(const json& obj, const json* old, const std::string& sub, FieldErrors& errs);

}  // namespace vkube::apiserver
