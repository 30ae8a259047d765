// Service-account issuer discovery (kube's ServiceAccountIssuerDiscovery):
//   GET /.well-known/openid-configuration   the OIDC provider metadata
//   GET /openid/v1/jwks                     the key tokens are signed with
// Authorized as other non-resource URLs; RBAC's bootstrap role
// system:service-account-issuer-discovery grants them to service accounts.
#include "errors.h"
#include "jws.h"
#include "sa_token.h"
#include "server_impl.h"

namespace vkube::apiserver {

bool is_oidc_path(std::string_view path) {
  return path == kOidcConfigurationPath || path == kJwksPath;
}

http::Response handle_oidc(Server& s, std::string_view path) {
  auto key = SigningKey::cached(s.options().service_account_key);
  if (!key) return error_response(Status::not_found("the server could not find the requested resource"));
  http::Response r;
  if (path == kOidcConfigurationPath) {
    r = json_response(200, {{"issuer", kServiceAccountIssuer},
                            {"jwks_uri", std::string(kServiceAccountIssuer) + std::string(kJwksPath)},
                            {"response_types_supported", {"id_token"}},
                            {"subject_types_supported", {"public"}},
                            {"id_token_signing_alg_values_supported", {key->alg()}}});
  } else {
    r = json_response(200, {{"keys", json::array({key->jwk()})}});
    r.set_header("Content-Type", "application/jwk-set+json");
  }
  r.set_header("Cache-Control", "public, max-age=3600");
  return r;
}

}  // namespace vkube::apiserver
