// Escalation prevention for RBAC writes (kube's RBAC registry strategies):
// a user may put into a Role or ClusterRole only permissions it holds, and
// bind a role only if it holds the role's permissions, unless it may
// `escalate` (roles) or `bind` (bindings). system:masters may do anything.
#include "authz.h"
#include "object.h"
#include "server_impl.h"

namespace vkube::apiserver {

namespace {

std::vector<rbac::PolicyRule> rules_of(const json& role) {
  std::vector<rbac::PolicyRule> out;
  auto it = role.find("rules");
  if (it == role.end() || !it->is_array()) return out;
  for (const json& r : *it) out.push_back(rbac::PolicyRule::from_json(r));
  return out;
}

}  // namespace

std::optional<ApiError> admit_rbac(Context& c, const json& obj) {
  const api::Resource& r = c.resource();
  if (r.gv.group != rbac::kGroup || rbac::is_privileged(c.user.groups)) return std::nullopt;
  const std::string ns = r.namespaced ? c.info.namespace_ : "";
  const std::string name = name_of(obj);
  auto may = [&](const std::string& verb, const std::string& resource, const std::string& object) {
    rbac::Attributes a;
    a.user = c.user.name;
    a.groups = c.user.groups;
    a.verb = verb;
    a.resource_request = true;
    a.api_group = std::string(rbac::kGroup);
    a.resource = resource;
    a.ns = ns;
    a.name = object;
    return c.server.authorizer().authorize(a).allowed;
  };
  auto refuse = [&](const std::string& why) {
    json details = {{"group", rbac::kGroup}, {"kind", r.plural}};
    std::string what = r.group_resource();
    if (!name.empty()) {
      details["name"] = name;
      what += " " + rbac::go_quote(name);
    }
    return ApiError(Status(Code::kForbidden, what + " is forbidden: " + why), details);
  };

  auto policy = c.server.authorizer().policy();
  if (!policy.is_ok()) return refuse(policy.status().message());
  std::vector<rbac::PolicyRule> wanted;
  if (r.plural == "roles" || r.plural == "clusterroles") {
    if (may("escalate", r.plural, c.info.name)) return std::nullopt;
    wanted = rules_of(obj);
    // Aggregation may pull in anything: only for who holds everything.
    if (obj.contains("aggregationRule") && !obj["aggregationRule"].is_null())
      wanted = {{{"*"}, {"*"}, {"*"}, {}, {}}, {{"*"}, {}, {}, {}, {"*"}}};
  } else {
    const json ref = obj.value("roleRef", json::object());
    const std::string kind = str_at(ref, "kind");
    const std::string role = str_at(ref, "name");
    if (may("bind", kind == "Role" ? "roles" : "clusterroles", role)) return std::nullopt;
    const std::vector<rbac::PolicyRule>* rules =
        kind == "Role" ? (*policy)->role_rules(ns, role) : (*policy)->cluster_role_rules(role);
    if (rules == nullptr)
      return refuse((kind == "Role" ? "role" : "clusterrole") +
                    std::string(".rbac.authorization.k8s.io ") + rbac::go_quote(role) +
                    " not found");
    wanted = *rules;
  }
  rbac::UserRules held = (*policy)->rules_for(c.user.name, c.user.groups, ns);
  std::vector<rbac::PolicyRule> missing = rbac::uncovered_rules(held.rules, wanted);
  if (missing.empty()) return std::nullopt;
  std::string groups = "[";
  for (size_t i = 0; i < c.user.groups.size(); ++i)
    groups += (i ? " " : "") + rbac::go_quote(c.user.groups[i]);
  std::string msg = "user " + rbac::go_quote(c.user.name) + " (groups=" + groups +
                    "]) is attempting to grant RBAC permissions not currently held:";
  for (const rbac::PolicyRule& m : missing) msg += "\n" + rbac::compact_string(m);
  if (!held.errors.empty()) {
    msg += "; resolution errors: [";
    for (size_t i = 0; i < held.errors.size(); ++i) msg += (i ? " " : "") + held.errors[i];
    msg += "]";
  }
  return refuse(msg);
}

}  // namespace vkube::apiserver
