#include "sa_token.h"

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

}  // namespace

std::string issue_service_account_token(const SigningKey& key, const std::string& ns,
                                        const std::string& name, const std::string& uid,
                                        const std::vector<std::string>& audiences, int64_t now,
                                        int64_t seconds, const json& bound) {
  json header = {{"alg", key.alg()}, {"kid", key.kid()}};
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
  return signing + "." + b64url(key.sign(signing));
}

namespace {

// The claims of a token whose JWS header names this key (alg and kid) and
// whose signature holds; nullopt otherwise, with the reason in *why.
std::optional<json> verified_claims(const SigningKey& key, const std::string& token,
                                    std::string* why) {
  size_t a = token.find('.');
  size_t b = a == std::string::npos ? a : token.find('.', a + 1);
  if (b == std::string::npos || token.find('.', b + 1) != std::string::npos) {
    *why = "not a compact JWS";
    return std::nullopt;
  }
  auto header_text = base64_decode(std::string_view(token).substr(0, a));
  json header = header_text ? json::parse(*header_text, nullptr, false) : json();
  if (!header.is_object() || header.value("alg", "") != key.alg()) {
    *why = "unexpected signing algorithm";
    return std::nullopt;
  }
  if (header.contains("kid") && header["kid"] != key.kid()) {
    *why = "unknown key id";
    return std::nullopt;
  }
  auto sig = base64_decode(std::string_view(token).substr(b + 1));  // either alphabet
  if (!sig || !key.verify(std::string_view(token.data(), b), *sig)) {
    *why = "invalid signature";
    return std::nullopt;
  }
  auto payload = base64_decode(std::string_view(token).substr(a + 1, b - a - 1));
  json claims = payload ? json::parse(*payload, nullptr, false) : json();
  if (!claims.is_object()) {
    *why = "malformed claims";
    return std::nullopt;
  }
  return claims;
}

std::vector<std::string> audiences_of(const json& aud) {
  std::vector<std::string> out;
  if (aud.is_string()) out.push_back(aud.get<std::string>());
  if (aud.is_array())
    for (const json& a : aud)
      if (a.is_string()) out.push_back(a.get<std::string>());
  return out;
}

}  // namespace

std::optional<ServiceAccountToken> verify_service_account_token(
    const Options& options, const std::string& token, const std::vector<std::string>& audiences,
    std::string* why) {
  std::string ignored;
  if (why == nullptr) why = &ignored;
  auto key = SigningKey::cached(options.service_account_key);
  if (!key) {
    *why = "service account tokens are not enabled";
    return std::nullopt;
  }
  auto verified = verified_claims(*key, token, why);
  if (!verified) return std::nullopt;
  const json& claims = *verified;
  if (claims.value("iss", "") != kServiceAccountIssuer) {
    *why = "unexpected issuer";
    return std::nullopt;
  }
  const int64_t now = now_unix();
  if (!claims.contains("exp") || !claims["exp"].is_number_integer() ||
      claims["exp"].get<int64_t>() <= now) {
    *why = "service account token has expired";
    return std::nullopt;
  }
  if (claims.contains("nbf") && claims["nbf"].is_number_integer() &&
      claims["nbf"].get<int64_t>() > now + kLeewaySeconds) {
    *why = "service account token is not valid yet";
    return std::nullopt;
  }
  ServiceAccountToken out;
  for (const std::string& a : audiences_of(claims.value("aud", json())))
    if (std::find(audiences.begin(), audiences.end(), a) != audiences.end())
      out.audiences.push_back(a);
  if (out.audiences.empty()) {
    *why = "token audiences is invalid for the target audiences";
    return std::nullopt;
  }
  const json& k8s = claims.value("kubernetes.io", json::object());
  std::string ns = k8s.is_object() ? k8s.value("namespace", "") : "";
  const json sa = k8s.is_object() ? k8s.value("serviceaccount", json::object()) : json();
  if (ns.empty() || !sa.is_object() || sa.value("name", "").empty()) {
    *why = "service account token claims are incomplete";
    return std::nullopt;
  }
  // What the token is bound to must still be there: the account (a
  // recreated one has another uid), and the pod, secret or node it names.
  *why = "service account token has been invalidated";
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
  why->clear();
  const std::string name = sa.value("name", "");
  out.user = UserInfo{"system:serviceaccount:" + ns + ":" + name,
                      {"system:serviceaccounts", "system:serviceaccounts:" + ns},
                      sa.value("uid", "")};
  // kube's extra: the credential id and what the token is bound to.
  if (claims.contains("jti") && claims["jti"].is_string())
    out.extra["authentication.kubernetes.io/credential-id"] = {"JTI=" +
                                                               claims["jti"].get<std::string>()};
  for (const char* bound : {"pod", "node"}) {
    if (!k8s.contains(bound) || !k8s[bound].is_object()) continue;
    const json& ref = k8s[bound];
    const std::string prefix = std::string("authentication.kubernetes.io/") + bound;
    if (!ref.value("name", "").empty()) out.extra[prefix + "-name"] = {ref.value("name", "")};
    if (!ref.value("uid", "").empty()) out.extra[prefix + "-uid"] = {ref.value("uid", "")};
  }
  return out;
}

std::optional<UserInfo> authenticate_service_account_token(const Options& options,
                                                           const std::string& token) {
  if (options.service_account_key.empty()) return std::nullopt;
  auto verified = verify_service_account_token(options, token, {std::string(kServiceAccountIssuer)});
  if (!verified) return std::nullopt;
  return std::move(verified->user);
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
  auto key = SigningKey::cached(c.server.options().service_account_key);
  if (!key)
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
      issue_service_account_token(*key, c.info.namespace_,
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
