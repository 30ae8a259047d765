// The GPU-pool dashboard as `vkube host` serves it: the embedded page under
// /dashboard/ on the API port, behind the API server's authentication and
// RBAC (non-resource URLs /dashboard and /dashboard/*), and the ClusterRole
// that lets every authenticated user of the host read it.
#pragma once

#include <string>
#include <string_view>

#include "vkube/common/status.h"
#include "vkube/http/server.h"

namespace vkube::apiserver {
class ApiServer;
}

namespace vkube::dashboard {

// Where the page lives, on the host and on `vkube dashboard`'s proxy.
inline constexpr std::string_view kPath = "/dashboard";
// The ClusterRole and ClusterRoleBinding (to group system:authenticated)
// that grant `get` on /dashboard and /dashboard/*.
inline constexpr std::string_view kViewerRole = "vkube:dashboard-viewer";

// Answers a request below kPath: GET /dashboard -> 301 to /dashboard/ (the
// page's relative URLs resolve from there); /dashboard/ -> index.html;
// /dashboard/NAME -> the embedded file NAME; another name -> 404; another
// method -> 405. Files carry their type, a Content-Security-Policy that
// allows only this origin (no inline script or style, no frames),
// X-Content-Type-Options: nosniff and Cache-Control: no-cache. Errors are
// kube Status objects. Thread-safe.
http::Response serve_page(const http::Request& req);

// Serves the page on `api` at kPath (ApiServer::serve_path), so requests
// get the server's authentication and authorization first.
void serve(apiserver::ApiServer& api);

// Creates kViewerRole and its binding to system:authenticated on the host's
// first start, i.e. when the ClusterRole does not exist yet; once it does,
// nothing is made again, so an operator who deletes the binding (or trims
// its subjects) keeps the page to the users they choose. Requests go through
// `api`'s whole chain as system:apiserver. kInternal with the answer when a
// create fails.
Status ensure_viewer_policy(apiserver::ApiServer& api);

}  // namespace vkube::dashboard
