// Service-account tokens: `kubectl create token` (POST
// serviceaccounts/<name>/token, a TokenRequest) issues a signed, expiring,
// audience-bound JWT, optionally bound to a pod, secret or node; bearer
// tokens of that form authenticate as system:serviceaccount:<ns>:<name>.
// Signed as JWS ES256 or RS256 (jws.h) with the tenant's key
// (Options::service_account_key, a PEM private key); the header's kid names
// the key /openid/v1/jwks publishes. Tokens of other algorithms (the HMAC
// tokens of earlier vkube versions) do not authenticate.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jws.h"
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

// What a verified token says (TokenReview's status).
struct ServiceAccountToken {
  UserInfo user;
  std::vector<std::string> audiences;  // the token's audiences among those asked for
  std::map<std::string, std::vector<std::string>> extra;  // credential-id, pod/node name, uid
};

// Verifies `token` as authenticate_service_account_token does, for any of
// `audiences`; nullopt with the reason in *why (may be null) otherwise.
std::optional<ServiceAccountToken> verify_service_account_token(
    const Options& options, const std::string& token, const std::vector<std::string>& audiences,
    std::string* why = nullptr);

// Signs (with `key`) a token for `ns`/`name` (uid of the account) valid for `seconds`.
// `bound` holds the "pod", "secret" and "node" claims ({name, uid}) of a
// bound token, or is null.
std::string issue_service_account_token(const SigningKey& key, const std::string& ns,
                                        const std::string& name, const std::string& uid,
                                        const std::vector<std::string>& audiences, int64_t now,
                                        int64_t seconds, const nlohmann::json& bound = nullptr);

}  // namespace vkube::apiserver
