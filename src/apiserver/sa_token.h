// Service-account tokens: `kubectl create token` (POST
// serviceaccounts/<name>/token, a TokenRequest) issues a signed, expiring,
// audience-bound JWT, optionally bound to a pod, secret or node; bearer
// tokens of that form authenticate as system:serviceaccount:<ns>:<name>.
// Signed with HMAC-SHA256 under the tenant's key
// (Options::service_account_key).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/apiserver/apiserver.h"

namespace vkube::apiserver {

// The audience (and issuer) of the tenant's API server: tokens for other
// audiences do not authenticate here.
inline constexpr std::string_view kServiceAccountIssuer =
    "https://kubernetes.default.svc.cluster.local";

// The user a service-account token names, when its signature, expiry,
// issuer and audience hold and what it is bound to still exists: its
// ServiceAccount (same uid, not deleted more than a minute ago) and the pod,
// secret or node it was issued for. nullopt otherwise, also when no key is
// configured. Reads the bound objects from options.backend (point reads).
std::optional<UserInfo> authenticate_service_account_token(const Options& options,
                                                           const std::string& token);

// Signs a token for `ns`/`name` (uid of the account) valid for `seconds`.
// `bound` holds the "pod", "secret" and "node" claims ({name, uid}) of a
// bound token, or is null.
std::string issue_service_account_token(const std::string& key, const std::string& ns,
                                        const std::string& name, const std::string& uid,
                                        const std::vector<std::string>& audiences, int64_t now,
                                        int64_t seconds, const nlohmann::json& bound = nullptr);

}  // namespace vkube::apiserver
