// The reviews: POSTs answered by the authorizer and never stored.
//   authorization.k8s.io/v1 SelfSubjectAccessReview   (kubectl auth can-i)
//   authorization.k8s.io/v1 SelfSubjectRulesReview    (kubectl auth can-i --list)
//   authorization.k8s.io/v1 SubjectAccessReview, LocalSubjectAccessReview
//   authentication.k8s.io/v1 SelfSubjectReview        (kubectl auth whoami)
//   authentication.k8s.io/v1 TokenReview              (a bearer token's user)
#include "authz.h"
#include "object.h"
#include "sa_token.h"
#include "server_impl.h"

namespace vkube::apiserver {

namespace {

std::string str(const json& obj, const char* field) {
  if (!obj.is_object()) return "";
  auto it = obj.find(field);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> strings(const json& obj, const char* field) {
  std::vector<std::string> out;
  if (!obj.is_object()) return out;
  auto it = obj.find(field);
  if (it == obj.end() || !it->is_array()) return out;
  for (const json& v : *it)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

bool present(const json& spec, const char* field) {
  return spec.is_object() && spec.contains(field) && !spec[field].is_null();
}

// The attributes an access review asks about (its spec), for `user`; field
// errors worded as kube's ValidateSubjectAccessReviewSpec.
rbac::Attributes review_attributes(const json& spec, const UserInfo& user, FieldErrors& errs) {
  const bool res = present(spec, "resourceAttributes");
  const bool non_res = present(spec, "nonResourceAttributes");
  if (!res && !non_res) {
    errs.push_back({FieldError::Type::kRequired,
                    "spec.resourceAttributes",
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                    {}});
  } else if (res && non_res) {
    errs.push_back({FieldError::Type::kInvalid, "spec.nonResourceAttributes",
                    "cannot be specified in combination with resourceAttributes",
                    spec["nonResourceAttributes"]});
  }
  rbac::Attributes a;
  a.user = user.name;
  a.groups = user.groups;
  if (res) {
    const json& ra = spec["resourceAttributes"];
    a.resource_request = true;
    a.verb = str(ra, "verb");
    a.api_group = str(ra, "group");
    a.resource = str(ra, "resource");
    a.subresource = str(ra, "subresource");
    a.ns = str(ra, "namespace");
    a.name = str(ra, "name");
  } else if (non_res) {
    const json& na = spec["nonResourceAttributes"];
    a.verb = str(na, "verb");
    a.path = str(na, "path");
  }
  return a;
}

json access_status(const rbac::Decision& d) {
  json status = {{"allowed", d.allowed}};
  if (!d.reason.empty()) status["reason"] = d.reason;
  return status;
}

json user_info(const UserInfo& u) {
  json info = {{"username", u.name}, {"groups", u.groups}};
  if (!u.uid.empty()) info["uid"] = u.uid;
  return info;
}

json rules_status(Context& c, const json& spec) {
  auto policy = c.server.authorizer().policy();
  json resource_rules = json::array();
  json non_resource_rules = json::array();
  json status = {{"incomplete", false}};
  if (!policy.is_ok()) {
    status["incomplete"] = true;
    status["evaluationError"] = policy.status().message();
  } else {
    rbac::UserRules found =
        (*policy)->rules_for(c.user.name, c.user.groups, str(spec, "namespace"));
    for (const rbac::PolicyRule& r : found.rules) {
      if (!r.resources.empty()) {
        json rule = {{"verbs", r.verbs}, {"apiGroups", r.api_groups}, {"resources", r.resources}};
        if (!r.resource_names.empty()) rule["resourceNames"] = r.resource_names;
        resource_rules.push_back(rule);
      }
      if (!r.non_resource_urls.empty())
        non_resource_rules.push_back(
            {{"verbs", r.verbs}, {"nonResourceURLs", r.non_resource_urls}});
    }
    if (!found.errors.empty()) {
      std::string joined;
      for (size_t i = 0; i < found.errors.size(); ++i) joined += (i ? ", " : "") + found.errors[i];
      status["incomplete"] = true;
      status["evaluationError"] = found.errors.size() == 1 ? joined : "[" + joined + "]";
    }
  }
  status["resourceRules"] = resource_rules;
  status["nonResourceRules"] = non_resource_rules;
  return status;
}

// Sets the status of an access review, or returns the error for its request.
std::optional<ApiError> access_review_status(Context& c, const json& obj, json* status) {
  const std::string& kind = c.resource().kind;
  const json spec = obj.value("spec", json::object());
  const bool local = kind == "LocalSubjectAccessReview";
  const bool other_user = local || kind == "SubjectAccessReview";
  const UserInfo subject =
      other_user ? UserInfo{str(spec, "user"), strings(spec, "groups"), str(spec, "uid")} : c.user;
  FieldErrors errs;
  rbac::Attributes a = review_attributes(spec, subject, errs);
  if (other_user && subject.name.empty() && subject.groups.empty())
    errs.push_back({FieldError::Type::kInvalid, "spec.user",
                    "at least one of user or group must be specified", ""});
  if (local && present(spec, "nonResourceAttributes"))
    errs.push_back({FieldError::Type::kInvalid, "spec.nonResourceAttributes",
                    "disallowed on this kind of request", spec["nonResourceAttributes"]});
  if (!errs.empty()) return invalid(c.resource(), name_of(obj), errs);
  if (local) {
    if (a.ns.empty()) a.ns = c.info.namespace_;
    if (a.ns != c.info.namespace_)
      return Status::bad_request("spec.resourceAttributes.namespace must match namespace: " +
                                 c.info.namespace_);
  }
  *status = access_status(c.server.authorizer().authorize(a));
  return std::nullopt;
}

// kube's TokenReview: the user a bearer token (spec.token) authenticates as,
// for spec.audiences (default: this server's). Static tokens are not bound
// to an audience: they hold for requests that include this server's.
std::optional<ApiError> token_review_status(Context& c, const json& obj, json* status) {
  const json spec = obj.value("spec", json::object());
  const std::string token = str(spec, "token");
  if (token.empty()) return bad_request("token is required for TokenReview in authentication");
  const std::string own(kServiceAccountIssuer);
  std::vector<std::string> wanted = strings(spec, "audiences");
  if (wanted.empty()) wanted.push_back(own);
  const Options& options = c.server.options();
  *status = {{"authenticated", false}, {"user", json::object()}};
  if (auto it = options.tokens.find(token); it != options.tokens.end()) {
    if (std::find(wanted.begin(), wanted.end(), own) == wanted.end()) {
      (*status)["error"] = "[invalid bearer token, token audiences is invalid for the target audiences]";
      return std::nullopt;
    }
    UserInfo u = it->second;
    u.groups.emplace_back("system:authenticated");
    *status = {{"authenticated", true}, {"user", user_info(u)}, {"audiences", {own}}};
    return std::nullopt;
  }
  std::string why;
  auto sa = verify_service_account_token(options, token, wanted, &why);
  if (!sa) {
    (*status)["error"] = "[invalid bearer token, " + why + "]";
    return std::nullopt;
  }
  sa->user.groups.emplace_back("system:authenticated");
  json user = user_info(sa->user);
  if (!sa->extra.empty()) user["extra"] = sa->extra;
  *status = {{"authenticated", true}, {"user", std::move(user)}, {"audiences", sa->audiences}};
  return std::nullopt;
}

}  // namespace

http::Response handle_review(Context& c) {
  if (!c.info.name.empty() || !c.info.subresource.empty())
    return error_response(method_not_supported(c.resource(), "create"));
  if (Status s = check_dry_run(c); !s.is_ok()) return error_response(s);
  auto decoded = decode_body(c);
  if (!decoded.is_ok()) return error_response(decoded.status());
  json obj = std::move(decoded).value();
  const std::string& kind = c.resource().kind;

  json status;
  if (kind == "SelfSubjectReview") {
    status = {{"userInfo", user_info(c.user)}};
  } else if (kind == "TokenReview") {
    if (auto err = token_review_status(c, obj, &status)) return error_response(*err);
  } else if (kind == "SelfSubjectRulesReview") {
    status = rules_status(c, obj.value("spec", json::object()));
  } else if (auto err = access_review_status(c, obj, &status)) {
    return error_response(*err);
  }
  obj["metadata"]["creationTimestamp"] = nullptr;
  obj["status"] = std::move(status);
  return json_response(201, obj);
}

}  // namespace vkube::apiserver
