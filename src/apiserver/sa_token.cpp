#include "sa_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include "codec.h"
#include "object.h"
#include "registry.h"
#include "server_impl.h"
#include "vkube/common/base64.h"

namespace vkube::apiserver {

namespace {

// kube's --service-account-max-token-expiration is unset by default; only
// the validation's bound applies.
constexpr int64_t kMinExpirationSeconds = 600;
constexpr int64_t kMaxExpirationSeconds = int64_t{1} << 32;
constexpr int64_t kDefaultExpirationSeconds = 3600;
// A bound object deleted less than this long ago still validates (kube's leeway).
constexpr int64_t kLeewaySeconds = 60;

std::string hmac(const std::string& key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string b64url(std::string_view s) {
  return base64_encode(s, /*url_safe=*/true, /*pad=*/false);
}

// The legacy-group kind of `plural` (pods, secrets, nodes, serviceaccounts).
const Kind& core_kind(std::string_view plural) {
  for (const Kind& k : builtin::builtin_kinds())
    if (k.resource.gv.group.empty() && k.resource.plural == plural) return k;
  std::abort();  // invariant: the built-in table has these kinds
}

// The stored object, or nullopt when it does not exist (or cannot be read).
std::optional<json> read_stored(storage::Backend& backend, std::string_view plural,
                                const std::string& ns, const std::string& name) {
  auto kv = backend.get(Registry::key(core_kind(plural), ns, name));
  if (!kv.is_ok()) return std::nullopt;
  auto obj = decode_stored(*kv);
  if (!obj.is_ok()) return std::nullopt;
  return std::move(obj).value();
}

// The object a claim ({name, uid}) names exists with that uid and was not
// deleted more than the leeway ago.
bool claim_holds(storage::Backend& backend, std::string_view plural, const std::string& ns,
                 const json& claim, int64_t now) {
  if (!claim.is_object()) return false;
  auto obj = read_stored(backend, plural, plural == "nodes" ? "" : ns, claim.value("name", ""));
  if (!obj || str_at(*obj, "metadata", "uid") != claim.value("uid", "")) return false;
  std::string deleted = str_at(*obj, "metadata", "deletionTimestamp");
  if (deleted.empty()) return true;
  auto at = parse_rfc3339(deleted);
  return at && *at >= now - kLeewaySeconds;
}

bool has_audience(const json& aud, std::string_view want) {
  if (aud.is_string()) return aud.get<std::string>() == want;
  if (!aud.is_array()) return false;
  return std::any_of(aud.begin(), aud.end(),
                     [&](const json& a) { return a.is_string() && a.get<std::string>() == want; });
}

}  // namespace

std::string issue_service_account_token(const std::string& key, const std::string& ns,
                                        const std::string& name, const std::string& uid,
                                        const std::vector<std::string>& audiences, int64_t now,
                                        int64_t seconds, const json& bound) {
  json header = {{"alg", "HS256"}, {"typ", "JWT"}};
  json k8s = {{"namespace", ns}, {"serviceaccount", {{"name", name}, {"uid", uid}}}};
  if (bound.is_object())
    for (const auto& [k, v] : bound.items()) k8s[k] = v;
  json claims = {{"iss", kServiceAccountIssuer},
                 {"sub", "system:serviceaccount:" + ns + ":" + name},
                 {"aud", audiences},
                 {"iat", now},
                 {"nbf", now},
                 {"exp", now + seconds},
                 {"jti", new_uid()},
                 {"kubernetes.io", std::move(k8s)}};
  std::string signing = b64url(header.dump()) + "." + b64url(claims.dump());
  return signing + "." + b64url(hmac(key, signing));
}

std::optional<UserInfo> authenticate_service_account_token(const Options& options,
                                                           const std::string& token) {
  const std::string& key = options.service_account_key;
  if (key.empty()) return std::nullopt;
  size_t a = token.find('.');
  size_t b = a == std::string::npos ? a : token.find('.', a + 1);
  if (b == std::string::npos) return std::nullopt;
  std::string_view signing(token.data(), b);
  auto sig = base64_decode(token.substr(b + 1));  // either alphabet, unpadded too
  std::string want = hmac(key, signing);
  if (!sig || sig->size() != want.size() ||
      CRYPTO_memcmp(sig->data(), want.data(), want.size()) != 0)
    return std::nullopt;
  auto payload = base64_decode(token.substr(a + 1, b - a - 1));
  if (!payload) return std::nullopt;
  json claims = json::parse(*payload, nullptr, false);
  if (!claims.is_object() || !claims.contains("exp") || !claims["exp"].is_number_integer())
    return std::nullopt;
  const int64_t now = now_unix();
  if (claims["exp"].get<int64_t>() <= now) return std::nullopt;
  if (claims.contains("nbf") && claims["nbf"].is_number_integer() &&
      claims["nbf"].get<int64_t>() > now + kLeewaySeconds)
    return std::nullopt;
  if (claims.value("iss", "") != kServiceAccountIssuer) return std::nullopt;
  if (!has_audience(claims.value("aud", json()), kServiceAccountIssuer)) return std::nullopt;
  const json& k8s = claims.value("kubernetes.io", json::object());
  if (!k8s.is_object()) return std::nullopt;
  std::string ns = k8s.value("namespace", "");
  const json sa = k8s.value("serviceaccount", json::object());
  if (ns.empty() || !sa.is_object() || sa.value("name", "").empty()) return std::nullopt;
  // What the token is bound to must still be there: the account (a
  // recreated one has another uid), and the pod, secret or node it names.
  if (options.backend == nullptr) return std::nullopt;
  storage::Backend& backend = *options.backend;
  if (!claim_holds(backend, "serviceaccounts", ns, sa, now)) return std::nullopt;
  if (k8s.contains("pod")) {
    if (!claim_holds(backend, "pods", ns, k8s["pod"], now)) return std::nullopt;
  } else if (k8s.contains("node") && !claim_holds(backend, "nodes", "", k8s["node"], now)) {
    return std::nullopt;  // a pod-bound token's node is informational only
  }
  if (k8s.contains("secret") && !claim_holds(backend, "secrets", ns, k8s["secret"], now))
    return std::nullopt;
  const std::string name = sa.value("name", "");
  return UserInfo{"system:serviceaccount:" + ns + ":" + name,
                  {"system:serviceaccounts", "system:serviceaccounts:" + ns},
                  sa.value("uid", "")};
}

namespace {

api::Resource token_request_resource() {
  api::Resource r;
  r.gv = {"authentication.k8s.io", "v1"};
  r.kind = "TokenRequest";
  r.plural = "tokenrequests";
  return r;
}

// The claims of spec.boundObjectRef (kube's TokenREST.Create): the object
// must exist, with the uid given (if any). The error to answer otherwise.
std::optional<ApiError> bound_claims(Context& c, const json& ref, json* claims) {
  const std::string api_version = ref.value("apiVersion", "");
  const std::string kind = ref.value("kind", ""), name = ref.value("name", "");
  const size_t slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const std::string version =
      slash == std::string::npos ? api_version : api_version.substr(slash + 1);
  const std::string plural = kind == "Pod"      ? "pods"
                             : kind == "Secret" ? "secrets"
                             : kind == "Node"   ? "nodes"
                                                : "";
  if (!group.empty() || plural.empty())
    return bad_request("cannot bind token for serviceaccount \"" + c.info.name +
                       "\" to object of type " + group + "/" + version + ", Kind=" + kind);
  auto obj =
      read_stored(c.server.backend(), plural, plural == "nodes" ? "" : c.info.namespace_, name);
  if (!obj) return not_found(core_kind(plural).resource, name);
  const std::string uid = str_at(*obj, "metadata", "uid");
  if (!ref.value("uid", "").empty() && ref.value("uid", "") != uid) {
    api::Resource as_kind;  // kube names the resource by its kind here
    as_kind.plural = kind;
    return conflict(as_kind, name,
                    "the UID in the bound object reference (" + ref.value("uid", "") +
                        ") does not match the UID in record. The object might have been deleted "
                        "and then recreated");
  }
  const char* claim = plural == "pods" ? "pod" : plural == "secrets" ? "secret" : "node";
  *claims = {{claim, {{"name", name}, {"uid", uid}}}};
  if (plural == "pods") {  // kube's ServiceAccountTokenPodNodeInfo
    std::string node = str_at(*obj, "spec", "nodeName");
    if (!node.empty()) {
      json n = {{"name", node}};
      if (auto found = read_stored(c.server.backend(), "nodes", "", node))
        n["uid"] = str_at(*found, "metadata", "uid");
      (*claims)["node"] = std::move(n);
    }
  }
  return std::nullopt;
}

}  // namespace

// POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token
http::Response handle_token_request(Context& c) {
  if (c.server.options().service_account_key.empty())
    return error_response(
        Status::not_found("service account tokens are not enabled on this server"));
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
  if (!spec.is_object()) spec = json::object();
  int64_t seconds = kDefaultExpirationSeconds;
  if (spec.contains("expirationSeconds") && spec["expirationSeconds"].is_number_integer())
    seconds = spec["expirationSeconds"].get<int64_t>();
  FieldErrors errs;
  if (seconds < kMinExpirationSeconds)
    errs.push_back({FieldError::Type::kInvalid, "spec.expirationSeconds",
                    "may not specify a duration less than 10 minutes", seconds});
  if (seconds > kMaxExpirationSeconds)
    errs.push_back({FieldError::Type::kInvalid, "spec.expirationSeconds",
                    "may not specify a duration larger than 2^32 seconds", seconds});
  if (!errs.empty()) return error_response(invalid(token_request_resource(), c.info.name, errs));
  std::vector<std::string> audiences;
  if (spec.contains("audiences") && spec["audiences"].is_array())
    for (const json& a : spec["audiences"])
      if (a.is_string()) audiences.push_back(a.get<std::string>());
  if (audiences.empty()) audiences.emplace_back(kServiceAccountIssuer);
  json ref = spec.value("boundObjectRef", json());
  json bound;
  if (ref.is_object()) {
    if (auto error = bound_claims(c, ref, &bound)) return error_response(*error);
  } else {
    ref = nullptr;
  }
  const int64_t now = now_unix();
  std::string uid = str_at(*sa, "metadata", "uid");
  std::string token =
      issue_service_account_token(c.server.options().service_account_key, c.info.namespace_,
                                  c.info.name, uid, audiences, now, seconds, bound);
  json out = {
      {"kind", "TokenRequest"},
      {"apiVersion", "authentication.k8s.io/v1"},
      {"metadata",
       {{"name", c.info.name}, {"namespace", c.info.namespace_}, {"creationTimestamp", nullptr}}},
      {"spec", {{"audiences", audiences}, {"expirationSeconds", seconds}, {"boundObjectRef", ref}}},
      {"status", {{"token", token}, {"expirationTimestamp", format_rfc3339(now + seconds)}}}};
  return json_response(201, out);
}

}  // namespace vkube::apiserver
