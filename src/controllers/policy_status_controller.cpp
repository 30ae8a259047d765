// The ValidatingAdmissionPolicy status controller (kube's
// validatingadmissionpolicy-status): for each generation of a policy, type-checks its
// validations' expression and messageExpression against the schemas of the kinds its
// matchConstraints name (at most 10, as kube does; rules with wildcards are skipped) and of its
// paramKind, and writes status.observedGeneration and status.typeChecking.expressionWarnings:
//   fieldRef: spec.validations[0].expression
//   warning:  apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica' ...
// Kinds are found through discovery and their schemas in /openapi/v3, so custom resources are
// checked like built-in ones; each of spec.variables has the type of its expression.
#include <map>
#include <optional>
#include <set>

#include "controller.h"
#include "vkube/cel/cel.h"
#include "vkube/common/log.h"

namespace vkube::controllers {

namespace {

constexpr std::size_t kMaxTypesToCheck = 10;
const ResourceKey kPolicies{"admissionregistration.k8s.io", "validatingadmissionpolicies"};

std::string gv_path(const std::string& group, const std::string& version) {
  return group.empty() ? "api/" + version : "apis/" + group + "/" + version;
}

struct Gvk {
  std::string group, version, kind;
  // As Go prints a schema.GroupVersionKind: "apps/v1, Kind=Deployment", "/v1, Kind=Pod".
  std::string text() const { return group + "/" + version + ", Kind=" + kind; }
  bool operator<(const Gvk& o) const {
    return std::tie(group, version, kind) < std::tie(o.group, o.version, o.kind);
  }
};

// Discovery and OpenAPI documents, fetched once per reconcile.
class Schemas {
 public:
  explicit Schemas(LocalClient& client) : client_(client) {}

  std::optional<std::string> kind_of(const std::string& group, const std::string& version,
                                     const std::string& resource) {
    const json& list = fetch(discovery_, "/" + gv_path(group, version));
    for (const json& r : list.value("resources", json::array()))
      if (r.value("name", "") == resource) return r.value("kind", "");
    return std::nullopt;
  }

  // The component schema of a kind, and the document its $refs resolve in.
  const json* schema(const Gvk& k, const json** doc) {
    const json& d = fetch(openapi_, "/openapi/v3/" + gv_path(k.group, k.version));
    *doc = &d;
    auto schemas = components(d);
    if (schemas == nullptr) return nullptr;
    for (const auto& [name, s] : schemas->items()) {
      for (const json& g : s.value("x-kubernetes-group-version-kind", json::array()))
        if (g.value("group", "") == k.group && g.value("version", "") == k.version &&
            g.value("kind", "") == k.kind)
          return &s;
    }
    return nullptr;
  }

  static const json* components(const json& doc) {
    auto c = doc.find("components");
    if (c == doc.end() || !c->is_object()) return nullptr;
    auto s = c->find("schemas");
    return s != c->end() && s->is_object() ? &*s : nullptr;
  }

 private:
  const json& fetch(std::map<std::string, json>& cache, const std::string& path) {
    auto it = cache.find(path);
    if (it != cache.end()) return it->second;
    ApiResult r = client_.call("GET", path);
    return cache[path] = r.ok() ? std::move(r.body) : json::object();
  }

  LocalClient& client_;
  std::map<std::string, json> discovery_, openapi_;
};

bool has_wildcard(const json& list) {
  if (!list.is_array() || list.empty()) return true;
  for (const json& v : list)
    if (!v.is_string() || v.get<std::string>().find('*') != std::string::npos) return true;
  return false;
}

std::vector<std::string> strings(const json& list) {
  std::vector<std::string> out;
  for (const json& v : list) out.push_back(v.get<std::string>());
  return out;
}

// The kinds the policy's resourceRules name, without wildcards or subresources (kube's
// typesToCheck), sorted.
std::vector<Gvk> types_to_check(const json& spec, Schemas& schemas) {
  std::set<Gvk> out;
  const json& match = spec.value("matchConstraints", json::object());
  for (const json& rule : match.value("resourceRules", json::array())) {
    const json groups = rule.value("apiGroups", json()),
               versions = rule.value("apiVersions", json()),
               resources = rule.value("resources", json());
    if (has_wildcard(groups) || has_wildcard(versions) || has_wildcard(resources)) continue;
    for (const std::string& g : strings(groups))
      for (const std::string& v : strings(versions))
        for (const std::string& r : strings(resources)) {
          if (r.find('/') != std::string::npos) continue;
          auto kind = schemas.kind_of(g, v, r);
          if (!kind || kind->empty()) continue;
          out.insert({g, v, *kind});
          if (out.size() == kMaxTypesToCheck) return {out.begin(), out.end()};
        }
  }
  return {out.begin(), out.end()};
}

class PolicyStatusController final : public Controller {
 public:
  explicit PolicyStatusController(Context& ctx)
      : Controller(ctx, "validatingadmissionpolicy-status"),
        policies_(ctx.informers.cache(kPolicies)) {
    ctx.informers.on_event(kPolicies, [this](const ObjectEvent& e) {
      if (e.type != EventType::kDeleted && !checked(*e.object)) queue().add(e.key);
    });
  }

 private:
  static bool checked(const json& policy) {
    const json& status = policy.value("status", json::object());
    return status.contains("observedGeneration") &&
           status["observedGeneration"] == policy["metadata"].value("generation", json(1));
  }

  Status reconcile(const std::string& name) override {
    ObjectPtr policy = policies_.get("", name);
    if (!policy || checked(*policy)) return Status::ok();
    json warnings = type_check(*policy);
    json type_checking = json::object();
    type_checking["expressionWarnings"] = warnings.empty() ? json(nullptr) : std::move(warnings);
    json patch = {
        {"metadata", {{"resourceVersion", (*policy)["metadata"].value("resourceVersion", "")}}},
        {"status",
         {{"observedGeneration", (*policy)["metadata"].value("generation", json(1))},
          {"typeChecking", std::move(type_checking)}}}};
    ApiResult r = ctx_.client.call(
        "PATCH",
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/" + name + "/status",
        patch, "application/merge-patch+json");
    // A conflict: a newer generation is on its way through the informer.
    if (!r.ok() && r.code != 404 && r.code != 409)
      return Status::internal("writing the policy's status: " + r.body.dump());
    return Status::ok();
  }

  json type_check(const json& policy) {
    const json& spec = policy.value("spec", json::object());
    Schemas schemas(ctx_.client);
    const std::vector<Gvk> kinds = types_to_check(spec, schemas);
    struct Target {
      Gvk gvk;
      const json* schema;
      const json* doc;
    };
    std::vector<Target> targets;
    for (const Gvk& k : kinds) {
      const json* doc = nullptr;
      if (const json* s = schemas.schema(k, &doc)) targets.push_back({k, s, doc});
    }
    // The params' schema, from its own document.
    const json* params = nullptr;
    const json* params_doc = nullptr;
    const bool has_params = spec.contains("paramKind") && spec["paramKind"].is_object();
    if (has_params) {
      const std::string api_version = spec["paramKind"].value("apiVersion", "");
      const auto slash = api_version.find('/');
      Gvk p{slash == std::string::npos ? "" : api_version.substr(0, slash),
            slash == std::string::npos ? api_version : api_version.substr(slash + 1),
            spec["paramKind"].value("kind", "")};
      params = schemas.schema(p, &params_doc);
    }
    json out = json::array();
    if (targets.empty()) return out;
    const auto& names = cel::admission_names(has_params, true);
    // The variables, compiled once: each one's type flows into the expressions using it.
    std::vector<std::shared_ptr<const cel::Program>> variable_programs;
    std::vector<std::pair<std::string, const cel::Program*>> variables;
    for (const json& v : spec.value("variables", json::array())) {
      std::string error;
      variable_programs.push_back(cel::compile_in_cached(v.value("expression", ""), names, &error));
      variables.emplace_back(v.value("name", ""), variable_programs.back().get());
    }
    auto check = [&](const std::string& field_ref, const std::string& expr) {
      if (expr.empty()) return;
      std::string error;
      auto program = cel::compile_in_cached(expr, names, &error);
      if (!program) return;  // refused when written, or beyond vkube's CEL
      std::string text;
      for (const Target& t : targets) {
        cel::TypeEnv env;
        env.object = t.schema;
        env.params = params;
        env.variables = variables;
        env.resolve = [&](std::string_view ref) -> const json* {
          constexpr std::string_view kPrefix = "#/components/schemas/";
          if (ref.substr(0, kPrefix.size()) != kPrefix) return nullptr;
          const std::string key(ref.substr(kPrefix.size()));
          for (const json* doc : {t.doc, params_doc}) {
            const json* s = doc != nullptr ? Schemas::components(*doc) : nullptr;
            if (s != nullptr && s->contains(key)) return &(*s)[key];
          }
          return nullptr;
        };
        std::vector<std::string> issues = cel::check_types(*program, env);
        if (issues.empty()) continue;
        std::string joined;
        for (const std::string& i : issues) joined += (joined.empty() ? "" : "\n") + i;
        text += (text.empty() ? "" : "\n") + t.gvk.text() + ": " + joined + "\n";
      }
      if (!text.empty()) out.push_back({{"fieldRef", field_ref}, {"warning", text}});
    };
    const json& validations = spec.value("validations", json::array());
    for (std::size_t i = 0; i < validations.size(); ++i) {
      const std::string at = "spec.validations[" + std::to_string(i) + "]";
      check(at + ".expression", validations[i].value("expression", ""));
      check(at + ".messageExpression", validations[i].value("messageExpression", ""));
    }
    return out;
  }

  const Lister& policies_;
};

}  // namespace

std::unique_ptr<Controller> make_policy_status_controller(Context& ctx) {
  return std::make_unique<PolicyStatusController>(ctx);
}

}  // namespace vkube::controllers
