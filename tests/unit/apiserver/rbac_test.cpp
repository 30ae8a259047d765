// RBAC evaluation: rule matching, bindings, aggregation and the wording of
// denials, against kube-apiserver's RBAC authorizer semantics.
#include <catch2/catch.hpp>

#include "policy.h"

namespace vkube::apiserver::rbac {
namespace {

Attributes resource(std::string verb, std::string group, std::string res, std::string ns = "",
                    std::string name = "", std::string sub = "") {
  Attributes a;
  a.user = "alice";
  a.groups = {"dev", "system:authenticated"};
  a.verb = std::move(verb);
  a.resource_request = true;
  a.api_group = std::move(group);
  a.resource = std::move(res);
  a.ns = std::move(ns);
  a.name = std::move(name);
  a.subresource = std::move(sub);
  return a;
}

Attributes path(std::string verb, std::string p) {
  Attributes a;
  a.user = "alice";
  a.groups = {"system:authenticated"};
  a.verb = std::move(verb);
  a.path = std::move(p);
  return a;
}

PolicyRule rule(const json& j) {
  return PolicyRule::from_json(j);
}

json role(const std::string& ns, const std::string& name, json rules) {
  json m = {{"name", name}};
  if (!ns.empty()) m["namespace"] = ns;
  return {{"metadata", m}, {"rules", rules}};
}

json binding(const std::string& ns, const std::string& name, const std::string& role_kind,
             const std::string& role_name, json subjects) {
  json m = {{"name", name}};
  if (!ns.empty()) m["namespace"] = ns;
  return {{"metadata", m},
          {"roleRef",
           {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", role_kind}, {"name", role_name}}},
          {"subjects", subjects}};
}

json user(const std::string& name) {
  return {{"kind", "User"}, {"name", name}};
}
json group(const std::string& name) {
  return {{"kind", "Group"}, {"name", name}};
}

TEST_CASE("rules match verbs, groups, resources and names, with wildcards", "[apiserver]") {
  PolicyRule pods =
      rule({{"verbs", {"get", "list"}}, {"apiGroups", {""}}, {"resources", {"pods"}}});
  CHECK(rule_allows(resource("list", "", "pods", "default"), pods));
  CHECK(rule_allows(resource("get", "", "pods", "default", "web"), pods));
  CHECK_FALSE(rule_allows(resource("delete", "", "pods", "default", "web"), pods));
  CHECK_FALSE(rule_allows(resource("list", "apps", "pods", "default"), pods));
  CHECK_FALSE(rule_allows(resource("list", "", "services", "default"), pods));
  // A subresource needs its own entry.
  CHECK_FALSE(rule_allows(resource("get", "", "pods", "default", "web", "status"), pods));

  PolicyRule all = rule({{"verbs", {"*"}}, {"apiGroups", {"*"}}, {"resources", {"*"}}});
  CHECK(rule_allows(resource("deletecollection", "apps", "deployments", "x"), all));
  CHECK(rule_allows(resource("update", "apps", "deployments", "x", "d", "scale"), all));
  CHECK_FALSE(rule_allows(path("get", "/metrics"), all));  // resource rules grant no paths

  PolicyRule status =
      rule({{"verbs", {"get"}}, {"apiGroups", {"apps"}}, {"resources", {"*/status"}}});
  CHECK(rule_allows(resource("get", "apps", "deployments", "x", "d", "status"), status));
  CHECK_FALSE(rule_allows(resource("get", "apps", "deployments", "x", "d", "scale"), status));
  CHECK_FALSE(rule_allows(resource("get", "apps", "deployments", "x", "d"), status));

  PolicyRule scale =
      rule({{"verbs", {"update"}}, {"apiGroups", {"apps"}}, {"resources", {"deployments/scale"}}});
  CHECK(rule_allows(resource("update", "apps", "deployments", "x", "d", "scale"), scale));
  CHECK_FALSE(rule_allows(resource("update", "apps", "deployments", "x", "d"), scale));

  PolicyRule named = rule({{"verbs", {"get", "update"}},
                           {"apiGroups", {""}},
                           {"resources", {"configmaps"}},
                           {"resourceNames", {"settings"}}});
  CHECK(rule_allows(resource("get", "", "configmaps", "x", "settings"), named));
  CHECK_FALSE(rule_allows(resource("get", "", "configmaps", "x", "other"), named));
  // A list has no name, so resourceNames never grant it.
  CHECK_FALSE(rule_allows(resource("list", "", "configmaps", "x"), named));
}

TEST_CASE("non-resource rules match paths exactly or by a trailing *", "[apiserver]") {
  PolicyRule r = rule({{"verbs", {"get"}}, {"nonResourceURLs", {"/healthz", "/apis/*"}}});
  CHECK(rule_allows(path("get", "/healthz"), r));
  CHECK_FALSE(rule_allows(path("get", "/healthz/etcd"), r));
  CHECK(rule_allows(path("get", "/apis/apps/v1"), r));
  CHECK(rule_allows(path("get", "/apis/"), r));
  CHECK_FALSE(rule_allows(path("get", "/apis"), r));
  CHECK_FALSE(rule_allows(path("post", "/healthz"), r));
  CHECK(
      rule_allows(path("post", "/anything"), rule({{"verbs", {"*"}}, {"nonResourceURLs", {"*"}}})));
}

TEST_CASE("subjects: users, groups and service accounts", "[apiserver]") {
  std::vector<std::string> groups = {"dev"};
  CHECK(subject_applies({"User", "alice", ""}, "alice", groups, ""));
  CHECK_FALSE(subject_applies({"User", "alice", ""}, "bob", groups, ""));
  CHECK(subject_applies({"Group", "dev", ""}, "bob", groups, ""));
  CHECK_FALSE(subject_applies({"Group", "ops", ""}, "bob", groups, ""));
  const std::string sa = "system:serviceaccount:ci:builder";
  CHECK(subject_applies({"ServiceAccount", "builder", "ci"}, sa, {}, ""));
  // In a RoleBinding the namespace defaults to the binding's.
  CHECK(subject_applies({"ServiceAccount", "builder", ""}, sa, {}, "ci"));
  CHECK_FALSE(subject_applies({"ServiceAccount", "builder", ""}, sa, {}, ""));
  CHECK_FALSE(subject_applies({"ServiceAccount", "builder", "other"}, sa, {}, ""));
  CHECK_FALSE(subject_applies({"ServiceAccount", "build", "ci"}, sa, {}, ""));
  CHECK(is_privileged({"x", "system:masters"}));
  CHECK_FALSE(is_privileged({"system:authenticated"}));
}

TEST_CASE("role bindings grant in their namespace, cluster role bindings everywhere",
          "[apiserver]") {
  Objects o;
  o.roles.push_back(role(
      "team", "pod-reader",
      json::array({{{"verbs", {"get", "list"}}, {"apiGroups", {""}}, {"resources", {"pods"}}}})));
  o.cluster_roles.push_back(
      role("", "secret-reader",
           json::array({{{"verbs", {"get"}}, {"apiGroups", {""}}, {"resources", {"secrets"}}}})));
  o.cluster_roles.push_back(
      role("", "node-reader",
           json::array({{{"verbs", {"list"}}, {"apiGroups", {""}}, {"resources", {"nodes"}}}})));
  o.role_bindings.push_back(
      binding("team", "read-pods", "Role", "pod-reader", json::array({user("alice")})));
  o.role_bindings.push_back(
      binding("team", "read-secrets", "ClusterRole", "secret-reader", json::array({group("dev")})));
  o.cluster_role_bindings.push_back(
      binding("", "nodes", "ClusterRole", "node-reader", json::array({group("dev")})));
  auto p = Policy::compile(o);

  Decision d = p->authorize(resource("list", "", "pods", "team"));
  CHECK(d.allowed);
  CHECK(d.reason ==
        "RBAC: allowed by RoleBinding \"read-pods/team\" of Role \"pod-reader\" to User \"alice\"");
  CHECK_FALSE(p->authorize(resource("list", "", "pods", "other")).allowed);
  CHECK_FALSE(p->authorize(resource("list", "", "pods", "")).allowed);  // all namespaces
  // A ClusterRole bound by a RoleBinding grants only in that namespace.
  CHECK(p->authorize(resource("get", "", "secrets", "team", "s")).allowed);
  CHECK_FALSE(p->authorize(resource("get", "", "secrets", "other", "s")).allowed);
  Decision nodes = p->authorize(resource("list", "", "nodes"));
  CHECK(nodes.allowed);
  CHECK(nodes.reason ==
        "RBAC: allowed by ClusterRoleBinding \"nodes\" of ClusterRole "
        "\"node-reader\" to Group \"dev\"");

  Attributes bob = resource("list", "", "pods", "team");
  bob.user = "bob";
  bob.groups = {"system:authenticated"};
  Decision denied = p->authorize(bob);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.reason.empty());

  UserRules rules = p->rules_for("alice", {"dev"}, "team");
  CHECK(rules.rules.size() == 3);
  CHECK(rules.errors.empty());
  CHECK(p->rules_for("alice", {"dev"}, "").rules.size() == 1);
}

TEST_CASE("a binding to a missing role grants nothing and says why", "[apiserver]") {
  Objects o;
  o.role_bindings.push_back(binding("team", "b", "Role", "gone", json::array({user("alice")})));
  o.cluster_role_bindings.push_back(
      binding("", "c", "ClusterRole", "missing", json::array({user("alice")})));
  auto p = Policy::compile(o);
  Decision d = p->authorize(resource("get", "", "pods", "team", "x"));
  CHECK_FALSE(d.allowed);
  CHECK(d.reason ==
        "RBAC: [clusterrole.rbac.authorization.k8s.io \"missing\" not found, "
        "role.rbac.authorization.k8s.io \"gone\" not found]");
  CHECK(p->authorize(resource("get", "", "pods", "", "x")).reason ==
        "RBAC: clusterrole.rbac.authorization.k8s.io \"missing\" not found");
  CHECK(p->rules_for("alice", {}, "team").errors.size() == 2);
}

TEST_CASE("malformed objects grant nothing instead of failing the policy", "[apiserver]") {
  Objects o;
  o.cluster_roles.push_back({{"metadata", {{"name", "odd"}}}, {"rules", "not a list"}});
  o.cluster_roles.push_back(json::array());
  o.cluster_role_bindings.push_back(
      {{"metadata", {{"name", "b"}}}, {"roleRef", 5}, {"subjects", {user("alice")}}});
  o.cluster_role_bindings.push_back(
      binding("", "ok", "ClusterRole", "odd", json::array({user("alice")})));
  auto p = Policy::compile(o);
  CHECK_FALSE(p->authorize(resource("get", "", "pods", "x", "y")).allowed);
  REQUIRE(p->cluster_role_rules("odd") != nullptr);
  CHECK(p->cluster_role_rules("odd")->empty());
}

TEST_CASE("aggregated cluster roles collect the rules of the roles they select", "[apiserver]") {
  Objects o;
  json monitoring =
      role("", "monitoring",
           json::array({{{"verbs", {"get"}}, {"apiGroups", {""}}, {"resources", {"pods"}}}}));
  monitoring["metadata"]["labels"] = {{"rbac.example.com/aggregate-to-monitoring", "true"}};
  json extra =
      role("", "extra",
           json::array({{{"verbs", {"list"}}, {"apiGroups", {""}}, {"resources", {"services"}}},
                        {{"verbs", {"get"}}, {"apiGroups", {""}}, {"resources", {"pods"}}}}));
  extra["metadata"]["labels"] = {{"rbac.example.com/aggregate-to-monitoring", "true"}};
  json agg = role("", "aggregated", json::array());
  agg["aggregationRule"] = {
      {"clusterRoleSelectors",
       {{{"matchLabels", {{"rbac.example.com/aggregate-to-monitoring", "true"}}}}}}};
  o.cluster_roles = {monitoring, extra, agg};
  o.cluster_role_bindings.push_back(
      binding("", "b", "ClusterRole", "aggregated", json::array({user("alice")})));
  auto p = Policy::compile(o);
  CHECK(p->authorize(resource("get", "", "pods", "x", "p")).allowed);
  CHECK(p->authorize(resource("list", "", "services", "x")).allowed);
  CHECK_FALSE(p->authorize(resource("delete", "", "pods", "x", "p")).allowed);
  // The duplicate pods rule is kept once.
  CHECK(p->cluster_role_rules("aggregated")->size() == 2);
}

TEST_CASE("the bootstrap policy: cluster-admin, view < edit < admin, discovery", "[apiserver]") {
  Objects o;
  o.cluster_roles = bootstrap_cluster_roles();
  o.cluster_role_bindings = bootstrap_cluster_role_bindings();
  o.role_bindings.push_back(
      binding("team", "viewers", "ClusterRole", "view", json::array({user("v")})));
  o.role_bindings.push_back(
      binding("team", "editors", "ClusterRole", "edit", json::array({user("e")})));
  o.role_bindings.push_back(
      binding("team", "admins", "ClusterRole", "admin", json::array({user("a")})));
  auto p = Policy::compile(o);
  auto as = [](std::string u, Attributes a) {
    a.user = std::move(u);
    a.groups = {"system:authenticated"};
    return a;
  };
  const Attributes list_pods = resource("list", "", "pods", "team");
  const Attributes create_deploy = resource("create", "apps", "deployments", "team");
  const Attributes read_secret = resource("get", "", "secrets", "team", "s");
  const Attributes create_role = resource("create", "rbac.authorization.k8s.io", "roles", "team");
  for (const std::string u : {"v", "e", "a"}) CHECK(p->authorize(as(u, list_pods)).allowed);
  CHECK_FALSE(p->authorize(as("v", create_deploy)).allowed);
  CHECK_FALSE(p->authorize(as("v", read_secret)).allowed);
  CHECK(p->authorize(as("e", create_deploy)).allowed);
  CHECK(p->authorize(as("e", read_secret)).allowed);
  CHECK_FALSE(p->authorize(as("e", create_role)).allowed);
  CHECK(p->authorize(as("a", create_role)).allowed);
  CHECK_FALSE(p->authorize(as("a", resource("list", "", "pods", "elsewhere"))).allowed);

  // Every authenticated user: discovery, version, health and the self reviews.
  Attributes anyone = path("get", "/apis/apps/v1");
  CHECK(p->authorize(anyone).allowed);
  CHECK(p->authorize(path("get", "/version")).allowed);
  CHECK(p->authorize(path("get", "/openapi/v3")).allowed);
  CHECK_FALSE(p->authorize(path("get", "/metrics")).allowed);
  CHECK(
      p->authorize(as("x", resource("create", "authorization.k8s.io", "selfsubjectaccessreviews")))
          .allowed);
  CHECK(p->authorize(as("x", resource("create", "authentication.k8s.io", "selfsubjectreviews")))
            .allowed);
  CHECK_FALSE(p->authorize(as("x", resource("list", "", "namespaces"))).allowed);
  // Unauthenticated callers: health and version only.
  Attributes anon = path("get", "/healthz");
  anon.user = "system:anonymous";
  anon.groups = {"system:unauthenticated"};
  CHECK(p->authorize(anon).allowed);
  anon.path = "/api";
  CHECK_FALSE(p->authorize(anon).allowed);
  // system:masters through the cluster-admin binding.
  Attributes admin = resource("delete", "apps", "deployments", "x", "d");
  admin.groups = {"system:masters"};
  CHECK(p->authorize(admin).allowed);

  // The aggregated roles are stored with their rules filled in, so that
  // `kubectl get clusterrole view -o yaml` shows what it grants.
  for (const json& r : bootstrap_cluster_roles()) {
    if (r["metadata"]["name"] != "edit") continue;
    CHECK(r["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"] ==
          json{{"rbac.authorization.k8s.io/aggregate-to-edit", "true"}});
    std::vector<PolicyRule> rules;
    for (const json& j : r["rules"]) rules.push_back(PolicyRule::from_json(j));
    CHECK(rules == *p->cluster_role_rules("edit"));
    bool lists_pods = false;
    for (const PolicyRule& pr : rules) lists_pods |= rule_allows(list_pods, pr);
    CHECK(lists_pods);
  }
}

TEST_CASE("escalation: held rules must cover wanted ones", "[apiserver]") {
  const std::vector<PolicyRule> held = {
      rule({{"verbs", {"get", "list"}},
            {"apiGroups", {"", "apps"}},
            {"resources", {"pods", "deployments"}}}),
      rule({{"verbs", {"*"}},
            {"apiGroups", {""}},
            {"resources", {"configmaps"}},
            {"resourceNames", {"a"}}}),
      rule({{"verbs", {"get"}}, {"apiGroups", {"*"}}, {"resources", {"*/status"}}}),
      rule({{"verbs", {"get"}}, {"nonResourceURLs", {"/apis/*"}}}),
  };
  auto missing = [&](const json& wanted) {
    std::vector<std::string> out;
    for (const PolicyRule& m : uncovered_rules(held, {rule(wanted)}))
      out.push_back(compact_string(m));
    return out;
  };
  CHECK(missing({{"verbs", {"list"}}, {"apiGroups", {""}}, {"resources", {"pods"}}}).empty());
  CHECK(missing({{"verbs", {"get"}}, {"apiGroups", {"batch"}}, {"resources", {"jobs/status"}}})
            .empty());
  CHECK(missing({{"verbs", {"delete"}},
                 {"apiGroups", {""}},
                 {"resources", {"configmaps"}},
                 {"resourceNames", {"a"}}})
            .empty());
  CHECK(missing({{"verbs", {"get"}}, {"nonResourceURLs", {"/apis/apps"}}}).empty());
  CHECK(
      missing(
          {{"verbs", {"get", "delete", "watch"}}, {"apiGroups", {""}}, {"resources", {"pods"}}}) ==
      std::vector<std::string>{
          "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\" \"watch\"]}"});
  // A name-restricted grant does not cover every name.
  CHECK(
      missing({{"verbs", {"get"}}, {"apiGroups", {""}}, {"resources", {"configmaps"}}}) ==
      std::vector<std::string>{"{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"get\"]}"});
  CHECK(missing({{"verbs", {"*"}}, {"apiGroups", {"*"}}, {"resources", {"*"}}}) ==
        std::vector<std::string>{"{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}"});
  CHECK(missing({{"verbs", {"get"}}, {"nonResourceURLs", {"/metrics"}}}) ==
        std::vector<std::string>{"{NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}"});
  CHECK(uncovered_rules({rule({{"verbs", {"*"}}, {"apiGroups", {"*"}}, {"resources", {"*"}}})},
                        {rule({{"verbs", {"escalate"}},
                               {"apiGroups", {"rbac.authorization.k8s.io"}},
                               {"resources", {"roles"}},
                               {"resourceNames", {"x"}}})})
            .empty());
}

TEST_CASE("denials are worded as kube-apiserver words them", "[apiserver]") {
  CHECK(forbidden_message(resource("list", "", "pods", "default")) ==
        "User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace "
        "\"default\"");
  CHECK(forbidden_message(resource("list", "", "nodes")) ==
        "User \"alice\" cannot list resource \"nodes\" in API group \"\" at the cluster scope");
  CHECK(forbidden_message(resource("update", "apps", "deployments", "x", "d", "scale")) ==
        "User \"alice\" cannot update resource \"deployments/scale\" in API group \"apps\" in the "
        "namespace \"x\"");
  CHECK(forbidden_message(path("get", "/metrics")) ==
        "User \"alice\" cannot get path \"/metrics\"");
  CHECK(go_quote("a\"b\\c\n") == "\"a\\\"b\\\\c\\n\"");
}

}  // namespace
}  // namespace vkube::apiserver::rbac
