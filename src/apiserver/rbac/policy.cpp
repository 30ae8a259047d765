// Compiling the stored RBAC objects into a Policy, and evaluating it.
#include "policy.h"

#include <set>

#include "vkube/api/selector.h"

namespace vkube::apiserver::rbac {

namespace {

std::string str(const json& obj, const char* field) {
  auto it = obj.find(field);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& meta(const json& obj) {
  static const json kEmpty = json::object();
  auto it = obj.find("metadata");
  return it != obj.end() && it->is_object() ? *it : kEmpty;
}

std::vector<PolicyRule> read_rules(const json& role) {
  std::vector<PolicyRule> out;
  auto it = role.find("rules");
  if (it == role.end() || !it->is_array()) return out;
  for (const json& r : *it) out.push_back(PolicyRule::from_json(r));
  return out;
}

void add_unique(std::vector<PolicyRule>& to, const std::vector<PolicyRule>& rules) {
  for (const PolicyRule& r : rules)
    if (std::find(to.begin(), to.end(), r) == to.end()) to.push_back(r);
}

using Rules = std::shared_ptr<const std::vector<PolicyRule>>;
using RawClusterRoles = std::map<std::string_view, const CompiledObject*>;

// A ClusterRole's rules: its own, plus (with an aggregationRule) those of
// every other ClusterRole whose labels one of its selectors matches, as
// kube's aggregation controller would have written them. `busy` breaks
// cycles. A role without an aggregationRule shares its compiled rules.
const Rules& aggregate(std::string_view name, const RawClusterRoles& raw,
                       std::set<std::string_view>& busy,
                       std::map<std::string, Rules, std::less<>>& done) {
  if (auto it = done.find(name); it != done.end()) return it->second;
  const CompiledObject& role = *raw.at(name);
  if (role.selectors.empty()) return done[std::string(name)] = role.rules;
  auto rules = std::make_shared<std::vector<PolicyRule>>(*role.rules);
  busy.insert(name);
  for (const auto& [other, candidate] : raw) {
    if (other == name || busy.contains(other)) continue;
    bool selected = false;
    for (const api::LabelSelector& s : role.selectors) selected |= s.matches(candidate->labels);
    if (selected) add_unique(*rules, *aggregate(other, raw, busy, done));
  }
  busy.erase(name);
  return done[std::string(name)] = std::move(rules);
}

std::vector<Subject> read_subjects(const json& binding) {
  std::vector<Subject> out;
  auto it = binding.find("subjects");
  if (it == binding.end() || !it->is_array()) return out;
  for (const json& s : *it) {
    if (!s.is_object()) continue;
    out.push_back({str(s, "kind"), str(s, "name"), str(s, "namespace")});
  }
  return out;
}

std::string describe_subject(const Subject& s, std::string_view binding_ns) {
  if (s.kind == "ServiceAccount")
    return s.kind + " " + go_quote(s.name + "/" + std::string(s.ns.empty() ? binding_ns : s.ns));
  return s.kind + " " + go_quote(s.name);
}

}  // namespace

std::shared_ptr<const CompiledObject> CompiledObject::read(Kind kind, const json& obj) {
  if (!obj.is_object()) return nullptr;
  auto c = std::make_shared<CompiledObject>();
  c->kind = kind;
  const json& m = meta(obj);
  c->name = str(m, "name");
  if (kind == Kind::kRole || kind == Kind::kRoleBinding) c->ns = str(m, "namespace");
  switch (kind) {
    case Kind::kClusterRole:
      c->labels = m.contains("labels") ? m["labels"] : json::object();
      if (auto agg = obj.find("aggregationRule"); agg != obj.end() && agg->is_object()) {
        const json selectors = agg->value("clusterRoleSelectors", json::array());
        for (const json& sel : selectors.is_array() ? selectors : json::array()) {
          if (!sel.is_object()) continue;  // a null selector selects nothing
          auto parsed = api::LabelSelector::from_json(sel);
          if (parsed.is_ok()) c->selectors.push_back(std::move(parsed).value());
        }
      }
      [[fallthrough]];
    case Kind::kRole:
      c->rules = std::make_shared<const std::vector<PolicyRule>>(read_rules(obj));
      break;
    case Kind::kRoleBinding:
    case Kind::kClusterRoleBinding: {
      const json ref = obj.value("roleRef", json::object());
      c->role_kind = ref.is_object() ? str(ref, "kind") : "";
      c->role_name = ref.is_object() ? str(ref, "name") : "";
      c->subjects = read_subjects(obj);
      break;
    }
  }
  return c;
}

std::shared_ptr<const Policy> Policy::compile(const Objects& objects) {
  CompiledObjects compiled;
  auto read_all = [&](const std::vector<json>& from, CompiledObject::Kind kind) {
    for (const json& o : from)
      if (auto c = CompiledObject::read(kind, o)) compiled.push_back(std::move(c));
  };
  read_all(objects.cluster_roles, CompiledObject::Kind::kClusterRole);
  read_all(objects.roles, CompiledObject::Kind::kRole);
  read_all(objects.cluster_role_bindings, CompiledObject::Kind::kClusterRoleBinding);
  read_all(objects.role_bindings, CompiledObject::Kind::kRoleBinding);
  return compile(compiled);
}

std::shared_ptr<const Policy> Policy::compile(const CompiledObjects& objects) {
  using Kind = CompiledObject::Kind;
  std::shared_ptr<Policy> p(new Policy());

  RawClusterRoles raw;
  for (const auto& o : objects)
    if (o && o->kind == Kind::kClusterRole) raw[o->name] = o.get();
  std::set<std::string_view> busy;
  for (const auto& entry : raw) aggregate(entry.first, raw, busy, p->cluster_roles_);

  for (const auto& o : objects)
    if (o && o->kind == Kind::kRole) p->roles_[o->ns + "/" + o->name] = o->rules;

  auto read_binding = [&](const CompiledObject& obj, bool cluster) {
    Binding b;
    b.cluster = cluster;
    b.name = obj.name;
    b.ns = cluster ? "" : obj.ns;
    b.role_kind = obj.role_kind;
    b.role_name = obj.role_name;
    b.subjects = obj.subjects;
    if (b.role_kind == "ClusterRole") {
      if (auto it = p->cluster_roles_.find(b.role_name); it != p->cluster_roles_.end())
        b.rules = it->second.get();
      else
        b.error = "clusterrole.rbac.authorization.k8s.io " + go_quote(b.role_name) + " not found";
    } else if (b.role_kind == "Role" && !cluster) {
      if (auto it = p->roles_.find(b.ns + "/" + b.role_name); it != p->roles_.end())
        b.rules = it->second.get();
      else
        b.error = "role.rbac.authorization.k8s.io " + go_quote(b.role_name) + " not found";
    } else {
      b.error = "unsupported role reference kind: " + go_quote(b.role_kind);
    }
    return b;
  };
  for (const auto& o : objects)
    if (o && o->kind == Kind::kClusterRoleBinding)
      p->cluster_bindings_.push_back(read_binding(*o, true));
  for (const auto& o : objects) {
    if (!o || o->kind != Kind::kRoleBinding) continue;
    Binding b = read_binding(*o, false);
    p->role_bindings_[b.ns].push_back(std::move(b));
  }
  return p;
}

template <typename Visit>
void Policy::visit_bindings(std::string_view user, const std::vector<std::string>& groups,
                            std::string_view ns, Visit&& visit) const {
  auto visit_all = [&](const std::vector<Binding>& bindings) {
    for (const Binding& b : bindings) {
      for (const Subject& s : b.subjects) {
        if (!subject_applies(s, user, groups, b.ns)) continue;
        if (!visit(b, s)) return false;
        break;  // one matching subject per binding, as kube's appliesTo
      }
    }
    return true;
  };
  if (!visit_all(cluster_bindings_) || ns.empty()) return;
  if (auto it = role_bindings_.find(ns); it != role_bindings_.end()) visit_all(it->second);
}

Decision Policy::authorize(const Attributes& a) const {
  Decision d;
  std::vector<std::string> errors;
  visit_bindings(a.user, a.groups, a.ns, [&](const Binding& b, const Subject& s) {
    if (b.rules == nullptr) {
      errors.push_back(b.error);
      return true;
    }
    for (const PolicyRule& rule : *b.rules) {
      if (!rule_allows(a, rule)) continue;
      d.allowed = true;
      const std::string who = b.cluster ? b.name : b.name + "/" + b.ns;
      d.reason = "RBAC: allowed by " +
                 std::string(b.cluster ? "ClusterRoleBinding " : "RoleBinding ") + go_quote(who) +
                 " of " + b.role_kind + " " + go_quote(b.role_name) + " to " +
                 describe_subject(s, b.ns);
      return false;
    }
    return true;
  });
  if (!d.allowed && !errors.empty()) {
    // utilerrors.NewAggregate: one message alone, several as "[a, b]".
    std::string joined;
    for (size_t i = 0; i < errors.size(); ++i) joined += (i ? ", " : "") + errors[i];
    d.reason = "RBAC: " + (errors.size() == 1 ? joined : "[" + joined + "]");
  }
  return d;
}

UserRules Policy::rules_for(std::string_view user, const std::vector<std::string>& groups,
                            std::string_view ns) const {
  UserRules out;
  visit_bindings(user, groups, ns, [&](const Binding& b, const Subject&) {
    if (b.rules == nullptr)
      out.errors.push_back(b.error);
    else
      out.rules.insert(out.rules.end(), b.rules->begin(), b.rules->end());
    return true;
  });
  return out;
}

const std::vector<PolicyRule>* Policy::cluster_role_rules(std::string_view name) const {
  auto it = cluster_roles_.find(name);
  return it == cluster_roles_.end() ? nullptr : it->second.get();
}

const std::vector<PolicyRule>* Policy::role_rules(std::string_view ns,
                                                  std::string_view name) const {
  auto it = roles_.find(std::string(ns) + "/" + std::string(name));
  return it == roles_.end() ? nullptr : it->second.get();
}

}  // namespace vkube::apiserver::rbac
