// Authentication (client certificates, static bearer tokens) and
// impersonation (kube's WithImpersonation filter).
#include <algorithm>

#include "authz.h"
#include "sa_token.h"

namespace vkube::apiserver {

namespace {

void add_group(std::vector<std::string>& groups, std::string_view g) {
  if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.emplace_back(g);
}

bool has_group(const std::vector<std::string>& groups, std::string_view g) {
  return std::find(groups.begin(), groups.end(), g) != groups.end();
}

// kube's AuthenticatedGroupAdder: every authenticated user is in
// system:authenticated (unless it is already in one of the two).
void add_authenticated(UserInfo& user) {
  if (has_group(user.groups, rbac::kAuthenticatedGroup) ||
      has_group(user.groups, rbac::kUnauthenticatedGroup))
    return;
  user.groups.emplace_back(rbac::kAuthenticatedGroup);
}

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && iequals_prefix(a, b);
}

struct Impersonation {
  std::string user;
  std::vector<std::string> groups;
  std::optional<std::string> uid;
  std::vector<std::pair<std::string, std::string>> extra;  // key (lowercased), value
  bool any() const { return !user.empty() || !groups.empty() || uid || !extra.empty(); }
};

Impersonation read_headers(const http::Request& req) {
  constexpr std::string_view kExtra = "Impersonate-Extra-";
  Impersonation imp;
  for (const http::Header& h : req.headers) {
    if (iequals(h.name, "Impersonate-User")) {
      imp.user = h.value;
    } else if (iequals(h.name, "Impersonate-Group")) {
      imp.groups.push_back(h.value);
    } else if (iequals(h.name, "Impersonate-Uid")) {
      imp.uid = h.value;
    } else if (iequals_prefix(h.name, kExtra) && h.name.size() > kExtra.size()) {
      std::string key = http::percent_decode(h.name.substr(kExtra.size()), false);
      std::transform(key.begin(), key.end(), key.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      imp.extra.emplace_back(std::move(key), h.value);
    }
  }
  return imp;
}

}  // namespace

std::optional<UserInfo> authenticate(const Options& options, const http::Request& req) {
  UserInfo user;
  if (req.peer) {
    user = UserInfo{req.peer->common_name, req.peer->organizations, ""};
  } else {
    std::string_view auth = req.header("Authorization");
    if (auth.size() > 7 && (auth.starts_with("Bearer ") || auth.starts_with("bearer "))) {
      std::string token(auth.substr(7));
      auto it = options.tokens.find(token);
      if (it != options.tokens.end()) {
        user = it->second;
      } else if (auto sa = authenticate_service_account_token(options, token)) {
        user = std::move(*sa);
      } else {
        return std::nullopt;
      }
    } else if (options.allow_anonymous) {
      return UserInfo{
          std::string(rbac::kAnonymousUser), {std::string(rbac::kUnauthenticatedGroup)}, ""};
    } else {
      return std::nullopt;
    }
  }
  add_authenticated(user);
  return user;
}

std::optional<ApiError> impersonate(Authorizer& authz, const http::Request& req, UserInfo& user) {
  if (req.headers.empty()) return std::nullopt;
  Impersonation imp = read_headers(req);
  if (!imp.any()) return std::nullopt;
  if (imp.user.empty())
    return bad_request(
        "requested impersonation of groups, a uid or extra fields without "
        "impersonating a user");

  // The acting user must be allowed to impersonate each part.
  auto check = [&](std::string group, std::string resource, std::string subresource, std::string ns,
                   std::string name) -> std::optional<ApiError> {
    rbac::Attributes a;
    a.user = user.name;
    a.groups = user.groups;
    a.verb = "impersonate";
    a.resource_request = true;
    a.api_group = std::move(group);
    a.resource = std::move(resource);
    a.subresource = std::move(subresource);
    a.ns = std::move(ns);
    a.name = std::move(name);
    rbac::Decision d = authz.authorize(a);
    if (d.allowed) return std::nullopt;
    return forbidden(a, d.reason);
  };

  UserInfo next;
  next.name = imp.user;
  next.groups = imp.groups;
  std::string_view sa = imp.user;
  size_t colon = std::string_view::npos;
  if (sa.starts_with(rbac::kServiceAccountPrefix)) {
    sa.remove_prefix(rbac::kServiceAccountPrefix.size());
    colon = sa.find(':');
  }
  if (colon != std::string_view::npos && colon > 0 && colon + 1 < sa.size()) {
    const std::string ns(sa.substr(0, colon));
    if (auto err = check("", "serviceaccounts", "", ns, std::string(sa.substr(colon + 1))))
      return err;
    if (imp.groups.empty()) {
      next.groups = {"system:serviceaccounts", "system:serviceaccounts:" + ns};
    }
  } else if (auto err = check("", "users", "", "", imp.user)) {
    return err;
  }
  for (const std::string& g : imp.groups)
    if (auto err = check("", "groups", "", "", g)) return err;
  if (imp.uid) {
    if (auto err = check("authentication.k8s.io", "uids", "", "", *imp.uid)) return err;
    next.uid = *imp.uid;
  }
  for (const auto& [key, value] : imp.extra)
    if (auto err = check("authentication.k8s.io", "userextras", key, "", value)) return err;

  if (next.name == rbac::kAnonymousUser) {
    if (!has_group(next.groups, rbac::kAuthenticatedGroup))
      add_group(next.groups, rbac::kUnauthenticatedGroup);
  } else {
    add_authenticated(next);
  }
  user = std::move(next);
  return std::nullopt;
}

}  // namespace vkube::apiserver
