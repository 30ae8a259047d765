// Authentication, impersonation and RBAC through the API server's whole
// handler chain, over a real store: what a token user is refused, how the
// admin's RBAC writes change that at once, and the access reviews.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/api_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

Options with_tokens() {
  Options o;
  o.tokens["alice-token"] = UserInfo{"alice", {}, "1001"};
  o.tokens["bob-token"] = UserInfo{"bob", {"dev"}, ""};
  return o;
}

struct Fixture : testing::ApiServerOverStore {
  Fixture() : ApiServerOverStore(with_tokens()) {
    REQUIRE(api->ensure_bootstrap_policy().is_ok());
    for (const char* ns : {"team", "other"}) {
      REQUIRE(admin("POST", "/api/v1/namespaces",
                    {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}})
                  .status == 201);
    }
  }

  // `who`: a token, "" for no credentials, or "admin" for the admin certificate.
  http::Response call(const std::string& who, const std::string& method, const std::string& target,
                      const json& body = nullptr, std::vector<http::Header> headers = {}) {
    http::Request req = testing::request(method, target);
    req.headers = std::move(headers);
    if (who == "admin")
      req.peer = http::PeerCertificate{"kubernetes-admin", {"system:masters"}};
    else if (!who.empty())
      req.headers.push_back({"Authorization", "Bearer " + who});
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.push_back({"Content-Type", "application/json"});
    }
    return api->handle(req);
  }
  http::Response admin(const std::string& method, const std::string& target,
                       const json& body = nullptr) {
    return call("admin", method, target, body);
  }
};

json parse(const http::Response& r) {
  return json::parse(r.body, nullptr, false);
}

json pod_reader_role(const std::string& ns) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "Role"},
          {"metadata", {{"name", "pod-reader"}, {"namespace", ns}}},
          {"rules",
           {{{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"get", "list", "watch"}}}}}};
}

json binding_to_alice(const std::string& ns) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "RoleBinding"},
          {"metadata", {{"name", "alice-reads-pods"}, {"namespace", ns}}},
          {"roleRef",
           {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "pod-reader"}}},
          {"subjects",
           {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", "alice"}}}}};
}

TEST_CASE("a token user is refused until a role binding grants, in its namespace only",
          "[apiserver]") {
  Fixture f;
  http::Response denied = f.call("alice-token", "GET", "/api/v1/namespaces/team/pods");
  REQUIRE(denied.status == 403);
  json status = parse(denied);
  CHECK(status["reason"] == "Forbidden");
  CHECK(status["code"] == 403);
  CHECK(status["message"] ==
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in "
        "API group \"\" in the namespace \"team\"");
  CHECK(status["details"] == json{{"kind", "pods"}});

  json named = parse(f.call("alice-token", "GET", "/apis/apps/v1/namespaces/team/deployments/web"));
  CHECK(named["message"] ==
        "deployments.apps \"web\" is forbidden: User \"alice\" cannot get "
        "resource \"deployments\" in API group \"apps\" in the namespace "
        "\"team\"");
  CHECK(named["details"] == json{{"kind", "deployments"}, {"group", "apps"}, {"name", "web"}});
  CHECK(parse(f.call("alice-token", "GET", "/api/v1/nodes"))["message"] ==
        "nodes is forbidden: User \"alice\" cannot list resource \"nodes\" in API group \"\" at "
        "the cluster scope");
  CHECK(
      parse(f.call("alice-token", "GET", "/api/v1/namespaces/team"))["message"] ==
      "namespaces \"team\" is forbidden: User \"alice\" cannot get resource \"namespaces\" in API "
      "group \"\" in the namespace \"team\"");

  REQUIRE(f.admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles",
                  pod_reader_role("team"))
              .status == 201);
  REQUIRE(f.admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings",
                  binding_to_alice("team"))
              .status == 201);
  // The very next request sees the new binding.
  CHECK(f.call("alice-token", "GET", "/api/v1/namespaces/team/pods").status == 200);
  CHECK(f.call("alice-token", "GET", "/api/v1/namespaces/other/pods").status == 403);
  CHECK(f.call("alice-token", "GET", "/api/v1/pods").status == 403);  // all namespaces
  CHECK(f.call("alice-token", "DELETE", "/api/v1/namespaces/team/pods/x").status == 403);
  CHECK(f.call("bob-token", "GET", "/api/v1/namespaces/team/pods").status == 403);

  // Removing the binding revokes at once.
  REQUIRE(
      f.admin("DELETE",
              "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings/alice-reads-pods")
          .status == 200);
  CHECK(f.call("alice-token", "GET", "/api/v1/namespaces/team/pods").status == 403);
}

TEST_CASE("a changed role or cluster role changes what its bindings grant at once", "[apiserver]") {
  Fixture f;
  const std::string roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles";
  // Alice reads pods in team, and in lab, whose role stays unchanged throughout.
  REQUIRE(f.admin("POST", "/api/v1/namespaces", json{{"metadata", {{"name", "lab"}}}}).status ==
          201);
  for (const std::string ns : {"team", "lab"}) {
    const std::string base = "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns;
    REQUIRE(f.admin("POST", base + "/roles", pod_reader_role(ns)).status == 201);
    REQUIRE(f.admin("POST", base + "/rolebindings", binding_to_alice(ns)).status == 201);
  }
  CHECK(f.call("alice-token", "GET", "/api/v1/namespaces/team/pods").status == 200);

  // The role loses "list": the binding (unchanged) no longer grants it.
  json patch = {{"rules", {{{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"get"}}}}}};
  http::Request req = testing::request("PATCH", roles + "/pod-reader");
  req.peer = http::PeerCertificate{"kubernetes-admin", {"system:masters"}};
  req.headers.push_back({"Content-Type", "application/merge-patch+json"});
  req.body = patch.dump();
  REQUIRE(f.api->handle(req).status == 200);
  CHECK(f.call("alice-token", "GET", "/api/v1/namespaces/team/pods").status == 403);
  CHECK(f.call("alice-token", "GET", "/api/v1/namespaces/team/pods/x").status == 404);
  CHECK(f.call("alice-token", "GET", "/api/v1/namespaces/lab/pods").status == 200);

  // A cluster role bound cluster-wide, then given nodes: alice lists them.
  const std::string cluster_roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
  json node_reader = {
      {"metadata", {{"name", "node-reader"}}},
      {"rules", {{{"apiGroups", {""}}, {"resources", {"nodes"}}, {"verbs", {"get"}}}}}};
  REQUIRE(f.admin("POST", cluster_roles, node_reader).status == 201);
  json crb = {{"metadata", {{"name", "alice-nodes"}}},
              {"roleRef",
               {{"apiGroup", "rbac.authorization.k8s.io"},
                {"kind", "ClusterRole"},
                {"name", "node-reader"}}},
              {"subjects",
               {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", "alice"}}}}};
  REQUIRE(f.admin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", crb).status ==
          201);
  CHECK(f.call("alice-token", "GET", "/api/v1/nodes").status == 403);
  node_reader["rules"][0]["verbs"] = {"get", "list"};
  REQUIRE(f.admin("PUT", cluster_roles + "/node-reader", node_reader).status == 200);
  CHECK(f.call("alice-token", "GET", "/api/v1/nodes").status == 200);
  CHECK(f.call("alice-token", "GET", "/api/v1/namespaces/lab/pods").status == 200);
}

TEST_CASE("resourceNames grant one object, also to a list or watch selecting it by name",
          "[apiserver]") {
  Fixture f;
  REQUIRE(f.admin("POST", "/api/v1/namespaces/team/configmaps",
                  {{"metadata", {{"name", "settings"}}}, {"data", {{"v", "1"}}}})
              .status == 201);
  json role = pod_reader_role("team");
  role["rules"] = {{{"apiGroups", {""}},
                    {"resources", {"configmaps"}},
                    {"resourceNames", {"settings"}},
                    {"verbs", {"get", "list"}}}};
  REQUIRE(
      f.admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles", role).status ==
      201);
  REQUIRE(f.admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings",
                  binding_to_alice("team"))
              .status == 201);
  CHECK(f.call("alice-token", "GET", "/api/v1/namespaces/team/configmaps/settings").status == 200);
  CHECK(f.call("alice-token", "GET", "/api/v1/namespaces/team/configmaps/other").status == 403);
  CHECK(f.call("alice-token", "GET",
               "/api/v1/namespaces/team/configmaps?fieldSelector=metadata.name%3Dsettings")
            .status == 200);
  json listed = parse(f.call("alice-token", "GET", "/api/v1/namespaces/team/configmaps"));
  CHECK(listed["message"] ==
        "configmaps is forbidden: User \"alice\" cannot list resource "
        "\"configmaps\" in API group \"\" in the namespace \"team\"");
}

TEST_CASE("groups from the token file and the view role", "[apiserver]") {
  Fixture f;
  json b = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRoleBinding"},
      {"metadata", {{"name", "dev-view"}}},
      {"roleRef",
       {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "view"}}},
      {"subjects",
       {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Group"}, {"name", "dev"}}}}};
  REQUIRE(f.admin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", b).status ==
          201);
  CHECK(f.call("bob-token", "GET", "/api/v1/pods").status == 200);
  CHECK(f.call("bob-token", "GET", "/apis/apps/v1/namespaces/team/deployments").status == 200);
  CHECK(f.call("bob-token", "GET", "/api/v1/namespaces/team/secrets").status == 403);
  CHECK(f.call("bob-token", "POST", "/api/v1/namespaces/team/configmaps",
               {{"metadata", {{"name", "c"}}}})
            .status == 403);
  CHECK(f.call("alice-token", "GET", "/api/v1/pods").status == 403);

  // A ClusterRole labelled aggregate-to-view extends view at once.
  json extra = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRole"},
      {"metadata",
       {{"name", "view-secrets"},
        {"labels", {{"rbac.authorization.k8s.io/aggregate-to-view", "true"}}}}},
      {"rules", {{{"apiGroups", {""}}, {"resources", {"secrets"}}, {"verbs", {"list"}}}}}};
  REQUIRE(f.admin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", extra).status == 201);
  CHECK(f.call("bob-token", "GET", "/api/v1/namespaces/team/secrets").status == 200);
}

TEST_CASE("every user gets discovery, version and health; anonymous only health", "[apiserver]") {
  Fixture f;
  for (const char* p : {"/api", "/apis", "/api/v1", "/apis/apps/v1", "/version", "/healthz",
                        "/readyz", "/openapi/v3"}) {
    INFO(p);
    CHECK(f.call("alice-token", "GET", p).status != 403);
  }
  json metrics = parse(f.call("alice-token", "GET", "/metrics"));
  CHECK(metrics["code"] == 403);
  CHECK(metrics["message"] == "forbidden: User \"alice\" cannot get path \"/metrics\"");
  CHECK(f.admin("GET", "/metrics").status == 200);
  CHECK(f.call("", "GET", "/healthz").status == 200);
  CHECK(f.call("", "GET", "/version").status == 200);
  CHECK(f.call("", "GET", "/api").status == 401);
  CHECK(f.call("wrong-token", "GET", "/api").status == 401);
}

TEST_CASE("impersonation needs the impersonate verb; the admin has it", "[apiserver]") {
  Fixture f;
  std::vector<http::Header> as_alice = {{"Impersonate-User", "alice"}};
  json denied = parse(f.call("admin", "GET", "/api/v1/namespaces/team/pods", nullptr, as_alice));
  CHECK(denied["message"] ==
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in "
        "API group \"\" in the namespace \"team\"");
  std::vector<http::Header> as_group = {{"Impersonate-User", "carol"},
                                        {"Impersonate-Group", "system:masters"}};
  CHECK(f.call("admin", "GET", "/api/v1/namespaces/team/pods", nullptr, as_group).status == 200);

  json refused = parse(f.call("alice-token", "GET", "/api/v1/namespaces/team/pods", nullptr,
                              {{"Impersonate-User", "bob"}}));
  CHECK(refused["code"] == 403);
  CHECK(refused["message"] ==
        "users \"bob\" is forbidden: User \"alice\" cannot impersonate "
        "resource \"users\" in API group \"\" at the cluster scope");
  CHECK(f.call("admin", "GET", "/api/v1/pods", nullptr, {{"Impersonate-Group", "x"}}).status ==
        400);

  json who =
      parse(f.call("admin", "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                   {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}},
                   {{"Impersonate-User", "system:serviceaccount:team:builder"}}));
  CHECK(who["status"]["userInfo"]["username"] == "system:serviceaccount:team:builder");
  CHECK(who["status"]["userInfo"]["groups"] ==
        json{"system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"});
}

TEST_CASE("a user may grant only what it holds, unless it may escalate or bind", "[apiserver]") {
  Fixture f;
  const std::string rbac = "/apis/rbac.authorization.k8s.io/v1";
  json b = binding_to_alice("team");
  b["metadata"]["name"] = "alice-admin";
  b["roleRef"] = {
      {"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "admin"}};
  REQUIRE(f.admin("POST", rbac + "/namespaces/team/rolebindings", b).status == 201);

  // Alice, admin of "team", can make and bind roles within her rights...
  CHECK(f.call("alice-token", "POST", rbac + "/namespaces/team/roles", pod_reader_role("team"))
            .status == 201);
  json bob = binding_to_alice("team");
  bob["subjects"][0]["name"] = "bob";
  CHECK(f.call("alice-token", "POST", rbac + "/namespaces/team/rolebindings", bob).status == 201);
  json edit = bob;
  edit["metadata"]["name"] = "bob-edits";
  edit["roleRef"]["kind"] = "ClusterRole";
  edit["roleRef"]["name"] = "edit";
  CHECK(f.call("alice-token", "POST", rbac + "/namespaces/team/rolebindings", edit).status == 201);

  // ...but not beyond them.
  json nodes = pod_reader_role("team");
  nodes["metadata"]["name"] = "node-lister";
  nodes["rules"] = {{{"apiGroups", {""}}, {"resources", {"nodes", "pods"}}, {"verbs", {"list"}}}};
  json refused = parse(f.call("alice-token", "POST", rbac + "/namespaces/team/roles", nodes));
  CHECK(refused["code"] == 403);
  CHECK(refused["message"] ==
        "roles.rbac.authorization.k8s.io \"node-lister\" is forbidden: user \"alice\" "
        "(groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently "
        "held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"list\"]}");
  CHECK(refused["details"] ==
        json{{"group", "rbac.authorization.k8s.io"}, {"kind", "roles"}, {"name", "node-lister"}});
  json root = edit;
  root["metadata"]["name"] = "bob-root";
  root["roleRef"]["name"] = "cluster-admin";
  CHECK(f.call("alice-token", "POST", rbac + "/namespaces/team/rolebindings", root).status == 403);
  // Updating her own role beyond her rights is refused too.
  json grown = parse(f.call("alice-token", "GET", rbac + "/namespaces/team/roles/pod-reader"));
  grown["rules"][0]["resources"] = {"pods", "nodes"};
  CHECK(f.call("alice-token", "PUT", rbac + "/namespaces/team/roles/pod-reader", grown).status ==
        403);

  // The bind verb on cluster-admin lets her bind it (in her namespace).
  json may_bind = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                   {"kind", "ClusterRole"},
                   {"metadata", {{"name", "bind-cluster-admin"}}},
                   {"rules",
                    {{{"apiGroups", {"rbac.authorization.k8s.io"}},
                      {"resources", {"clusterroles"}},
                      {"verbs", {"bind"}},
                      {"resourceNames", {"cluster-admin"}}}}}};
  REQUIRE(f.admin("POST", rbac + "/clusterroles", may_bind).status == 201);
  json grant = b;
  grant["metadata"]["name"] = "alice-binds";
  grant["roleRef"]["name"] = "bind-cluster-admin";
  REQUIRE(f.admin("POST", rbac + "/namespaces/team/rolebindings", grant).status == 201);
  CHECK(f.call("alice-token", "POST", rbac + "/namespaces/team/rolebindings", root).status == 201);
}

json access_review(const std::string& verb, const std::string& resource, const std::string& ns) {
  return {{"apiVersion", "authorization.k8s.io/v1"},
          {"kind", "SelfSubjectAccessReview"},
          {"spec",
           {{"resourceAttributes", {{"verb", verb}, {"resource", resource}, {"namespace", ns}}}}}};
}

TEST_CASE("self reviews: can-i, rules and whoami", "[apiserver]") {
  Fixture f;
  REQUIRE(f.admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles",
                  pod_reader_role("team"))
              .status == 201);
  REQUIRE(f.admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings",
                  binding_to_alice("team"))
              .status == 201);
  const std::string ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
  http::Response yes = f.call("alice-token", "POST", ssar, access_review("list", "pods", "team"));
  REQUIRE(yes.status == 201);
  json allowed = parse(yes);
  CHECK(allowed["status"]["allowed"] == true);
  CHECK(allowed["status"]["reason"] ==
        "RBAC: allowed by RoleBinding \"alice-reads-pods/team\" of "
        "Role \"pod-reader\" to User \"alice\"");
  CHECK(parse(f.call("alice-token", "POST", ssar,
                     access_review("list", "pods", "other")))["status"]["allowed"] == false);
  CHECK(parse(f.call("admin", "POST", ssar,
                     access_review("delete", "nodes", "")))["status"]["allowed"] == true);
  json bad = parse(
      f.call("alice-token", "POST", ssar,
             {{"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SelfSubjectAccessReview"}}));
  CHECK(bad["code"] == 422);
  CHECK_THAT(bad["message"].get<std::string>(),
             Catch::Contains("spec.resourceAttributes: Required value: exactly one of "
                             "nonResourceAttributes or resourceAttributes must be specified"));
  CHECK(f.call("alice-token", "GET", ssar).status == 403);  // authorized before routing
  CHECK(f.admin("GET", ssar).status == 405);

  json rules =
      parse(f.call("alice-token", "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                   {{"apiVersion", "authorization.k8s.io/v1"},
                    {"kind", "SelfSubjectRulesReview"},
                    {"spec", {{"namespace", "team"}}}}));
  CHECK(rules["status"]["incomplete"] == false);
  CHECK(rules["status"]["resourceRules"].dump().find("\"pods\"") != std::string::npos);
  CHECK(rules["status"]["resourceRules"].dump().find("selfsubjectaccessreviews") !=
        std::string::npos);
  CHECK(rules["status"]["nonResourceRules"].dump().find("/version") != std::string::npos);

  json whoami =
      parse(f.call("alice-token", "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                   {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}}));
  CHECK(whoami["kind"] == "SelfSubjectReview");
  CHECK(whoami["status"]["userInfo"] ==
        json{{"username", "alice"}, {"uid", "1001"}, {"groups", {"system:authenticated"}}});

  // SubjectAccessReview: the admin asks about another user.
  json sar = parse(f.call("admin", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                          {{"apiVersion", "authorization.k8s.io/v1"},
                           {"kind", "SubjectAccessReview"},
                           {"spec",
                            {{"user", "alice"},
                             {"resourceAttributes",
                              {{"verb", "get"}, {"resource", "pods"}, {"namespace", "team"}}}}}}));
  CHECK(sar["status"]["allowed"] == true);
  CHECK(f.call("alice-token", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
               {{"spec",
                 {{"user", "bob"}, {"nonResourceAttributes", {{"verb", "get"}, {"path", "/"}}}}}})
            .status == 403);
}

TEST_CASE("an apply that creates needs the create verb as well as patch", "[apiserver]") {
  Fixture f;
  json role = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "Role"},
      {"metadata", {{"name", "cm-patcher"}, {"namespace", "team"}}},
      {"rules",
       {{{"apiGroups", {""}}, {"resources", {"configmaps"}}, {"verbs", {"get", "patch"}}}}}};
  REQUIRE(
      f.admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles", role).status ==
      201);
  json binding = binding_to_alice("team");
  binding["roleRef"]["name"] = "cm-patcher";
  REQUIRE(
      f.admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings", binding)
          .status == 201);
  auto apply = [&] {
    http::Request req =
        testing::request("PATCH", "/api/v1/namespaces/team/configmaps/applied?fieldManager=alice");
    req.headers = {{"Authorization", "Bearer alice-token"},
                   {"Content-Type", "application/apply-patch+yaml"}};
    req.body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied}\ndata: {a: b}\n";
    return f.api->handle(req);
  };
  auto denied = apply();
  CHECK(denied.status == 403);
  CHECK_THAT(denied.body, Catch::Contains("cannot create resource \\\"configmaps\\\""));
  role["rules"][0]["verbs"].push_back("create");
  REQUIRE(
      f.admin("PUT", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles/cm-patcher", role)
          .status == 200);
  CHECK(apply().status == 201);
}

TEST_CASE("the static token file is kube-apiserver's CSV", "[apiserver]") {
  auto tokens = parse_token_file(
      "\xEF\xBB\xBF"
      "t1,alice,1001\n"
      "\n"
      "t2, bob ,1002,\"dev,ops\"\r\n"
      "\"t,3\",carol,1003,\"\"\n",
      "tokens.csv");
  REQUIRE(tokens.is_ok());
  REQUIRE(tokens->size() == 3);
  CHECK(tokens->at("t1").name == "alice");
  CHECK(tokens->at("t1").uid == "1001");
  CHECK(tokens->at("t1").groups.empty());
  CHECK(tokens->at("t2").name == "bob ");
  CHECK(tokens->at("t2").groups == std::vector<std::string>{"dev", "ops"});
  CHECK(tokens->at("t,3").name == "carol");

  auto short_line = parse_token_file("t1,alice,1\nt2,bob\n", "f.csv");
  REQUIRE_FALSE(short_line.is_ok());
  CHECK(short_line.status().message() ==
        "token file 'f.csv' line 2: must have at least 3 columns (token, user name, user uid), "
        "found 2");
  CHECK_FALSE(parse_token_file("t1,alice,1,\"dev\n", "f.csv").is_ok());
  CHECK_FALSE(parse_token_file(",alice,1\n", "f.csv").is_ok());
  CHECK(load_token_file("/nonexistent/tokens.csv").status().code() == Code::kUnavailable);
}

}  // namespace
}  // namespace vkube::apiserver
