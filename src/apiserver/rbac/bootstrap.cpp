// The bootstrap policy: the roles every cluster starts with, over the
// resources vkube serves. The user-facing roles follow kube's layering:
// view < edit < admin, each aggregated from system:aggregate-to-* roles by
// label, so that a ClusterRole labelled aggregate-to-view extends all three.
#include "policy.h"

namespace vkube::apiserver::rbac {

namespace {

using Strings = std::vector<std::string>;

const Strings kRead = {"get", "list", "watch"};
const Strings kWrite = {"create", "delete", "deletecollection", "patch", "update"};
const Strings kAll = {"create", "delete", "deletecollection", "get",
                      "list",   "patch",  "update",           "watch"};

constexpr const char* kAggregateTo = "rbac.authorization.k8s.io/aggregate-to-";

json rule(const Strings& verbs, const Strings& groups, const Strings& resources) {
  return PolicyRule{verbs, groups, resources, {}, {}}.to_json();
}

json url_rule(const Strings& verbs, const Strings& urls) {
  return PolicyRule{verbs, {}, {}, {}, urls}.to_json();
}

json metadata(const std::string& name, json labels = json::object()) {
  labels["kubernetes.io/bootstrapping"] = "rbac-defaults";
  return {{"name", name},
          {"labels", labels},
          {"annotations", {{"rbac.authorization.kubernetes.io/autoupdate", "true"}}}};
}

json cluster_role(const std::string& name, json rules, json labels = json::object()) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRole"},
          {"metadata", metadata(name, std::move(labels))},
          {"rules", std::move(rules)}};
}

// A role whose rules are those of the roles labelled aggregate-to-<to>.
json aggregated_role(const std::string& name, const std::string& to, json labels) {
  json role = cluster_role(name, json::array(), std::move(labels));
  role["aggregationRule"] = {
      {"clusterRoleSelectors",
       json::array({{{"matchLabels", {{std::string(kAggregateTo) + to, "true"}}}}})}};
  return role;
}

json labels_for(std::initializer_list<const char*> targets) {
  json labels = json::object();
  for (const char* t : targets) labels[std::string(kAggregateTo) + t] = "true";
  return labels;
}

json view_rules() {
  return json::array({
      rule(kRead, {""},
           {"configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status",
            "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
            "services", "services/status"}),
      rule(kRead, {""},
           {"bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
            "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"}),
      rule(kRead, {""}, {"namespaces"}),
      rule(kRead, {"discovery.k8s.io"}, {"endpointslices"}),
      rule(kRead, {"apps"},
           {"controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
            "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
            "replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status"}),
      rule(kRead, {"autoscaling"}, {"horizontalpodautoscalers", "horizontalpodautoscalers/status"}),
      rule(kRead, {"batch"}, {"cronjobs", "cronjobs/status", "jobs", "jobs/status"}),
      rule(kRead, {"policy"}, {"poddisruptionbudgets", "poddisruptionbudgets/status"}),
      rule(kRead, {"networking.k8s.io"}, {"ingresses", "ingresses/status", "networkpolicies"}),
      rule(kRead, {"events.k8s.io"}, {"events"}),
      // What metrics-server's system:aggregated-metrics-reader adds to view.
      rule(kRead, {"metrics.k8s.io"}, {"pods", "nodes"}),
  });
}

json edit_rules() {
  return json::array({
      rule(kRead, {""},
           {"pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets",
            "services/proxy"}),
      rule({"impersonate"}, {""}, {"serviceaccounts"}),
      rule(kWrite, {""}, {"pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"}),
      rule({"create"}, {""}, {"pods/eviction"}),
      rule(kWrite, {""},
           {"configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
            "replicationcontrollers/scale", "secrets", "serviceaccounts", "services",
            "services/proxy"}),
      rule({"create"}, {""}, {"serviceaccounts/token"}),
      rule(kWrite, {"apps"},
           {"daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
            "replicasets/scale", "statefulsets", "statefulsets/scale"}),
      rule(kWrite, {"autoscaling"}, {"horizontalpodautoscalers"}),
      rule(kWrite, {"batch"}, {"cronjobs", "jobs"}),
      rule(kWrite, {"networking.k8s.io"}, {"ingresses", "networkpolicies"}),
      rule(kWrite, {"policy"}, {"poddisruptionbudgets"}),
      rule(kWrite, {"discovery.k8s.io"}, {"endpointslices"}),
  });
}

json admin_rules() {
  return json::array({
      rule({"create"}, {"authorization.k8s.io"}, {"localsubjectaccessreviews"}),
      rule(kAll, {"rbac.authorization.k8s.io"}, {"rolebindings", "roles"}),
  });
}

json binding(const std::string& name, const std::string& role, const Strings& groups) {
  json subjects = json::array();
  for (const std::string& g : groups)
    subjects.push_back({{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Group"}, {"name", g}});
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRoleBinding"},
          {"metadata", metadata(name)},
          {"roleRef",
           {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", role}}},
          {"subjects", subjects}};
}

}  // namespace

std::vector<json> bootstrap_cluster_roles() {
  std::vector<json> roles = {
      cluster_role("cluster-admin",
                   json::array({rule({"*"}, {"*"}, {"*"}), url_rule({"*"}, {"*"})})),
      aggregated_role("admin", "admin", json::object()),
      aggregated_role("edit", "edit", labels_for({"admin"})),
      aggregated_role("view", "view", labels_for({"edit"})),
      cluster_role("system:aggregate-to-admin", admin_rules(), labels_for({"admin"})),
      cluster_role("system:aggregate-to-edit", edit_rules(), labels_for({"admin", "edit"})),
      cluster_role("system:aggregate-to-view", view_rules(), labels_for({"admin", "edit", "view"})),
      cluster_role("system:discovery",
                   json::array({url_rule(
                       {"get"}, {"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                                 "/openapi", "/openapi/*", "/readyz", "/version", "/version/"})})),
      cluster_role("system:public-info-viewer",
                   json::array({url_rule(
                       {"get"}, {"/healthz", "/livez", "/readyz", "/version", "/version/"})})),
      cluster_role("system:auth-delegator",
                   json::array({rule({"create"}, {"authentication.k8s.io"}, {"tokenreviews"}),
                                rule({"create"}, {"authorization.k8s.io"},
                                     {"subjectaccessreviews"})})),
      cluster_role("system:service-account-issuer-discovery",
                   json::array({url_rule({"get"}, {"/.well-known/openid-configuration",
                                                   "/.well-known/openid-configuration/",
                                                   "/openid/v1/jwks", "/openid/v1/jwks/"})})),
      cluster_role(
          "system:basic-user",
          json::array({rule({"create"}, {"authorization.k8s.io"},
                            {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}),
                       rule({"create"}, {"authentication.k8s.io"}, {"selfsubjectreviews"})})),
  };
  // Store the aggregated roles with their rules filled in, as kube's
  // aggregation controller leaves them, so `kubectl get clusterrole view
  // -o yaml` shows what the role grants.
  Objects objects;
  objects.cluster_roles = roles;
  auto policy = Policy::compile(objects);
  for (json& role : roles) {
    if (!role.contains("aggregationRule")) continue;
    json rules = json::array();
    for (const PolicyRule& r :
         *policy->cluster_role_rules(role["metadata"]["name"].get<std::string>()))
      rules.push_back(r.to_json());
    role["rules"] = rules;
  }
  return roles;
}

std::vector<json> bootstrap_cluster_role_bindings() {
  return {
      binding("cluster-admin", "cluster-admin", {std::string(kMastersGroup)}),
      binding("system:discovery", "system:discovery", {std::string(kAuthenticatedGroup)}),
      binding("system:service-account-issuer-discovery",
              "system:service-account-issuer-discovery", {"system:serviceaccounts"}),
      binding("system:basic-user", "system:basic-user", {std::string(kAuthenticatedGroup)}),
      binding("system:public-info-viewer", "system:public-info-viewer",
              {std::string(kAuthenticatedGroup), std::string(kUnauthenticatedGroup)}),
  };
}

}  // namespace vkube::apiserver::rbac
