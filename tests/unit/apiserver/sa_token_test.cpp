// Service-account tokens as JWS ES256/RS256: what verifies and what does not
// (tampering, another key, expiry, audience), the issuer discovery documents
// and TokenReview.
#include <catch2/catch.hpp>

#include <chrono>

#include "../../../src/apiserver/jws.h"
#include "../../../src/apiserver/sa_token.h"
#include "support/api_server.h"
#include "support/sa_key.h"
#include "vkube/common/base64.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;
using testing::ApiServerOverStore;

struct Answer {
  int code;
  json body;
  std::string content_type;
};

struct Tenant {
  std::string pem;
  ApiServerOverStore server;
  explicit Tenant(const std::string& alg)
      : pem(testing::service_account_key(alg)), server([&] {
          Options o;
          o.service_account_key = pem;
          o.tokens["static-secret"] = UserInfo{"alice", {"devs"}, "u-1"};
          return o;
        }()) {
    REQUIRE(server.api->ensure_bootstrap_policy().is_ok());
    create("/api/v1/namespaces", {{"metadata", {{"name", "w"}}}});
    sa_uid = create("/api/v1/namespaces/w/serviceaccounts", {{"metadata", {{"name", "robot"}}}})
                 ["metadata"]["uid"];
  }
  std::string sa_uid;

  Answer call(const std::string& method, const std::string& target, const json& body = nullptr,
              const std::string& token = "") {
    http::Request req = testing::request(method, target);
    if (token.empty())
      req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    else
      req.headers.push_back({"Authorization", "Bearer " + token});
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.push_back({"Content-Type", "application/json"});
    }
    http::Response resp = server.api->handle(req);
    std::string type;
    for (const auto& h : resp.headers)
      if (h.name == "Content-Type") type = h.value;
    Answer a{resp.status, json::parse(resp.body, nullptr, false), type};
    return a;
  }
  json create(const std::string& collection, const json& obj) {
    auto a = call("POST", collection, obj);
    INFO(a.body.dump());
    REQUIRE(a.code == 201);
    return a.body;
  }
  std::string token(const json& spec = json::object()) {
    auto a = call("POST", "/api/v1/namespaces/w/serviceaccounts/robot/token",
                  {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenRequest"},
                   {"spec", spec}});
    INFO(a.body.dump());
    REQUIRE(a.code == 201);
    return a.body["status"]["token"];
  }
  json review(const std::string& token, const json& audiences = nullptr) {
    json spec = {{"token", token}};
    if (!audiences.is_null()) spec["audiences"] = audiences;
    auto a = call("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                  {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"},
                   {"spec", spec}});
    INFO(a.body.dump());
    REQUIRE(a.code == 201);
    return a.body["status"];
  }
  int whoami(const std::string& token) {
    return call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}}, token)
        .code;
  }
};

json part(const std::string& token, int i) {
  size_t a = token.find('.'), b = token.find('.', a + 1);
  std::string s = i == 0 ? token.substr(0, a) : token.substr(a + 1, b - a - 1);
  return json::parse(*base64_decode(s));
}

TEST_CASE("service-account tokens are JWS ES256 or RS256 with the key's kid", "[tokens]") {
  const std::string alg = GENERATE(std::string("ES256"), std::string("RS256"));
  Tenant t(alg);
  auto key = SigningKey::parse(t.pem);
  REQUIRE(key.is_ok());
  const std::string token = t.token();
  json header = part(token, 0);
  CHECK(header == json{{"alg", alg}, {"kid", (*key)->kid()}});
  json claims = part(token, 1);
  CHECK(claims["iss"] == "https://kubernetes.default.svc.cluster.local");
  CHECK(claims["sub"] == "system:serviceaccount:w:robot");
  CHECK(claims["kubernetes.io"]["serviceaccount"] == json{{"name", "robot"}, {"uid", t.sa_uid}});
  CHECK(claims["jti"].is_string());
  CHECK(t.whoami(token) == 201);

  // A changed signature, payload or header does not verify.
  std::string tampered = token;
  tampered[tampered.size() - 5] = tampered[tampered.size() - 5] == 'A' ? 'B' : 'A';
  CHECK(t.whoami(tampered) == 401);
  json forged = claims;
  forged["sub"] = "system:serviceaccount:kube-system:admin";
  size_t a = token.find('.'), b = token.find('.', a + 1);
  std::string swapped = token.substr(0, a + 1) +
                        base64_encode(forged.dump(), true, false) + token.substr(b);
  CHECK(t.whoami(swapped) == 401);
  std::string none = base64_encode(R"({"alg":"none"})", true, false) + token.substr(a, b - a) + ".";
  CHECK(t.whoami(none) == 401);
  CHECK(t.review(tampered)["error"] == "[invalid bearer token, invalid signature]");

  // Another key's token (another kid) is refused.
  const std::string other_alg = alg == "ES256" ? "RS256" : "ES256";
  auto other = SigningKey::parse(testing::service_account_key(other_alg));
  REQUIRE(other.is_ok());
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::string foreign = issue_service_account_token(**other, "w", "robot", t.sa_uid,
                                                    {"https://kubernetes.default.svc.cluster.local"},
                                                    now, 3600);
  CHECK(t.whoami(foreign) == 401);
  CHECK(t.review(foreign)["authenticated"] == false);

  // Expired tokens and other audiences.
  std::string expired = issue_service_account_token(
      **key, "w", "robot", t.sa_uid, {"https://kubernetes.default.svc.cluster.local"},
      now - 7200, 3600);
  CHECK(t.whoami(expired) == 401);
  CHECK(t.review(expired)["error"] == "[invalid bearer token, service account token has expired]");
  std::string vault = t.token({{"audiences", {"vault"}}});
  CHECK(t.whoami(vault) == 401);
  json ok = t.review(vault, {"vault"});
  CHECK(ok["authenticated"] == true);
  CHECK(ok["audiences"] == json::array({"vault"}));
}

TEST_CASE("the issuer discovery documents publish the signing key", "[tokens]") {
  const std::string alg = GENERATE(std::string("ES256"), std::string("RS256"));
  Tenant t(alg);
  auto key = SigningKey::parse(t.pem);
  REQUIRE(key.is_ok());
  Answer conf = t.call("GET", "/.well-known/openid-configuration");
  REQUIRE(conf.code == 200);
  CHECK(conf.body["issuer"] == "https://kubernetes.default.svc.cluster.local");
  CHECK(conf.body["jwks_uri"] == "https://kubernetes.default.svc.cluster.local/openid/v1/jwks");
  CHECK(conf.body["response_types_supported"] == json::array({"id_token"}));
  CHECK(conf.body["subject_types_supported"] == json::array({"public"}));
  CHECK(conf.body["id_token_signing_alg_values_supported"] == json::array({alg}));
  Answer jwks = t.call("GET", "/openid/v1/jwks");
  REQUIRE(jwks.code == 200);
  CHECK(jwks.content_type == "application/jwk-set+json");
  REQUIRE(jwks.body["keys"].size() == 1);
  const json& k = jwks.body["keys"][0];
  CHECK(k["kid"] == (*key)->kid());
  CHECK(k["alg"] == alg);
  CHECK(k["use"] == "sig");
  if (alg == "ES256") {
    CHECK(k["kty"] == "EC");
    CHECK(k["crv"] == "P-256");
    CHECK(base64_decode(k["x"].get<std::string>())->size() == 32);
    CHECK(base64_decode(k["y"].get<std::string>())->size() == 32);
  } else {
    CHECK(k["kty"] == "RSA");
    CHECK(base64_decode(k["n"].get<std::string>())->size() == 256);
    CHECK(k["e"] == "AQAB");
  }
  // Service accounts may read them (system:service-account-issuer-discovery);
  // a user without that role may not.
  CHECK(t.call("GET", "/openid/v1/jwks", nullptr, t.token()).code == 200);
  CHECK(t.call("GET", "/.well-known/openid-configuration", nullptr, "static-secret").code == 403);
}

TEST_CASE("TokenReview tells the user of service-account and static tokens", "[tokens]") {
  Tenant t("ES256");
  json pod = t.create("/api/v1/namespaces/w/pods",
                      {{"metadata", {{"name", "p"}}},
                       {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}});
  std::string token =
      t.token({{"boundObjectRef", {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "p"}}}});
  json st = t.review(token);
  CHECK(st["authenticated"] == true);
  CHECK(st["audiences"] == json::array({"https://kubernetes.default.svc.cluster.local"}));
  CHECK(st["user"]["username"] == "system:serviceaccount:w:robot");
  CHECK(st["user"]["uid"] == t.sa_uid);
  CHECK(st["user"]["groups"] ==
        json::array({"system:serviceaccounts", "system:serviceaccounts:w", "system:authenticated"}));
  CHECK(st["user"]["extra"]["authentication.kubernetes.io/pod-name"] == json::array({"p"}));
  CHECK(st["user"]["extra"]["authentication.kubernetes.io/pod-uid"] ==
        json::array({pod["metadata"]["uid"]}));
  CHECK(st["user"]["extra"]["authentication.kubernetes.io/credential-id"][0]
            .get<std::string>()
            .starts_with("JTI="));

  json stat = t.review("static-secret");
  CHECK(stat["authenticated"] == true);
  CHECK(stat["user"]["username"] == "alice");
  CHECK(stat["user"]["groups"] == json::array({"devs", "system:authenticated"}));
  CHECK(t.review("static-secret", {"vault"})["authenticated"] == false);
  json bad = t.review("not-a-token");
  CHECK(bad["authenticated"] == false);
  CHECK(bad["user"] == json::object());
  CHECK(bad["error"].get<std::string>().starts_with("[invalid bearer token"));

  auto empty = t.call("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                      {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"},
                       {"spec", json::object()}});
  CHECK(empty.code == 400);
  // Only who may create tokenreviews (cluster-admin, system:auth-delegator).
  auto denied = t.call("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                       {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"},
                        {"spec", {{"token", token}}}},
                       token);
  CHECK(denied.code == 403);
}

TEST_CASE("a data directory keeps its service-account key", "[tokens]") {
  testing::TempDir dir;
  auto first = pki::ensure_service_account_key(dir.path(), "ES256");
  REQUIRE(first.is_ok());
  auto again = pki::ensure_service_account_key(dir.path(), "ES256");
  REQUIRE(again.is_ok());
  CHECK(*first == *again);
  auto rsa = pki::ensure_service_account_key(dir.path(), "RS256");
  REQUIRE(rsa.is_ok());
  CHECK(*rsa != *first);
  CHECK(SigningKey::parse(*rsa).value()->alg() == "RS256");
  CHECK(pki::ensure_service_account_key(dir.path(), "HS256").status().code() == Code::kInvalid);
}

TEST_CASE("token issue and verify cost", "[tokens][!benchmark]") {
  for (const char* alg : {"ES256", "RS256"}) {
    auto key = SigningKey::parse(testing::service_account_key(alg));
    REQUIRE(key.is_ok());
    constexpr int kOps = 2000;
    std::string token;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kOps; ++i)
      token = issue_service_account_token(**key, "w", "robot", "uid", {"aud"}, 0, 3600);
    auto t1 = std::chrono::steady_clock::now();
    size_t b = token.rfind('.');
    auto sig = base64_decode(token.substr(b + 1));
    int ok = 0;
    for (int i = 0; i < kOps; ++i) ok += (*key)->verify(std::string_view(token).substr(0, b), *sig);
    auto t2 = std::chrono::steady_clock::now();
    CHECK(ok == kOps);
    auto us = [](auto d) { return std::chrono::duration<double, std::micro>(d).count() / kOps; };
    WARN(alg << ": issue " << us(t1 - t0) << " us/op, verify " << us(t2 - t1) << " us/op");
  }
}

}  // namespace
}  // namespace vkube::apiserver
