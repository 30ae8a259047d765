// The dashboard's files in the binary, how they are served, who may read
// them on the host (authentication, the viewer ClusterRole), and what the
// local proxy of `vkube dashboard` refuses.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/api_server.h"
#include "vkube/dashboard/assets.h"
#include "vkube/dashboard/dashboard.h"
#include "vkube/dashboard/proxy.h"

namespace vkube::dashboard {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string header(const http::Response& r, std::string_view name) {
  for (const http::Header& h : r.headers)
    if (h.name == name) return h.value;
  return "";
}

http::Request get(const std::string& path, const std::string& host = "") {
  http::Request req = testing::request("GET", path);
  if (!host.empty()) req.headers.push_back({"Host", host});
  return req;
}

TEST_CASE("every file of web/dashboard is in the binary as it is in the tree", "[dashboard]") {
  const fs::path dir = fs::path(VKUBE_SOURCE_DIR) / "web" / "dashboard";
  REQUIRE(fs::is_directory(dir));
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.starts_with(".") || name.ends_with("~")) continue;
    ++files;
    INFO(name << ": rebuild vkube after editing the page");
    const Asset* asset = find_asset(name);
    REQUIRE(asset != nullptr);
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(asset->bytes == text.str());
  }
  CHECK(assets().size() == files);
  for (auto [name, type] : {std::pair{"index.html", "text/html; charset=utf-8"},
                            {"dashboard.js", "text/javascript; charset=utf-8"},
                            {"dashboard.css", "text/css; charset=utf-8"}}) {
    INFO(name);
    REQUIRE(find_asset(name) != nullptr);
    CHECK(find_asset(name)->content_type == type);
  }
  CHECK(find_asset("../index.html") == nullptr);
}

TEST_CASE("the page is served with its type and headers that keep it to its own origin",
          "[dashboard]") {
  http::Response page = serve_page(get("/dashboard/"));
  CHECK(page.status == 200);
  CHECK(header(page, "Content-Type") == "text/html; charset=utf-8");
  CHECK(page.body == find_asset("index.html")->bytes);
  CHECK_THAT(header(page, "Content-Security-Policy"), Catch::StartsWith("default-src 'self';"));
  CHECK(header(page, "X-Content-Type-Options") == "nosniff");
  CHECK(header(page, "Cache-Control") == "no-cache");
  CHECK(serve_page(get("/dashboard/dashboard.js")).body == find_asset("dashboard.js")->bytes);

  // Relative URLs resolve from /dashboard/, so /dashboard redirects there.
  http::Response moved = serve_page(get("/dashboard?refresh=5"));
  CHECK(moved.status == 301);
  CHECK(header(moved, "Location") == "/dashboard/?refresh=5");

  for (const char* path :
       {"/dashboard/nope.js", "/dashboard/../../etc/passwd", "/dashboard/a/index.html"}) {
    INFO(path);
    http::Response missing = serve_page(get(path));
    CHECK(missing.status == 404);
    CHECK(json::parse(missing.body).value("reason", "") == "NotFound");
  }
  http::Response post = serve_page(testing::request("POST", "/dashboard/"));
  CHECK(post.status == 405);
  CHECK(json::parse(post.body).value("reason", "") == "MethodNotAllowed");
}

TEST_CASE("the host serves the page to authenticated users its RBAC lets get /dashboard",
          "[dashboard]") {
  apiserver::Options o;
  o.tokens["alice-token"] = apiserver::UserInfo{"alice", {}, "1001"};
  testing::ApiServerOverStore server(o);
  REQUIRE(server.api->ensure_bootstrap_policy().is_ok());
  serve(*server.api);
  auto call = [&](const std::string& who, const std::string& method, const std::string& path) {
    http::Request req = testing::request(method, path);
    if (who == "admin") req.peer = http::PeerCertificate{"kubernetes-admin", {"system:masters"}};
    if (who == "alice") req.headers.push_back({"Authorization", "Bearer alice-token"});
    return server.api->handle(req);
  };

  // Before the viewer role exists: the admin only.
  CHECK(call("admin", "GET", "/dashboard/").status == 200);
  http::Response refused = call("alice", "GET", "/dashboard/");
  CHECK(refused.status == 403);
  CHECK_THAT(refused.body,
             Catch::Contains("forbidden: User \\\"alice\\\" cannot get path \\\"/dashboard/\\\""));
  CHECK(call("", "GET", "/dashboard/").status == 401);

  REQUIRE(ensure_viewer_policy(*server.api).is_ok());
  http::Response page = call("alice", "GET", "/dashboard/");
  CHECK(page.status == 200);
  CHECK(header(page, "Content-Type") == "text/html; charset=utf-8");
  CHECK(call("alice", "GET", "/dashboard").status == 301);
  CHECK(call("alice", "GET", "/dashboard/dashboard.css").status == 200);
  CHECK(call("", "GET", "/dashboard/").status == 401);        // anonymous: as any API path
  CHECK(call("alice", "POST", "/dashboard/").status == 403);  // get only
  CHECK(call("alice", "GET", "/dashboardx").status == 403);   // not below /dashboard

  // The operator takes the page away; a later start does not bring it back.
  REQUIRE(call("admin", "DELETE",
               "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/vkube:dashboard-viewer")
              .status == 200);
  CHECK(call("alice", "GET", "/dashboard/").status == 403);
  REQUIRE(ensure_viewer_policy(*server.api).is_ok());
  CHECK(call("alice", "GET", "/dashboard/").status == 403);
}

TEST_CASE("the proxy answers its page itself and forwards only the page's reads", "[dashboard]") {
  const std::string self = "127.0.0.1:8001";
  CHECK(answer_locally(get("/dashboard/", self), 8001)->status == 200);
  CHECK(answer_locally(get("/dashboard/", "localhost:8001"), 8001)->status == 200);
  for (const char* path : {"/api/v1/nodes", "/api/v1/pods?labelSelector=a%3Db&limit=500",
                           "/api/v1/namespaces", "/metrics"}) {
    INFO(path);
    CHECK_FALSE(answer_locally(get(path, self), 8001).has_value());
  }
  for (const char* path : {"/api/v1/secrets", "/api/v1/namespaces/default/pods", "/api/v1/nodes/n1",
                           "/apis/rbac.authorization.k8s.io/v1/clusterroles", "/", "/healthz"}) {
    INFO(path);
    CHECK(answer_locally(get(path, self), 8001)->status == 404);
  }
  for (const char* method : {"POST", "PUT", "PATCH", "DELETE"}) {
    http::Request req = testing::request(method, "/api/v1/pods");
    req.headers.push_back({"Host", self});
    CHECK(answer_locally(req, 8001)->status == 405);
  }
  CHECK(answer_locally(get("/api/v1/pods?watch=1", self), 8001)->status == 400);
  // Another site's name resolved to 127.0.0.1 (DNS rebinding), or another port.
  CHECK(answer_locally(get("/api/v1/pods", "evil.example.com:8001"), 8001)->status == 403);
  CHECK(answer_locally(get("/api/v1/pods", "127.0.0.1:9999"), 8001)->status == 403);
  CHECK(answer_locally(get("/dashboard/"), 8001)->status == 403);
}

TEST_CASE("vkube dashboard listens on loopback only", "[dashboard]") {
  auto ok = parse_listen("127.0.0.1:0");
  REQUIRE(ok.is_ok());
  CHECK(ok->host == "127.0.0.1");
  CHECK(ok->port == 0);
  CHECK(parse_listen("[::1]:8001").is_ok());
  CHECK(parse_listen("localhost:8001")->port == 8001);
  for (const char* bad : {"0.0.0.0:8001", "10.1.2.3:8001", "example.com:80", "127.0.0.1",
                          "127.0.0.1:http", "127.0.0.1:70000", ":8001"}) {
    INFO(bad);
    CHECK_FALSE(parse_listen(bad).is_ok());
  }
  CHECK_THAT(parse_listen("0.0.0.0:8001").status().message(), Catch::Contains("loopback"));
}

}  // namespace
}  // namespace vkube::dashboard
