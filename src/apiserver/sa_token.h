// Service-account tokens: `kubectl create token` (POST
// serviceaccounts/<name>/token, a TokenRequest) issues a signed, expiring
// JWT; bearer tokens of that form authenticate as
// system:serviceaccount:<ns>:<name>. Signed with HMAC-SHA256 under the
// tenant's key (Options::service_account_key).
#pragma once

#include <optional>
#include <string>

#include "vkube/apiserver/apiserver.h"

namespace vkube::apiserver {

// The user a service-account token names, when its signature and expiry
// hold; nullopt otherwise (also when no key is configured).
std::optional<UserInfo> authenticate_service_account_token(const std::string& key,
                                                           const std::string& token);

// Signs a token for `ns`/`name` (uid of the account) valid for `seconds`.
std::string issue_service_account_token(const std::string& key, const std::string& ns,
                                        const std::string& name, const std::string& uid,
                                        const std::vector<std::string>& audiences, int64_t now,
                                        int64_t seconds);

}  // namespace vkube::apiserver
