// RBAC (rbac.authorization.k8s.io/v1) evaluation, with kube-apiserver's
// semantics: Roles, ClusterRoles (aggregation included), RoleBindings and
// ClusterRoleBindings, `*` wildcards, resourceNames, `*/subresource` and
// non-resource URL prefixes ending in `*`.
//
// Pure functions over the stored JSON objects, no I/O: the API server's
// authorizer compiles a Policy from what the store holds and keeps it until
// an RBAC object changes. A compiled Policy is immutable, so any number of
// threads may share it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/api/selector.h"

namespace vkube::apiserver::rbac {

using json = nlohmann::json;

inline constexpr std::string_view kGroup = "rbac.authorization.k8s.io";
// Members are allowed everything, without a lookup (kube's privileged group).
inline constexpr std::string_view kMastersGroup = "system:masters";
inline constexpr std::string_view kAuthenticatedGroup = "system:authenticated";
inline constexpr std::string_view kUnauthenticatedGroup = "system:unauthenticated";
inline constexpr std::string_view kAnonymousUser = "system:anonymous";
inline constexpr std::string_view kServiceAccountPrefix = "system:serviceaccount:";

// What a request asks to do (kube's authorizer.Attributes).
struct Attributes {
  std::string user;
  std::vector<std::string> groups;
  std::string verb;
  bool resource_request = false;
  // Resource requests. `ns` is empty at the cluster scope.
  std::string api_group;
  std::string resource;
  std::string subresource;
  std::string ns;
  std::string name;
  // Non-resource requests: the URL path ("/metrics").
  std::string path;
};

// One rule of a Role or ClusterRole.
struct PolicyRule {
  std::vector<std::string> verbs;
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> resource_names;
  std::vector<std::string> non_resource_urls;

  // Reads a rule object; fields of the wrong type read as empty.
  static PolicyRule from_json(const json& rule);
  // The rule object, empty fields left out (as kube serialises it).
  json to_json() const;
  bool operator==(const PolicyRule&) const = default;
};

// Whether `rule` grants the request: its verb, and its group, resource (or
// `*/subresource`) and name, or its non-resource path.
bool rule_allows(const Attributes& a, const PolicyRule& rule);

// A subject of a binding: kind User, Group or ServiceAccount.
struct Subject {
  std::string kind;
  std::string name;
  std::string ns;  // ServiceAccounts; defaults to the binding's namespace
};

// Whether `s` names the user or one of its groups. A ServiceAccount subject
// matches the user "system:serviceaccount:<ns>:<name>".
bool subject_applies(const Subject& s, std::string_view user,
                     const std::vector<std::string>& groups, std::string_view binding_ns);

// True when `groups` holds system:masters.
bool is_privileged(const std::vector<std::string>& groups);

struct Decision {
  bool allowed = false;
  // "RBAC: allowed by ClusterRoleBinding ..." when allowed; when denied, the
  // broken references met on the way ("RBAC: role.rbac... \"x\" not found")
  // or empty.
  std::string reason;
};

// The rules that apply to a user in a namespace (SelfSubjectRulesReview).
struct UserRules {
  std::vector<PolicyRule> rules;
  std::vector<std::string> errors;  // bindings whose role is missing
};

// The RBAC objects in the store, as JSON.
struct Objects {
  std::vector<json> roles;
  std::vector<json> cluster_roles;
  std::vector<json> role_bindings;
  std::vector<json> cluster_role_bindings;
};

// One RBAC object as compile() needs it, read from its JSON once. Immutable:
// the authorizer keeps it while the object is unchanged, and successive
// policies share its rules. (On a host with a hundred tenants, each with a
// Role, a ClusterRole and their bindings, reading every rule of every role
// again at each RBAC write was most of what admitting a tenant cost there.)
struct CompiledObject {
  enum class Kind { kRole, kClusterRole, kRoleBinding, kClusterRoleBinding };
  Kind kind = Kind::kRole;
  std::string name;
  std::string ns;
  // Roles and ClusterRoles: their own rules (before aggregation).
  std::shared_ptr<const std::vector<PolicyRule>> rules;
  // ClusterRoles: labels, and the selectors of an aggregationRule.
  json labels;
  std::vector<api::LabelSelector> selectors;
  // Bindings.
  std::string role_kind;
  std::string role_name;
  std::vector<Subject> subjects;

  // nullptr when `obj` is not an object (it grants nothing).
  static std::shared_ptr<const CompiledObject> read(Kind kind, const json& obj);
};
using CompiledObjects = std::vector<std::shared_ptr<const CompiledObject>>;

class Policy {
 public:
  // Compiles the objects. Malformed parts (a rule of the wrong type, a bad
  // aggregation selector) grant nothing; they never fail the whole policy.
  static std::shared_ptr<const Policy> compile(const Objects& objects);
  static std::shared_ptr<const Policy> compile(const CompiledObjects& objects);

  // Allows the request if a ClusterRoleBinding, or a RoleBinding in the
  // request's namespace, binds the user (or one of its groups) to a role
  // with a rule that allows it. Does not special-case system:masters.
  Decision authorize(const Attributes& a) const;

  // Every rule bound to the user cluster-wide and in namespace `ns`.
  UserRules rules_for(std::string_view user, const std::vector<std::string>& groups,
                      std::string_view ns) const;

  // A ClusterRole's rules, aggregated ones included; nullptr if absent.
  const std::vector<PolicyRule>* cluster_role_rules(std::string_view name) const;
  // A Role's rules; nullptr if absent.
  const std::vector<PolicyRule>* role_rules(std::string_view ns, std::string_view name) const;

  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

 private:
  Policy() = default;

  struct Binding {
    bool cluster = false;  // a ClusterRoleBinding
    std::string name;
    std::string ns;
    std::string role_kind;
    std::string role_name;
    std::vector<Subject> subjects;
    const std::vector<PolicyRule>* rules = nullptr;  // into the role maps
    std::string error;                               // when rules is null
  };
  // Calls visit(binding, subject) for each binding that applies to the user,
  // ClusterRoleBindings first, until it returns false.
  template <typename Visit>
  void visit_bindings(std::string_view user, const std::vector<std::string>& groups,
                      std::string_view ns, Visit&& visit) const;

  using Rules = std::shared_ptr<const std::vector<PolicyRule>>;
  std::map<std::string, Rules, std::less<>> cluster_roles_;  // aggregated
  std::map<std::string, Rules, std::less<>> roles_;          // "ns/name"
  std::vector<Binding> cluster_bindings_;
  std::map<std::string, std::vector<Binding>, std::less<>> role_bindings_;  // by namespace
};

// Escalation prevention (kube's validation.Covers): the parts of `wanted`,
// broken down to one verb and one group, resource and name (or one path)
// each, that no rule of `held` covers, with parts that differ only in their
// verb merged again. Empty when `held` covers all of `wanted`.
std::vector<PolicyRule> uncovered_rules(const std::vector<PolicyRule>& held,
                                        const std::vector<PolicyRule>& wanted);

// A rule as kube prints it in escalation errors:
//   {APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}
std::string compact_string(const PolicyRule& r);

// The message of a denial, as kube-apiserver words it:
//   User "alice" cannot list resource "pods" in API group "" in the namespace "default"
//   User "alice" cannot get path "/metrics"
std::string forbidden_message(const Attributes& a);

// Go's %q of a string: double quotes, with \", \\ and control characters escaped.
std::string go_quote(std::string_view s);

// The bootstrap policy kube-apiserver creates at start (its RBAC post-start
// hook): cluster-admin, admin, edit, view (aggregated from the
// system:aggregate-to-* roles), system:discovery, system:basic-user,
// system:public-info-viewer, and their ClusterRoleBindings.
std::vector<json> bootstrap_cluster_roles();
std::vector<json> bootstrap_cluster_role_bindings();

}  // namespace vkube::apiserver::rbac
