// Dynamic admission: the compiled snapshot of the admissionregistration objects, request
// matching, and the mutating and validating webhook passes (see admission.h).
#include "admission.h"

#include <algorithm>
#include <future>
#include <thread>

#include "admission_internal.h"
#include "authz.h"
#include "object.h"
#include "patch_engine.h"
#include "server_impl.h"
#include "vkube/common/base64.h"
#include "vkube/common/log.h"

namespace vkube::apiserver {

using admission::at;
using admission::list_at;
using admission::text;

namespace {

constexpr std::string_view kPrefix = "/registry/admissionregistration.k8s.io/";

std::vector<std::string> strings(const json& v) {
  std::vector<std::string> out;
  if (!v.is_array()) return out;
  for (const json& s : v)
    if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

api::LabelSelector selector(const json& v) {
  if (!v.is_object()) return {};
  auto s = api::LabelSelector::from_json(v);
  return s.is_ok() ? std::move(s).value() : api::LabelSelector();
}

bool any_of(const std::vector<std::string>& list, const std::string& value) {
  for (const std::string& s : list)
    if (s == "*" || s == value) return true;
  return false;
}

}  // namespace

namespace admission {

std::vector<Rule> parse_rules(const json& rules) {
  std::vector<Rule> out;
  if (!rules.is_array()) return out;
  for (const json& r : rules) {
    Rule rule;
    rule.operations = strings(at(r, "operations"));
    rule.groups = strings(at(r, "apiGroups"));
    rule.versions = strings(at(r, "apiVersions"));
    rule.resources = strings(at(r, "resources"));
    rule.resource_names = strings(at(r, "resourceNames"));
    rule.scope = text(r, "scope", "*");
    out.push_back(std::move(rule));
  }
  return out;
}

// admissionregistration's rule matching: "*" is every resource but no subresource, "*/*"
// everything, "pods/*" pods and its subresources, "*/status" every status subresource.
bool rule_matches(const Rule& rule, const Target& t) {
  if (!any_of(rule.operations, t.operation)) return false;
  if (!any_of(rule.groups, t.group)) return false;
  if (!any_of(rule.versions, t.version)) return false;
  if (rule.scope == "Cluster" && t.namespaced) return false;
  if (rule.scope == "Namespaced" && !t.namespaced) return false;
  if (!rule.resource_names.empty() && std::find(rule.resource_names.begin(),
                                                rule.resource_names.end(),
                                                t.name) == rule.resource_names.end())
    return false;
  for (const std::string& res : rule.resources) {
    auto slash = res.find('/');
    std::string main = res.substr(0, slash);
    std::string sub = slash == std::string::npos ? "" : res.substr(slash + 1);
    if (main != "*" && main != t.resource) continue;
    if (slash == std::string::npos) {
      if (t.subresource.empty()) return true;
      continue;
    }
    if (sub == "*" || sub == t.subresource) return true;
  }
  return false;
}

std::optional<std::string> matched_version(Context& c, const std::vector<Rule>& rules,
                                           bool equivalent, const Target& t) {
  for (const Rule& rule : rules)
    if (rule_matches(rule, t)) return std::string();
  if (!equivalent || !c.kind.custom) return std::nullopt;
  const auto kinds = c.server.registry().snapshot();
  for (const Kind* k : kinds->all()) {
    const api::Resource& res = k->resource;
    if (!k->custom || res.gv.group != t.group || res.plural != t.resource ||
        res.gv.version == t.version)
      continue;
    Target other = t;
    other.version = res.gv.version;
    for (const Rule& rule : rules)
      if (rule_matches(rule, other)) return res.gv.version;
  }
  return std::nullopt;
}

AdmissionRequest shown_at(Context& c, const AdmissionRequest& r, const std::string& version) {
  AdmissionRequest out = r;
  if (version.empty()) return out;
  out.shown_version = version;
  // A Scale (the scale subresource) is autoscaling/v1 whatever version its object is seen at.
  if (!out.kind_group_version.empty()) return out;
  const std::string api_version = c.resource().gv.group + "/" + version;
  for (json* obj : {&out.object, &out.old_object})
    if (obj->is_object() && obj->contains("apiVersion")) (*obj)["apiVersion"] = api_version;
  return out;
}

bool labels_match(const api::LabelSelector& s, const json& labels) {
  return s.empty() || s.matches(labels.is_object() ? labels : json::object());
}

Target target_of(Context& c, const AdmissionRequest& r) {
  Target t;
  t.operation = r.operation;
  t.group = c.resource().gv.group;
  t.version = c.info.version.empty() ? c.resource().gv.version : c.info.version;
  t.resource = c.resource().plural;
  t.subresource = r.subresource;
  t.name = r.name;
  t.namespaced = c.resource().namespaced;
  return t;
}

std::string resource_version(Context& c, const AdmissionRequest& r) {
  if (!r.shown_version.empty()) return r.shown_version;
  return c.info.version.empty() ? c.resource().gv.version : c.info.version;
}

json request_kind(Context& c, const AdmissionRequest& r) {
  const api::Resource& res = c.resource();
  std::string group = res.gv.group;
  std::string version = resource_version(c, r);
  if (!r.kind_group_version.empty()) {
    const auto slash = r.kind_group_version.find('/');
    group = slash == std::string::npos ? "" : r.kind_group_version.substr(0, slash);
    version = r.kind_group_version.substr(slash == std::string::npos ? 0 : slash + 1);
  }
  return {{"group", std::move(group)},
          {"version", std::move(version)},
          {"kind", r.kind.empty() ? res.kind : r.kind}};
}

json namespace_object(Context& c, const AdmissionRequest& r) {
  if (!c.resource().namespaced || r.ns.empty()) return nullptr;
  const Kind* ns_kind = c.server.registry().builtin("", "v1", "namespaces");
  if (ns_kind == nullptr) return nullptr;
  auto kv = c.server.backend().get(Registry::key(*ns_kind, "", r.ns));
  if (!kv.is_ok()) return nullptr;
  auto obj = decode_stored(*kv);
  return obj.is_ok() ? std::move(obj).value() : json(nullptr);
}

namespace {

// The labels a namespaceSelector is matched against: the namespace's, or for a Namespace
// itself, its own (kube matches a namespace by its own labels).
json selector_namespace_labels(Context& c, const AdmissionRequest& r, const json& ns_obj) {
  if (c.kind.strategy.is_namespace) {
    const json& obj = r.object.is_object() ? r.object : r.old_object;
    return at(at(obj, "metadata"), "labels");
  }
  return at(at(ns_obj, "metadata"), "labels");
}

bool object_selector_matches(const api::LabelSelector& s, const AdmissionRequest& r) {
  if (s.empty()) return true;
  // Either the new or the old object may match (kube's objectSelector).
  for (const json* obj : {&r.object, &r.old_object}) {
    if (obj->is_object() && s.matches(at(at(*obj, "metadata"), "labels").is_object()
                                          ? at(at(*obj, "metadata"), "labels")
                                          : json::object()))
      return true;
  }
  return false;
}

bool namespace_selector_matches(Context& c, const api::LabelSelector& s,
                                const AdmissionRequest& r, const json& ns_obj) {
  if (s.empty()) return true;
  const bool is_namespace = c.kind.strategy.is_namespace;
  if (!c.resource().namespaced && !is_namespace) return true;
  return labels_match(s, selector_namespace_labels(c, r, ns_obj));
}

}  // namespace

std::optional<std::string> resources_match(Context& c, const MatchResources& m, const Target& t,
                                           const AdmissionRequest& r,
                                           const json& namespace_object) {
  // No resourceRules (a binding's matchResources may leave them out): every resource the
  // policy's own constraints match.
  std::optional<std::string> version =
      m.rules.empty() ? std::optional<std::string>("")
                      : matched_version(c, m.rules, m.equivalent, t);
  if (!version) return std::nullopt;
  for (const Rule& rule : m.exclude)
    if (rule_matches(rule, t)) return std::nullopt;
  if (!namespace_selector_matches(c, m.namespace_selector, r, namespace_object) ||
      !object_selector_matches(m.object_selector, r))
    return std::nullopt;
  return version;
}

Expression compile_expression(const std::string& source, bool with_params) {
  Expression e;
  e.source = source;
  e.program = cel::compile_in_cached(source, cel::admission_names(with_params, true), &e.error);
  return e;
}

std::vector<MatchCondition> parse_match_conditions(const json& conditions, bool with_params) {
  std::vector<MatchCondition> out;
  if (!conditions.is_array()) return out;
  for (const json& m : conditions)
    out.push_back({text(m, "name"), compile_expression(text(m, "expression"), with_params)});
  return out;
}

json cel_activation(Context& c, const AdmissionRequest& r, const json& ns_obj) {
  json user = {{"username", c.user.name}, {"groups", c.user.groups}};
  if (!c.user.uid.empty()) user["uid"] = c.user.uid;
  const api::Resource& res = c.resource();
  json request = {
      {"kind", request_kind(c, r)},
      {"resource",
       {{"group", res.gv.group},
        {"version", resource_version(c, r)},
        {"resource", res.plural}}},
      {"name", r.name},
      {"namespace", r.ns},
      {"operation", r.operation},
      {"userInfo", std::move(user)},
      {"dryRun", c.dry_run()},
  };
  if (!r.subresource.empty()) request["subResource"] = r.subresource;
  json ns_value = nullptr;
  if (ns_obj.is_object()) {
    // kube shows the namespace's metadata, spec and status.
    ns_value = ns_obj;
  }
  return {{"object", r.object},
          {"oldObject", r.old_object},
          {"request", std::move(request)},
          {"namespaceObject", std::move(ns_value)},
          {"variables", json::object()}};
}

cel::Authorizer cel_authorizer(Context& c, const AdmissionRequest& r) {
  cel::Authorizer a;
  a.user = c.user.name;
  a.groups = c.user.groups;
  a.group = c.resource().gv.group;
  a.resource = c.resource().plural;
  a.subresource = r.subresource;
  a.ns = r.ns;
  a.name = r.name;
  Server& server = c.server;
  a.authorize = [&server](const cel::AuthzAttributes& q) {
    rbac::Attributes attrs;
    attrs.user = q.user;
    attrs.groups = q.groups;
    attrs.verb = q.verb;
    attrs.resource_request = q.resource_request;
    attrs.api_group = q.group;
    attrs.resource = q.resource;
    attrs.subresource = q.subresource;
    attrs.ns = q.ns;
    attrs.name = q.name;
    attrs.path = q.path;
    rbac::Decision d = server.authorizer().authorize(attrs);
    return cel::AuthzDecision{d.allowed, d.reason, ""};
  };
  return a;
}

ConditionOutcome evaluate_conditions(const std::vector<MatchCondition>& conditions,
                                     const json& activation,
                                     const cel::EvalOptions& options) {
  ConditionOutcome out;
  for (const MatchCondition& m : conditions) {
    if (!m.expression.program) {
      out.error = "compilation failed for matchCondition " + m.name + ": " + m.expression.error;
      return out;
    }
    auto v = cel::evaluate(*m.expression.program, activation, nullptr, options);
    if (!v.ok) {
      out.error = "matchCondition " + m.name + ": " + v.error;
      continue;  // kube: a false condition wins over an error
    }
    if (!v.value.is_boolean()) {
      out.error = "matchCondition " + m.name + ": expression must evaluate to bool";
      continue;
    }
    if (!v.value.get<bool>()) {
      out.matches = false;
      out.error.clear();
      return out;
    }
  }
  return out;
}

namespace {

MatchResources parse_match_resources(const json& m) {
  MatchResources out;
  out.set = m.is_object();
  out.rules = parse_rules(at(m, "resourceRules"));
  out.exclude = parse_rules(at(m, "excludeResourceRules"));
  out.namespace_selector = selector(at(m, "namespaceSelector"));
  out.object_selector = selector(at(m, "objectSelector"));
  out.equivalent = text(m, "matchPolicy", "Equivalent") != "Exact";
  return out;
}

Webhook parse_webhook(const std::string& config, const json& w, bool mutating) {
  Webhook h;
  h.config = config;
  h.name = text(w, "name");
  h.mutating = mutating;
  h.rules = parse_rules(at(w, "rules"));
  h.equivalent = text(w, "matchPolicy", "Equivalent") != "Exact";
  h.fail_closed = text(w, "failurePolicy", "Fail") != "Ignore";
  h.namespace_selector = selector(at(w, "namespaceSelector"));
  h.object_selector = selector(at(w, "objectSelector"));
  h.side_effects = text(w, "sideEffects", "Unknown");
  if (at(w, "timeoutSeconds").is_number_integer())
    h.timeout_seconds = at(w, "timeoutSeconds").get<int>();
  h.review_versions = strings(at(w, "admissionReviewVersions"));
  h.reinvoke = text(w, "reinvocationPolicy", "Never") == "IfNeeded";
  h.match_conditions = parse_match_conditions(at(w, "matchConditions"), false);
  const json& cc = at(w, "clientConfig");
  h.url = text(cc, "url");
  const json& svc = at(cc, "service");
  h.service_namespace = text(svc, "namespace");
  h.service_name = text(svc, "name");
  h.service_path = text(svc, "path");
  if (at(svc, "port").is_number_integer()) h.service_port = at(svc, "port").get<int>();
  if (auto ca = base64_decode(text(cc, "caBundle"))) h.ca_pem = *ca;
  return h;
}

Policy parse_policy(const std::string& name, const json& obj) {
  Policy p;
  p.name = name;
  const json& spec = at(obj, "spec");
  p.fail_closed = text(spec, "failurePolicy", "Fail") != "Ignore";
  const json& pk = at(spec, "paramKind");
  p.param_api_version = text(pk, "apiVersion");
  p.param_kind = text(pk, "kind");
  const bool params = !p.param_kind.empty();
  p.match = parse_match_resources(at(spec, "matchConstraints"));
  p.match_conditions = parse_match_conditions(at(spec, "matchConditions"), params);
  for (const json& v : list_at(spec, "variables"))
    p.variables.emplace_back(text(v, "name"), compile_expression(text(v, "expression"), params));
  for (const json& v : list_at(spec, "validations")) {
    Validation val;
    val.expression = compile_expression(text(v, "expression"), params);
    val.message = text(v, "message");
    if (!text(v, "messageExpression").empty())
      val.message_expression = compile_expression(text(v, "messageExpression"), params);
    val.reason = text(v, "reason", "Invalid");
    p.validations.push_back(std::move(val));
  }
  for (const json& a : list_at(spec, "auditAnnotations")) {
    p.audit_annotations.emplace_back(text(a, "key"),
                                     compile_expression(text(a, "valueExpression"), params));
  }
  return p;
}

Binding parse_binding(const std::string& name, const json& obj) {
  Binding b;
  b.name = name;
  const json& spec = at(obj, "spec");
  b.policy = text(spec, "policyName");
  const json& ref = at(spec, "paramRef");
  if (ref.is_object()) {
    b.has_param_ref = true;
    b.param_name = text(ref, "name");
    b.param_namespace = text(ref, "namespace");
    b.param_selector_set = at(ref, "selector").is_object();
    b.param_selector = selector(at(ref, "selector"));
    b.deny_missing_param = text(ref, "parameterNotFoundAction", "Deny") != "Allow";
  }
  b.match = parse_match_resources(at(spec, "matchResources"));
  for (const std::string& a : strings(at(spec, "validationActions"))) {
    if (a == "Deny") b.deny = true;
    if (a == "Warn") b.warn = true;
    if (a == "Audit") b.audit = true;
  }
  return b;
}

}  // namespace

std::shared_ptr<const Snapshot> compile_snapshot(
    const std::vector<std::pair<std::string, json>>& objects) {
  auto s = std::make_shared<Snapshot>();
  // Keys sort by plural, then name: configurations run in the order of their names.
  for (const auto& [key, obj] : objects) {
    std::string_view rest = std::string_view(key).substr(kPrefix.size());
    std::string plural(rest.substr(0, rest.find('/')));
    std::string name = text(at(obj, "metadata"), "name");
    if (plural == "mutatingwebhookconfigurations" || plural == "validatingwebhookconfigurations") {
      const bool mutating = plural[0] == 'm';
      const json& hooks = at(obj, "webhooks");
      if (!hooks.is_array()) continue;
      for (const json& w : hooks)
        (mutating ? s->mutating : s->validating).push_back(parse_webhook(name, w, mutating));
    } else if (plural == "validatingadmissionpolicies") {
      s->policies.push_back(parse_policy(name, obj));
    } else if (plural == "validatingadmissionpolicybindings") {
      s->bindings.push_back(parse_binding(name, obj));
    }
  }
  return s;
}

}  // namespace admission

// ---------------------------------------------------------------------------------------------
// The snapshot

Admission::Admission(storage::Backend* backend) : backend_(backend) {
  if (backend_ != nullptr)
    revision_ = std::make_unique<PrefixRevision>(backend_, std::string(kPrefix), "admission",
                                                 [this] { ++generation_; });
}

Admission::~Admission() { shutdown(); }

void Admission::shutdown() {
  if (revision_) revision_->shutdown();
}

std::shared_ptr<const admission::Snapshot> Admission::snapshot(std::string* error) {
  if (backend_ == nullptr) return std::make_shared<admission::Snapshot>();
  auto fresh = [&]() -> std::shared_ptr<const admission::Snapshot> {
    std::lock_guard lock(mu_);
    if (snapshot_ && revision_->watching() && built_revision_ >= revision_->newest())
      return snapshot_;
    return nullptr;
  };
  if (auto s = fresh()) return s;
  std::lock_guard rebuild(rebuild_mu_);
  revision_->ensure();
  if (auto s = fresh()) return s;
  storage::ListOptions o;
  o.prefix = std::string(kPrefix);
  auto listed = backend_->list(o);
  if (!listed.is_ok()) {
    *error = listed.status().message();
    return nullptr;
  }
  std::vector<std::pair<std::string, json>> objects;
  for (storage::KeyValue& kv : listed->items) {
    json obj = json::parse(kv.value, nullptr, false);
    if (obj.is_object()) objects.emplace_back(std::move(kv.key), std::move(obj));
  }
  auto s = admission::compile_snapshot(objects);
  std::lock_guard lock(mu_);
  snapshot_ = s;
  built_revision_ = listed->revision;
  return s;
}

bool Admission::active() {
  const uint64_t known = active_.load();
  const uint64_t generation = generation_.load();
  const bool watching = revision_ == nullptr || revision_->watching();
  if ((known & 2) != 0 && known >> 2 == generation && watching) return (known & 1) != 0;
  std::string error;
  auto s = snapshot(&error);
  if (!s) return true;  // unreadable: take the slow path, which reports it
  // A write seen after `generation` was read makes this answer stale at once.
  active_ = generation * 4 + 2 + (s->empty() ? 0 : 1);
  return !s->empty();
}

// ---------------------------------------------------------------------------------------------
// Metrics

namespace {

constexpr double kLatencyBuckets[] = {0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25};

std::string labels(const std::vector<const char*>& names, const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += std::string(names[i]) + "=\"" + values[i] + "\"";
  }
  return out;
}

}  // namespace

void Admission::record_webhook(const std::string& name, bool mutating,
                               const std::string& operation, int code, bool rejected,
                               double seconds) {
  const std::string type = mutating ? "admit" : "validating";
  const std::string rej = rejected ? "true" : "false";
  std::lock_guard lock(metrics_mu_);
  ++webhook_requests_[{name, type, operation, std::to_string(code), rej}];
  Histogram& h = webhook_latency_[{name, type, operation, rej}];
  if (h.counts.empty()) h.counts.assign(std::size(kLatencyBuckets), 0);
  for (size_t i = 0; i < std::size(kLatencyBuckets); ++i)
    if (seconds <= kLatencyBuckets[i]) ++h.counts[i];
  ++h.count;
  h.sum += seconds;
}

void Admission::record_policy(const std::string& policy, const std::string& binding,
                              const std::string& action) {
  std::lock_guard lock(metrics_mu_);
  ++policy_checks_[{policy, binding, action}];
}

std::string Admission::render_metrics() const {
  std::lock_guard lock(metrics_mu_);
  std::string out;
  if (!webhook_requests_.empty()) {
    out += "# HELP apiserver_admission_webhook_request_total Admission webhook calls by name, "
           "type, operation, HTTP code and whether they rejected the request.\n"
           "# TYPE apiserver_admission_webhook_request_total counter\n";
    for (const auto& [k, v] : webhook_requests_)
      out += "apiserver_admission_webhook_request_total" +
             labels({"name", "type", "operation", "code", "rejected"}, k) + "} " +
             std::to_string(v) + "\n";
    out += "# HELP apiserver_admission_webhook_admission_duration_seconds Admission webhook "
           "latency by name, type, operation and whether it rejected the request.\n"
           "# TYPE apiserver_admission_webhook_admission_duration_seconds histogram\n";
    const std::vector<const char*> names = {"name", "type", "operation", "rejected"};
    for (const auto& [k, h] : webhook_latency_) {
      const std::string base = labels(names, k);
      for (size_t i = 0; i < h.counts.size(); ++i) {
        char le[32];
        std::snprintf(le, sizeof le, "%g", kLatencyBuckets[i]);
        out += "apiserver_admission_webhook_admission_duration_seconds_bucket" + base +
               ",le=\"" + le + "\"} " + std::to_string(h.counts[i]) + "\n";
      }
      out += "apiserver_admission_webhook_admission_duration_seconds_bucket" + base +
             ",le=\"+Inf\"} " + std::to_string(h.count) + "\n";
      char sum[64];
      std::snprintf(sum, sizeof sum, "%g", h.sum);
      out += "apiserver_admission_webhook_admission_duration_seconds_sum" + base + "} " + sum +
             "\n";
      out += "apiserver_admission_webhook_admission_duration_seconds_count" + base + "} " +
             std::to_string(h.count) + "\n";
    }
  }
  if (!policy_checks_.empty()) {
    out += "# HELP apiserver_validating_admission_policy_check_total Validating admission policy "
           "checks by policy, binding and what was done (allow, deny, warn, audit).\n"
           "# TYPE apiserver_validating_admission_policy_check_total counter\n";
    for (const auto& [k, v] : policy_checks_)
      out += "apiserver_validating_admission_policy_check_total" +
             labels({"policy", "policy_binding", "enforcement_action"}, k) + "} " +
             std::to_string(v) + "\n";
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The passes

namespace {

using admission::Webhook;

std::string new_review_uid() { return new_uid(); }

// Whether `w` applies to the request (rules, selectors, match conditions). A match condition
// that fails to evaluate is the webhook's failure (its failurePolicy decides).
struct Applies {
  bool yes = false;
  std::string error;
  std::string version;  // the version its rules matched at ("" the request's)
};

Applies webhook_applies(Context& c, const Webhook& w, const admission::Target& t,
                        const AdmissionRequest& r, const json& ns_obj) {
  Applies out;
  auto version = admission::matched_version(c, w.rules, w.equivalent, t);
  if (!version) return out;
  out.version = std::move(*version);
  if (!admission::namespace_selector_matches(c, w.namespace_selector, r, ns_obj)) return out;
  if (!admission::object_selector_matches(w.object_selector, r)) return out;
  if (!w.match_conditions.empty()) {
    const cel::Authorizer authorizer = admission::cel_authorizer(c, r);
    cel::EvalOptions options;
    options.authorizer = &authorizer;
    auto cond = admission::evaluate_conditions(w.match_conditions,
                                               admission::cel_activation(c, r, ns_obj), options);
    if (!cond.matches) return out;
    if (!cond.error.empty()) {
      out.yes = true;
      out.error = cond.error;
      return out;
    }
  }
  out.yes = true;
  return out;
}

ApiError call_failed(const Webhook& w, const std::string& why) {
  return ApiError(Status::internal("Internal error occurred: failed calling webhook \"" + w.name +
                                  "\": " + why));
}

ApiError denied(const Webhook& w, const json& result) {
  json s = result.is_object() ? result : json::object();
  int code = s.value("code", 0);
  if (!s["code"].is_number_integer() || code < 400) code = 400;
  std::string message = s.value("message", "");
  std::string reason = s.value("reason", "");
  const std::string by = "admission webhook \"" + w.name + "\" denied the request";
  if (!message.empty()) message = by + ": " + message;
  else if (!reason.empty()) message = by + ": " + reason;
  else message = by + " without explanation";
  json raw = {{"kind", "Status"},
              {"apiVersion", "v1"},
              {"metadata", json::object()},
              {"status", "Failure"},
              {"message", message},
              {"code", code}};
  if (!reason.empty()) raw["reason"] = reason;
  if (s.contains("details")) raw["details"] = s["details"];
  ApiError e(Status(Code::kForbidden, message));
  e.raw = std::move(raw);
  return e;
}

// A dry run reaches only webhooks that declare no side effects.
std::optional<ApiError> check_dry_run(Context& c, const Webhook& w) {
  if (!c.dry_run() || w.side_effects == "None" || w.side_effects == "NoneOnDryRun")
    return std::nullopt;
  return ApiError(Status::bad_request("admission webhook \"" + w.name +
                                      "\" does not support dry run"));
}

void add_warnings(Context& c, const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) c.warnings.push_back(w);
}

// Keeps what a mutating webhook may not change: the system fields the server set.
void restore_system_fields(json& obj, const json& before) {
  if (!obj.is_object()) return;
  if (!obj["metadata"].is_object()) obj["metadata"] = json::object();
  const json& bm = at(before, "metadata");
  for (const char* f : {"uid", "creationTimestamp", "namespace", "resourceVersion", "generation"}) {
    if (bm.is_object() && bm.contains(f)) obj["metadata"][f] = bm[f];
    else obj["metadata"].erase(f);
  }
  for (const char* f : {"apiVersion", "kind"})
    if (before.contains(f)) obj[f] = before[f];
}

}  // namespace

std::optional<ApiError> Admission::mutate(Context& c, AdmissionRequest& r) {
  std::string error;
  auto s = snapshot(&error);
  if (!s) return ApiError(Status::internal("reading admission configurations: " + error));
  if (s->mutating.empty()) return std::nullopt;
  const admission::Target t = admission::target_of(c, r);
  json ns_obj;
  bool ns_read = false;
  // Mutations so far; each webhook remembers how many it had seen when last called.
  int changes = 0;
  std::vector<int> seen(s->mutating.size(), -1);
  auto run = [&](size_t i) -> std::optional<ApiError> {
    const Webhook& w = s->mutating[i];
    if (!ns_read && (!w.namespace_selector.empty() || !w.match_conditions.empty())) {
      ns_obj = admission::namespace_object(c, r);
      ns_read = true;
    }
    Applies a = webhook_applies(c, w, t, r, ns_obj);
    if (!a.yes) return std::nullopt;
    if (!a.error.empty()) {
      if (!w.fail_closed) return std::nullopt;
      return call_failed(w, a.error);
    }
    if (auto err = check_dry_run(c, w)) return err;
    seen[i] = changes;
    std::optional<AdmissionRequest> converted;
    if (!a.version.empty()) converted = admission::shown_at(c, r, a.version);
    const AdmissionRequest& shown = converted ? *converted : r;
    auto answer = admission::call_webhook(
        c, w, admission::admission_review(c, w, shown, new_review_uid()));
    add_warnings(c, answer.warnings);
    if (!answer.called) {
      if (!w.fail_closed) {
        VKUBE_LOG(warn, "webhook failed, ignored by its failurePolicy",
                  {"webhook", w.name}, {"error", answer.error});
        return std::nullopt;
      }
      return call_failed(w, answer.error);
    }
    if (!answer.allowed) return denied(w, answer.status);
    if (answer.patch.is_array() && !answer.patch.empty()) {
      auto patched = apply_patch(PatchType::kJson, shown.object, answer.patch, nullptr);
      if (!patched.is_ok())
        return call_failed(w, "JSONPatch could not be applied: " + patched.status().message());
      json next = std::move(patched).value();
      restore_system_fields(next, shown.object);
      // Back to the request's version (an apiVersion, as the CRD converts with None).
      if (converted && next.is_object()) next["apiVersion"] = r.object.value("apiVersion", json());
      if (next != r.object) {
        r.object = std::move(next);
        ++changes;
        seen[i] = changes;
      }
    }
    return std::nullopt;
  };
  for (size_t i = 0; i < s->mutating.size(); ++i)
    if (auto err = run(i)) return err;
  // Reinvocation: once more for an IfNeeded webhook whose object a later one changed.
  if (changes > 0) {
    for (size_t i = 0; i < s->mutating.size(); ++i) {
      if (!s->mutating[i].reinvoke || seen[i] < 0 || seen[i] == changes) continue;
      if (auto err = run(i)) return err;
    }
  }
  return std::nullopt;
}

std::optional<ApiError> Admission::validate(Context& c, const AdmissionRequest& r) {
  std::string error;
  auto s = snapshot(&error);
  if (!s) return ApiError(Status::internal("reading admission configurations: " + error));
  if (s->validating.empty() && s->bindings.empty()) return std::nullopt;
  const admission::Target t = admission::target_of(c, r);
  // The namespace is read only where something looks at it: a policy's CEL, a webhook's
  // namespaceSelector or matchConditions.
  bool wants_namespace = !s->bindings.empty();
  for (const Webhook& w : s->validating)
    wants_namespace = wants_namespace || !w.namespace_selector.empty() || !w.match_conditions.empty();
  const json ns_obj = wants_namespace ? admission::namespace_object(c, r) : json(nullptr);
  if (!s->bindings.empty()) {
    if (auto err = admission::run_policies(c, *s, r, t, ns_obj)) return err;
  }
  // The validating webhooks that apply, called at once, each on its own thread.
  std::vector<const Webhook*> hooks;
  std::vector<std::string> versions;
  for (const Webhook& w : s->validating) {
    Applies a = webhook_applies(c, w, t, r, ns_obj);
    if (!a.yes) continue;
    if (!a.error.empty()) {
      if (w.fail_closed) return call_failed(w, a.error);
      continue;
    }
    if (auto err = check_dry_run(c, w)) return err;
    hooks.push_back(&w);
    versions.push_back(std::move(a.version));
  }
  if (hooks.empty()) return std::nullopt;
  std::vector<admission::WebhookAnswer> answers(hooks.size());
  auto review_of = [&](size_t i) {
    if (versions[i].empty()) return admission::admission_review(c, *hooks[i], r, new_uid());
    return admission::admission_review(c, *hooks[i], admission::shown_at(c, r, versions[i]),
                                       new_uid());
  };
  if (hooks.size() == 1) {
    answers[0] = admission::call_webhook(c, *hooks[0], review_of(0));
  } else {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < hooks.size(); ++i) {
      json review = review_of(i);
      threads.emplace_back([&, i, review = std::move(review)] {
        answers[i] = admission::call_webhook(c, *hooks[i], review);
      });
    }
    for (auto& th : threads) th.join();
  }
  for (size_t i = 0; i < hooks.size(); ++i) {
    const Webhook& w = *hooks[i];
    add_warnings(c, answers[i].warnings);
    if (!answers[i].called) {
      if (w.fail_closed) return call_failed(w, answers[i].error);
      VKUBE_LOG(warn, "webhook failed, ignored by its failurePolicy", {"webhook", w.name},
                {"error", answers[i].error});
      continue;
    }
    if (!answers[i].allowed) return denied(w, answers[i].status);
  }
  return std::nullopt;
}

}  // namespace vkube::apiserver
