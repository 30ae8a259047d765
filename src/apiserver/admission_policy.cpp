// ValidatingAdmissionPolicy: each binding whose policy matches the request evaluates the policy's
// CEL validations over object, oldObject, request, namespaceObject, params and variables; a
// false one denies (validationActions Deny), warns (Warn) or is only logged (Audit), with
// kube-apiserver's wording:
//   deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding
//   'max-replicas-prod' denied request: failed expression: object.spec.replicas <= 5
#include <algorithm>

#include "admission_internal.h"
#include "object.h"
#include "server_impl.h"
#include "vkube/common/log.h"

namespace vkube::apiserver::admission {

namespace {

int reason_code(const std::string& reason) {
  if (reason == "Unauthorized") return 401;
  if (reason == "Forbidden") return 403;
  if (reason == "RequestEntityTooLarge") return 413;
  return 422;
}

struct Decision {
  bool failed = false;  // a validation was false, or one could not be evaluated
  bool error = false;   // could not be evaluated: the failurePolicy decides
  std::string message;
  std::string reason = "Invalid";
  // auditAnnotations: "<policy>/<key>" and the value its expression gave.
  std::vector<std::pair<std::string, std::string>> annotations;
};

// The param objects a binding gives its policy; kNotFound when none matched.
Result<std::vector<json>> params_of(Context& c, const Policy& p, const Binding& b,
                                    const AdmissionRequest& r) {
  std::vector<json> out;
  if (p.param_kind.empty()) {
    out.emplace_back(nullptr);
    return out;
  }
  if (!b.has_param_ref)
    return Status::invalid("failed to configure binding: paramRef is required when paramKind is "
                           "set on the policy");
  auto kinds = c.server.registry().snapshot();
  const Kind* kind = kinds->find_kind(p.param_api_version, p.param_kind);
  if (kind == nullptr)
    return Status::invalid("failed to configure policy: failed to find resource referenced by "
                           "paramKind: '" + p.param_api_version + ", Kind=" + p.param_kind + "'");
  std::string ns = b.param_namespace;
  if (ns.empty() && kind->resource.namespaced) ns = r.ns;
  if (!b.param_name.empty()) {
    auto kv = c.server.backend().get(Registry::key(*kind, ns, b.param_name));
    if (kv.is_ok()) {
      auto obj = decode_stored(*kv);
      if (obj.is_ok()) out.push_back(std::move(obj).value());
    }
  } else if (b.param_selector_set) {
    storage::ListOptions o;
    o.prefix = Registry::storage_prefix(*kind);
    if (kind->resource.namespaced) o.prefix += ns + "/";
    auto listed = c.server.backend().list(o);
    if (!listed.is_ok()) return listed.status();
    for (const storage::KeyValue& kv : listed->items) {
      auto obj = decode_stored(kv);
      if (!obj.is_ok()) continue;
      const json& meta = (*obj)["metadata"];
      if (labels_match(b.param_selector, meta.value("labels", json::object())))
        out.push_back(std::move(obj).value());
    }
  }
  if (out.empty()) return Status::not_found("no params found for policy binding with `" +
                                            std::string(b.deny_missing_param ? "Deny" : "Allow") +
                                            "` parameterNotFoundAction");
  return out;
}

// Evaluates one policy with one param object. `applies` false: a match condition did not hold.
Decision evaluate(const Policy& p, json activation, const cel::EvalOptions& options,
                  bool* applies) {
  Decision d;
  *applies = true;
  auto cond = evaluate_conditions(p.match_conditions, activation, options);
  if (!cond.matches) {
    *applies = false;
    return d;
  }
  if (!cond.error.empty()) {
    d.failed = d.error = true;
    d.message = cond.error;
    return d;
  }
  json& vars = activation["variables"];
  for (const auto& [name, e] : p.variables) {
    if (!e.program) continue;
    auto v = cel::evaluate(*e.program, activation, nullptr, options);
    if (v.ok) vars[name] = std::move(v.value);
  }
  // auditAnnotations: a string is recorded, null leaves the key out, anything else (or an
  // error) fails the policy as a validation that cannot be evaluated does.
  for (const auto& [key, e] : p.audit_annotations) {
    std::string error = e.program ? "" : "compilation error: " + e.error;
    if (e.program) {
      auto v = cel::evaluate(*e.program, activation, nullptr, options);
      if (!v.ok)
        error = "valueExpression '" + e.source + "' resulted in error: " + v.error;
      else if (v.value.is_string())
        d.annotations.emplace_back(p.name + "/" + key, v.value.get<std::string>());
      else if (!v.value.is_null())
        error = "valueExpression '" + e.source + "' resulted in error: must evaluate to a string "
                "or null";
    }
    if (!error.empty()) {
      d.failed = d.error = true;
      d.message = std::move(error);
      return d;
    }
  }
  for (const Validation& val : p.validations) {
    if (!val.expression.program) {
      d.failed = d.error = true;
      d.message = "compilation error: " + val.expression.error;
      return d;
    }
    auto v = cel::evaluate(*val.expression.program, activation, nullptr, options);
    if (!v.ok) {
      d.failed = d.error = true;
      d.message = "expression '" + val.expression.source + "' resulted in error: " + v.error;
      return d;
    }
    if (!v.value.is_boolean()) {
      d.failed = d.error = true;
      d.message = "expression '" + val.expression.source + "' resulted in error: must evaluate to bool";
      return d;
    }
    if (v.value.get<bool>()) continue;
    d.failed = true;
    d.reason = val.reason.empty() ? "Invalid" : val.reason;
    if (val.message_expression.program) {
      auto m = cel::evaluate(*val.message_expression.program, activation, nullptr, options);
      if (m.ok && m.value.is_string() && !m.value.get<std::string>().empty())
        d.message = m.value.get<std::string>();
    }
    if (d.message.empty())
      d.message = !val.message.empty() ? val.message : "failed expression: " + val.expression.source;
    return d;
  }
  return d;
}

ApiError denial(Context& c, const AdmissionRequest& r, const Policy& p, const Binding& b,
                const Decision& d) {
  const std::string message = "ValidatingAdmissionPolicy '" + p.name + "' with binding '" +
                              b.name + "' denied request: " + d.message;
  const api::Resource& res = c.resource();
  const std::string full = res.group_resource() + " \"" + r.name + "\" is forbidden: " + message;
  json details = {{"name", r.name},
                  {"kind", res.plural},
                  {"causes", json::array({{{"message", message}}})}};
  if (!res.gv.group.empty()) details["group"] = res.gv.group;
  ApiError e(Status(Code::kForbidden, full));
  e.raw = {{"kind", "Status"},
           {"apiVersion", "v1"},
           {"metadata", json::object()},
           {"status", "Failure"},
           {"message", full},
           {"reason", d.reason},
           {"details", std::move(details)},
           {"code", reason_code(d.reason)}};
  return e;
}

}  // namespace

std::optional<ApiError> run_policies(Context& c, const Snapshot& s, const AdmissionRequest& r,
                                     const Target& t, const json& ns_obj) {
  json base;
  std::optional<std::string> base_version;  // the version `base` shows the objects at
  const cel::Authorizer authorizer = cel_authorizer(c, r);
  cel::EvalOptions options;
  options.authorizer = &authorizer;
  for (const Binding& b : s.bindings) {
    auto pit = std::find_if(s.policies.begin(), s.policies.end(),
                            [&](const Policy& p) { return p.name == b.policy; });
    if (pit == s.policies.end()) continue;
    const Policy& p = *pit;
    // The policy's matchConstraints decide the version its CEL sees the objects at.
    const std::optional<std::string> version = resources_match(c, p.match, t, r, ns_obj);
    if (!version) continue;
    if (b.match.set && !resources_match(c, b.match, t, r, ns_obj)) continue;
    if (base_version != version) {
      base = version->empty() ? cel_activation(c, r, ns_obj)
                              : cel_activation(c, shown_at(c, r, *version), ns_obj);
      base_version = version;
    }
    auto params = params_of(c, p, b, r);
    std::vector<Decision> decisions;
    if (!params.is_ok()) {
      if (params.status().code() == Code::kNotFound && !b.deny_missing_param) continue;
      Decision d;
      d.failed = true;
      d.message = params.status().message();
      if (!p.fail_closed) continue;
      decisions.push_back(std::move(d));
    } else {
      for (const json& param : *params) {
        json activation = base;
        if (!p.param_kind.empty()) activation["params"] = param;
        bool applies = true;
        Decision d = evaluate(p, std::move(activation), options, &applies);
        // vkube keeps no audit log: its server log records them, as it does the Audit action.
        for (const auto& [key, value] : d.annotations)
          VKUBE_LOG(info, "validating admission policy audit annotation", {"binding", b.name},
                    {"key", key}, {"value", value}, {"resource", c.resource().group_resource()},
                    {"name", r.name}, {"namespace", r.ns});
        if (!applies || !d.failed) continue;
        decisions.push_back(std::move(d));
      }
    }
    if (decisions.empty()) c.server.admission().record_policy(p.name, b.name, "allow");
    for (const Decision& d : decisions) {
      if (d.error && !p.fail_closed) continue;
      for (const char* action : {"deny", "warn", "audit"})
        if ((action[0] == 'd' && b.deny) || (action[0] == 'w' && b.warn) ||
            (action[0] == 'a' && b.audit))
          c.server.admission().record_policy(p.name, b.name, action);
      if (b.deny) return denial(c, r, p, b, d);
      if (b.warn)
        c.warnings.push_back("Validation failed for ValidatingAdmissionPolicy '" + p.name +
                             "' with binding '" + b.name + "': " + d.message);
      if (b.audit)
        VKUBE_LOG(info, "validating admission policy audit", {"policy", p.name},
                  {"binding", b.name}, {"message", d.message});
    }
  }
  return std::nullopt;
}

}  // namespace vkube::apiserver::admission
