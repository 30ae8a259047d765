// The page's files over HTTP, and its place on `vkube host`.
#include <nlohmann/json.hpp>

#include "vkube/apiserver/apiserver.h"
#include "vkube/dashboard/assets.h"
#include "vkube/dashboard/dashboard.h"

namespace vkube::dashboard {

namespace {

using json = nlohmann::json;

// Only this origin: the page's own script, style and reads. No inline code
// (an injected tenant name could otherwise run as script), no frames (the
// page cannot be overlaid by another site), no plugins, no forms.
constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'none'";

void set_security_headers(http::Response& r) {
  r.set_header("Content-Security-Policy", kContentSecurityPolicy);
  r.set_header("X-Content-Type-Options", "nosniff");
  r.set_header("Referrer-Policy", "no-referrer");
  // The page is rebuilt with the binary: a browser asks again (with
  // If-None-Match, when it has one) rather than keep an old script.
  r.set_header("Cache-Control", "no-cache");
}

json metadata(std::string_view name) {
  return {{"name", name}, {"labels", {{"app.kubernetes.io/part-of", "vkube"}}}};
}

}  // namespace

http::Response serve_page(const http::Request& req) {
  if (req.method != "GET")
    return apiserver::status_response(
        Status(Code::kMethodNotAllowed,
               "the server does not allow this method on the requested resource"));
  std::string_view rest = std::string_view(req.path).substr(
      req.path.starts_with(kPath) ? kPath.size() : req.path.size());
  if (rest.empty()) {
    http::Response r;
    r.status = 301;
    r.set_header("Location", std::string(kPath) + "/" + (req.query.empty() ? "" : "?" + req.query));
    set_security_headers(r);
    return r;
  }
  std::string_view name = rest.substr(1);  // after the '/'
  if (name.empty()) name = "index.html";
  const Asset* asset = find_asset(name);
  if (asset == nullptr)
    return apiserver::status_response(
        Status::not_found("the server could not find the requested resource"));
  http::Response r;
  r.set_header("Content-Type", std::string(asset->content_type));
  set_security_headers(r);
  r.body.assign(asset->bytes);
  return r;
}

void serve(apiserver::ApiServer& api) {
  api.serve_path(std::string(kPath), [](http::Request& req) { return serve_page(req); });
}

Status ensure_viewer_policy(apiserver::ApiServer& api) {
  const std::string base = "/apis/rbac.authorization.k8s.io/v1/";
  auto request = [&](const std::string& method, const std::string& path, const json& body) {
    http::Request req;
    req.method = method;
    req.path = req.target = base + path;
    req.peer = http::PeerCertificate{"system:apiserver", {"system:masters"}};
    if (!body.is_null()) {
      req.headers.push_back({"Content-Type", "application/json"});
      req.body = body.dump();
    }
    return api.handle(req);
  };
  const std::string name(kViewerRole);
  if (request("GET", "clusterroles/" + name, nullptr).status == 200) return Status::ok();
  const json role = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRole"},
      {"metadata", metadata(name)},
      {"rules",
       json::array({{{"verbs", {"get"}},
                     {"nonResourceURLs", {std::string(kPath), std::string(kPath) + "/*"}}}})}};
  const json binding = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRoleBinding"},
      {"metadata", metadata(name)},
      {"roleRef",
       {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", name}}},
      {"subjects", json::array({{{"apiGroup", "rbac.authorization.k8s.io"},
                                 {"kind", "Group"},
                                 {"name", "system:authenticated"}}})}};
  // The binding first: should the role's create fail, the next start makes both.
  for (const auto& [plural, obj] :
       {std::pair{"clusterrolebindings", &binding}, std::pair{"clusterroles", &role}}) {
    http::Response r = request("POST", plural, *obj);
    if (r.status != 201 && r.status != 409)
      return Status::internal("creating " + std::string(plural) + " " + name + ": " + r.body);
  }
  return Status::ok();
}

}  // namespace vkube::dashboard
