// Service-account tokens as kubectl and an OIDC relying party meet them:
// `kubectl create token` issues a JWS whose signature checks against the
// server's /openid/v1/jwks (verified by Python's `cryptography`), the
// discovery document names the issuer, TokenReview authenticates the token
// (also after a restart: the key lives in the data directory) and refuses a
// tampered one.
#include <csignal>

#include "fixture.h"

namespace vkube::e2e {
namespace {

std::string review_yaml(const std::string& token) {
  return "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n  token: " + token + "\n";
}

// TokenReview has no PATCH operation, so kubectl validates it client-side
// against /openapi/v2, which is not served yet: --validate=false.
nlohmann::json review(Cluster& c, const std::string& token) {
  const std::string path = c.file("review.yaml", review_yaml(token));
  Result r = c.kubectl({"create", "--validate=false", "-f", path, "-o", "json"});
  REQUIRE_THAT(r, Succeeded());
  return nlohmann::json::parse(r.out)["status"];
}

void check_tokens(Cluster& c, const std::string& alg) {
  std::string token;
  REQUIRE(eventually([&] {
    Result r = c.kubectl({"create", "token", "default"});
    token = r.out;
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    return r.exit_code == 0;
  }));

  nlohmann::json discovery = c.raw_json("/.well-known/openid-configuration");
  CHECK(discovery["issuer"] == "https://kubernetes.default.svc.cluster.local");
  CHECK(discovery["jwks_uri"] == "https://kubernetes.default.svc.cluster.local/openid/v1/jwks");
  CHECK(discovery["id_token_signing_alg_values_supported"] == nlohmann::json::array({alg}));

  Result jwks = c.kubectl({"get", "--raw", "/openid/v1/jwks"});
  REQUIRE_THAT(jwks, Succeeded());
  nlohmann::json set = nlohmann::json::parse(jwks.out);
  REQUIRE(set["keys"].size() == 1);
  CHECK(set["keys"][0]["alg"] == alg);
  CHECK(set["keys"][0]["use"] == "sig");

  Result py = c.run({kPython, std::string(VKUBE_SOURCE_DIR) + "/tests/e2e/verify_jws.py",
                     c.file("token", token), c.file("jwks.json", jwks.out)});
  CHECK_THAT(py, Succeeded());
  CHECK(py.out.find("verified " + alg) != std::string::npos);

  nlohmann::json ok = review(c, token);
  CHECK(ok["authenticated"] == true);
  CHECK(ok["user"]["username"] == "system:serviceaccount:default:default");
  CHECK(ok["audiences"] == nlohmann::json::array({"https://kubernetes.default.svc.cluster.local"}));

  std::string tampered = token;
  const size_t dot = tampered.rfind('.');
  tampered[dot + 1] = tampered[dot + 1] == 'A' ? 'B' : 'A';
  nlohmann::json bad = review(c, tampered);
  CHECK(bad["authenticated"] == false);
  CHECK(bad["error"].get<std::string>().find("invalid bearer token") != std::string::npos);

  // The signing key is kept in the data directory: a restarted server still
  // accepts the token it issued before.
  c.restart(SIGTERM);
  CHECK(review(c, token)["authenticated"] == true);
}

TEST_CASE("kubectl: ES256 service-account tokens verify against the JWKS", "[e2e][tokens]") {
  Cluster c;
  check_tokens(c, "ES256");
}

TEST_CASE("kubectl: RS256 service-account tokens verify against the JWKS", "[e2e][tokens]") {
  Cluster c(Cluster::Serve{{"--service-account-signing-alg", "RS256"}});
  check_tokens(c, "RS256");
}

}  // namespace
}  // namespace vkube::e2e
