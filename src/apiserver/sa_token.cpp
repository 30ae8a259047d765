#include "sa_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "codec.h"
#include "object.h"
#include "server_impl.h"
#include "vkube/common/base64.h"

namespace vkube::apiserver {

namespace {

constexpr std::string_view kIssuer = "https://kubernetes.default.svc.cluster.local";

std::string hmac(const std::string& key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string b64url(std::string_view s) { return base64_encode(s, /*url_safe=*/true, /*pad=*/false); }

}  // namespace

std::string issue_service_account_token(const std::string& key, const std::string& ns,
                                        const std::string& name, const std::string& uid,
                                        const std::vector<std::string>& audiences, int64_t now,
                                        int64_t seconds) {
  json header = {{"alg", "HS256"}, {"typ", "JWT"}};
  json claims = {{"iss", kIssuer},
                 {"sub", "system:serviceaccount:" + ns + ":" + name},
                 {"aud", audiences},
                 {"iat", now},
                 {"nbf", now},
                 {"exp", now + seconds},
                 {"kubernetes.io", {{"namespace", ns}, {"serviceaccount", {{"name", name}, {"uid", uid}}}}}};
  std::string signing = b64url(header.dump()) + "." + b64url(claims.dump());
  return signing + "." + b64url(hmac(key, signing));
}

std::optional<UserInfo> authenticate_service_account_token(const std::string& key,
                                                           const std::string& token) {
  if (key.empty()) return std::nullopt;
  size_t a = token.find('.');
  size_t b = a == std::string::npos ? a : token.find('.', a + 1);
  if (b == std::string::npos) return std::nullopt;
  std::string_view signing(token.data(), b);
  auto sig = base64_decode(token.substr(b + 1));  // either alphabet, unpadded too
  std::string want = hmac(key, signing);
  if (!sig || sig->size() != want.size() || CRYPTO_memcmp(sig->data(), want.data(), want.size()) != 0)
    return std::nullopt;
  auto payload = base64_decode(token.substr(a + 1, b - a - 1));
  if (!payload) return std::nullopt;
  json claims = json::parse(*payload, nullptr, false);
  if (!claims.is_object() || !claims.contains("exp") || !claims["exp"].is_number_integer())
    return std::nullopt;
  if (claims["exp"].get<int64_t>() <= now_unix()) return std::nullopt;
  const json& k8s = claims.value("kubernetes.io", json::object());
  std::string ns = k8s.value("namespace", "");
  std::string name = k8s.value("serviceaccount", json::object()).value("name", "");
  std::string uid = k8s.value("serviceaccount", json::object()).value("uid", "");
  if (ns.empty() || name.empty()) return std::nullopt;
  return UserInfo{"system:serviceaccount:" + ns + ":" + name,
                  {"system:serviceaccounts", "system:serviceaccounts:" + ns},
                  uid};
}

// POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token
http::Response handle_token_request(Context& c) {
  if (c.server.options().service_account_key.empty())
    return error_response(Status::not_found("service account tokens are not enabled on this server"));
  auto sa = read_object(c, c.info.name);
  if (!sa.is_ok()) return error_response(storage_error(c, sa.status(), c.info.name));
  json body = json::object();
  if (!c.req.body.empty()) {
    auto decoded = decode_request_body(c.req, /*custom_resource=*/false);  // kubectl sends protobuf
    if (!decoded.is_ok()) return error_response(decoded.status());
    body = std::move(*decoded);
    if (!body.is_object())
      return error_response(Status::bad_request("the body of the request must be a TokenRequest"));
  }
  json spec = body.value("spec", json::object());
  int64_t seconds = 3600;
  if (spec.contains("expirationSeconds") && spec["expirationSeconds"].is_number_integer())
    seconds = spec["expirationSeconds"].get<int64_t>();
  if (seconds < 600) {
    api::Resource token_request;
    token_request.gv = {"authentication.k8s.io", "v1"};
    token_request.kind = "TokenRequest";
    token_request.plural = "tokenrequests";
    return error_response(invalid(token_request, c.info.name,
                                  {{FieldError::Type::kInvalid, "spec.expirationSeconds",
                                    "may not specify a duration less than 10 minutes", seconds}}));
  }
  if (seconds > 48 * 3600) seconds = 48 * 3600;
  std::vector<std::string> audiences;
  if (spec.contains("audiences") && spec["audiences"].is_array())
    for (const json& a : spec["audiences"])
      if (a.is_string()) audiences.push_back(a.get<std::string>());
  if (audiences.empty()) audiences.push_back(std::string(kIssuer));
  const int64_t now = now_unix();
  std::string uid = str_at((*sa)["metadata"], "uid");
  std::string token = issue_service_account_token(c.server.options().service_account_key, c.info.namespace_,
                                                  c.info.name, uid, audiences, now, seconds);
  json out = {{"kind", "TokenRequest"},
              {"apiVersion", "authentication.k8s.io/v1"},
              {"metadata", {{"name", c.info.name}, {"namespace", c.info.namespace_}, {"creationTimestamp", nullptr}}},
              {"spec", {{"audiences", audiences}, {"expirationSeconds", seconds}, {"boundObjectRef", nullptr}}},
              {"status", {{"token", token}, {"expirationTimestamp", format_rfc3339(now + seconds)}}}};
  return json_response(201, out);
}

}  // namespace vkube::apiserver
