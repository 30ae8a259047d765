// The x-kubernetes-validations walker: runs each rule of a CRD's structural schema with `self`
// bound to the value at the rule's node, the way kube-apiserver's schema/cel Validator does
// (null values skipped, transition rules only where an old value correlates, a per-object cost
// budget), and reports failures as kube words them. Also the CRD-write checks of those rules.
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cel_rules.h"

namespace vkube::apiserver::crd::cel {
namespace {

using vkube::apiserver::FieldError;

constexpr int kMaxSchemaDepth = 256;
constexpr std::size_t kMaxMessageExpressionBytes = 5 * 1024;
constexpr std::string_view kBudgetExhausted =
    "validation failed due to running out of cost budget, no further validation rules will be run";

// field.Path strings: "" is the root, which kube prints as "<nil>".
std::string child_path(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}
std::string key_path(const std::string& path, std::string_view key) {
  return path + "[" + std::string(key) + "]";
}
std::string printed(const std::string& path) {
  return path.empty() ? "<nil>" : path;
}

std::string trim(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return "";
  std::size_t e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

bool has_newline(std::string_view s) {
  return s.find_first_of("\n\r") != std::string_view::npos;
}

// JSON text that never throws (invalid UTF-8 is replaced).
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// An old value of JSON null is no old value (kube's unstructured nil).
const json* present(const json* old) {
  return old != nullptr && !old->is_null() ? old : nullptr;
}

const json* member(const json* obj, std::string_view key) {
  if (obj == nullptr || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}

const json* object_member(const json* obj, std::string_view key) {
  const json* m = member(obj, key);
  return m != nullptr && m->is_object() ? m : nullptr;
}

std::string string_member(const json* obj, std::string_view key) {
  const json* m = member(obj, key);
  return m != nullptr && m->is_string() ? m->get<std::string>() : "";
}

bool bool_member(const json* obj, std::string_view key) {
  const json* m = member(obj, key);
  return m != nullptr && m->is_boolean() && m->get<bool>();
}

// ruleErrorString / ruleMessageOrDefault of kube's validator.
std::string rule_error_string(const json& rule) {
  std::string message = trim(string_member(&rule, "message"));
  return message.empty() ? trim(string_member(&rule, "rule")) : message;
}
std::string rule_message_or_default(const json& rule) {
  std::string message = trim(string_member(&rule, "message"));
  return message.empty() ? "failed rule: " + rule_error_string(rule) : message;
}

// kube's single-quote unescaping of a fieldPath ['key'].
std::optional<std::string> unescape_single_quoted(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out.push_back(s[i]);
      continue;
    }
    if (++i >= s.size()) return std::nullopt;
    static const std::string_view kFrom = "abfnrtv'\\";
    static const std::string_view kTo = "\a\b\f\n\r\t\v'\\";
    std::size_t at = kFrom.find(s[i]);
    if (at == std::string_view::npos) return std::nullopt;
    out.push_back(kTo[at]);
  }
  return out;
}

// fieldPath tokens: '.', '[', ']', quoted strings and names.
std::vector<std::string> field_path_tokens(std::string_view p) {
  std::vector<std::string> toks;
  for (std::size_t i = 0; i < p.size();) {
    if (p[i] == '.' || p[i] == '[' || p[i] == ']') {
      toks.emplace_back(1, p[i++]);
    } else if (p[i] == '\'') {
      std::size_t j = i + 1;
      while (j < p.size() && !(p[j] == '\'' && p[j - 1] != '\\')) ++j;
      toks.emplace_back(p.substr(i, std::min(j + 1, p.size()) - i));
      i = j + 1;
    } else {
      std::size_t j = p.find_first_of(".[]", i);
      if (j == std::string_view::npos) j = p.size();
      toks.emplace_back(p.substr(i, j - i));
      i = j;
    }
  }
  return toks;
}

// kube's ValidFieldPath: the field.Path string a rule's fieldPath names, relative to the rule's
// node, or nullopt when it does not name a field of `schema`.
std::optional<std::string> normalize_field_path(std::string_view field_path, const json& schema) {
  std::vector<std::string> toks = field_path_tokens(field_path);
  std::string out;
  const json* cur = &schema;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    std::string name;
    if (toks[i] == "[") {
      if (i + 2 >= toks.size() || toks[i + 2] != "]") return std::nullopt;
      const std::string& q = toks[i + 1];
      if (q.size() < 2 || q.front() != '\'' || q.back() != '\'') return std::nullopt;
      auto unescaped = unescape_single_quoted(std::string_view(q).substr(1, q.size() - 2));
      if (!unescaped) return std::nullopt;
      name = *unescaped;
      i += 2;
    } else if (toks[i] == "." && i + 1 < toks.size()) {
      name = toks[++i];
    } else {
      return std::nullopt;
    }
    if (member(cur, "properties") != nullptr) {
      cur = object_member(object_member(cur, "properties"), name);
      if (cur == nullptr) return std::nullopt;
      out = child_path(out, name);
    } else if ((cur = object_member(cur, "additionalProperties")) != nullptr) {
      out = key_path(out, name);
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// validate_rules

struct Walk {
  FieldErrors& errs;
  int64_t budget = kRuntimeCostBudget;
  bool stopped = false;
};

// Where a rule node sits: its path, its typing schema, and the values.
struct Site {
  const json& type_schema;
  const json& obj;
  const json* old;
  std::string path;
  bool resource_root;
};

FieldError field_error(FieldError::Type type, const std::string& path, std::string detail,
                       json value = nullptr) {
  return FieldError{type, printed(path), std::move(detail), std::move(value)};
}

json type_value(const Site& site) {
  return string_member(&site.type_schema, "type");
}

void invalid(Walk& w, const Site& site, const std::string& path, std::string detail) {
  w.errs.push_back(
      field_error(FieldError::Type::kInvalid, path, std::move(detail), type_value(site)));
}

// fieldErrorForReason.
void add_failure(Walk& w, const Site& site, const std::string& path, const json& rule,
                 std::string detail) {
  std::string reason = string_member(&rule, "reason");
  if (reason == "FieldValueForbidden") {
    w.errs.push_back(field_error(FieldError::Type::kForbidden, path, std::move(detail)));
  } else if (reason == "FieldValueRequired") {
    w.errs.push_back(field_error(FieldError::Type::kRequired, path, std::move(detail)));
  } else if (reason == "FieldValueDuplicate") {
    w.errs.push_back(field_error(FieldError::Type::kDuplicate, path, "", type_value(site)));
  } else {
    invalid(w, site, path, std::move(detail));
  }
}

EvalResult run(const Program& program, const Site& site) {
  EvalOptions options;
  options.schema = &site.type_schema;
  options.resource_root = site.resource_root;
  return evaluate(program, site.obj, site.old, options);
}

// Spends `cost` from the budget; false (and the budget error) when it is exhausted.
bool spend(Walk& w, const Site& site, int64_t cost, std::string_view message) {
  if (cost > w.budget) {
    invalid(w, site, site.path, std::string(message));
    w.stopped = true;
    return false;
  }
  w.budget -= cost;
  return true;
}

// The failure message from messageExpression; nullopt to fall back to message. Sets w.stopped
// when the expression exhausted a cost limit.
std::optional<std::string> message_expression(Walk& w, const Site& site, const std::string& path,
                                              const json& rule) {
  std::string expr = string_member(&rule, "messageExpression");
  if (trim(expr).empty()) return std::nullopt;
  auto program = compile_cached(expr, nullptr);
  if (!program) return std::nullopt;
  EvalResult r = run(*program, site);
  if (!spend(w, site, r.cost,
             "messageExpression evaluation failed due to running out of cost budget, no further "
             "validation rules will be run")) {
    return std::nullopt;
  }
  if (r.cost_exceeded) {
    invalid(w, site, path,
            "no further validation rules will be run due to call cost exceeds limit for "
            "messageExpression: " +
                dump(json(expr)));
    w.stopped = true;
    return std::nullopt;
  }
  if (!r.ok || !r.value.is_string()) return std::nullopt;
  std::string message = trim(r.value.get<std::string>());
  if (message.empty() || message.size() > kMaxMessageExpressionBytes || has_newline(message)) {
    return std::nullopt;
  }
  return message;
}

void report_eval_error(Walk& w, const Site& site, const json& rule, const EvalResult& r) {
  std::string what = rule_error_string(rule);
  if (r.cost_exceeded) {
    invalid(w, site, site.path,
            "'" + r.error +
                "': no further validation rules will be run due to call cost exceeds "
                "limit for rule: " +
                what);
    w.stopped = true;
  } else if (r.error.rfind("no such overload", 0) == 0) {
    invalid(w, site, site.path,
            "'" + r.error +
                "': call arguments did not match a supported operator, function or "
                "macro signature for rule: " +
                what);
  } else {
    invalid(w, site, site.path, r.error + " evaluating rule: " + what);
  }
}

void validate_rule(Walk& w, const Site& site, const json& rule) {
  std::string text = string_member(&rule, "rule");
  if (trim(text).empty()) return;
  std::string error;
  auto program = compile_cached(text, &error);
  if (!program) {
    // A rule outside vkube's subset was accepted with a warning when the CRD was written.
    if (!unsupported_by_vkube(error)) {
      invalid(w, site, site.path, "rule compile error: compilation failed: " + error);
    }
    return;
  }
  if (program->uses_old_self() && site.old == nullptr) return;  // transition rule, nothing old
  EvalResult r = run(*program, site);
  if (!spend(w, site, r.cost, kBudgetExhausted)) return;
  if (!r.ok) {
    report_eval_error(w, site, rule, r);
    return;
  }
  if (r.value.is_boolean() && r.value.get<bool>()) return;
  std::string path = site.path;
  std::string field_path = trim(string_member(&rule, "fieldPath"));
  if (!field_path.empty()) {
    if (auto normalized = normalize_field_path(field_path, site.type_schema)) {
      path = child_path(path, *normalized);
    }
  }
  auto detail = message_expression(w, site, path, rule);
  if (w.stopped) return;
  add_failure(w, site, path, rule, detail ? *detail : rule_message_or_default(rule));
}

void validate_expressions(Walk& w, const json& rules_schema, const Site& site) {
  const json* rules = member(&rules_schema, "x-kubernetes-validations");
  if (rules == nullptr || !rules->is_array() || rules->empty()) return;
  if (w.budget <= 0) {
    invalid(w, site, site.path, std::string(kBudgetExhausted));
    w.stopped = true;
    return;
  }
  for (const auto& rule : *rules) {
    if (w.stopped) return;
    if (rule.is_object()) validate_rule(w, site, rule);
  }
}

void validate_node(Walk& w, const json& rules_schema, const Site& site, int depth);

// The old element of a list-type=map list with the same key fields as `item`.
class MapListIndex {
 public:
  MapListIndex(const json& type_schema, const json* old) {
    const json* keys = member(&type_schema, "x-kubernetes-list-map-keys");
    if (string_member(&type_schema, "x-kubernetes-list-type") != "map" || keys == nullptr ||
        !keys->is_array() || old == nullptr || !old->is_array()) {
      return;
    }
    keys_ = keys;
    for (const auto& e : *old) {
      if (e.is_object()) index_.emplace(key_of(e), &e);
    }
  }
  const json* get(const json& item) const {
    if (keys_ == nullptr || !item.is_object()) return nullptr;
    auto it = index_.find(key_of(item));
    return it == index_.end() ? nullptr : present(it->second);
  }

 private:
  std::string key_of(const json& e) const {
    json key = json::array();
    for (const auto& k : *keys_) {
      const json* v = k.is_string() ? member(&e, k.get<std::string>()) : nullptr;
      key.push_back(v != nullptr ? *v : json());
    }
    return dump(key);
  }
  const json* keys_ = nullptr;
  std::unordered_map<std::string, const json*> index_;
};

void validate_items(Walk& w, const json& rules_schema, const Site& site, int depth) {
  const json* rules_items = object_member(&rules_schema, "items");
  const json* type_items = object_member(&site.type_schema, "items");
  if (rules_items == nullptr || type_items == nullptr) return;
  MapListIndex old_items(site.type_schema, site.old);
  bool embedded = bool_member(type_items, "x-kubernetes-embedded-resource");
  for (std::size_t i = 0; i < site.obj.size() && !w.stopped; ++i) {
    const json& item = site.obj[i];
    Site sub{*type_items, item, old_items.get(item), key_path(site.path, std::to_string(i)),
             embedded};
    validate_node(w, *rules_items, sub, depth + 1);
  }
}

const json* old_member(const Site& site, const std::string& key) {
  if (site.old == nullptr || !site.old->is_object()) return nullptr;
  auto it = site.old->find(key);
  return it == site.old->end() ? nullptr : present(&*it);
}

void validate_properties(Walk& w, const json& rules_schema, const Site& site, int depth) {
  const json* rules_props = object_member(&rules_schema, "properties");
  const json* type_props = object_member(&site.type_schema, "properties");
  const json* rules_additional = object_member(&rules_schema, "additionalProperties");
  const json* type_additional = object_member(&site.type_schema, "additionalProperties");
  for (auto it = site.obj.begin(); it != site.obj.end() && !w.stopped; ++it) {
    const std::string& key = it.key();
    if (rules_additional != nullptr && type_additional != nullptr) {
      Site sub{*type_additional, *it, old_member(site, key), key_path(site.path, key),
               bool_member(type_additional, "x-kubernetes-embedded-resource")};
      validate_node(w, *rules_additional, sub, depth + 1);
    }
    const json* rules_prop = object_member(rules_props, key);
    const json* type_prop = object_member(type_props, key);
    if (rules_prop != nullptr && type_prop != nullptr) {
      Site sub{*type_prop, *it, old_member(site, key), child_path(site.path, key),
               bool_member(type_prop, "x-kubernetes-embedded-resource")};
      validate_node(w, *rules_prop, sub, depth + 1);
    }
  }
}

void validate_node(Walk& w, const json& rules_schema, const Site& site, int depth) {
  if (w.stopped || site.obj.is_null() || depth > kMaxSchemaDepth || !rules_schema.is_object()) {
    return;
  }
  validate_expressions(w, rules_schema, site);
  const json* all_of = member(&rules_schema, "allOf");
  if (all_of != nullptr && all_of->is_array()) {
    for (const auto& sub : *all_of) {
      if (w.stopped) return;
      validate_node(w, sub, site, depth + 1);
    }
  }
  if (site.obj.is_array()) validate_items(w, rules_schema, site, depth);
  if (site.obj.is_object()) validate_properties(w, rules_schema, site, depth);
}

// ---------------------------------------------------------------------------------------------
// check_rules

struct Check {
  std::vector<std::string>& out;
};

bool supported_reason(const std::string& r) {
  return r == "FieldValueInvalid" || r == "FieldValueForbidden" || r == "FieldValueRequired" ||
         r == "FieldValueDuplicate";
}

void check_rule_fields(Check& c, const json& rule, const std::string& rp, const json& schema) {
  std::string text = string_member(&rule, "rule");
  std::string message = string_member(&rule, "message");
  if (trim(text).empty()) {
    c.out.push_back(rp + ".rule: Required value: rule is not specified");
  } else if (!message.empty() && trim(message).empty()) {
    c.out.push_back(rp + ".message: message must be non-empty if specified");
  } else if (has_newline(trim(message))) {
    c.out.push_back(rp + ".message: message must not contain line breaks");
  } else if (has_newline(trim(text)) && trim(message).empty()) {
    c.out.push_back(rp +
                    ".message: Required value: message must be specified if rule contains "
                    "line breaks");
  }
  std::string msg_expr = string_member(&rule, "messageExpression");
  if (!msg_expr.empty() && trim(msg_expr).empty()) {
    c.out.push_back(rp +
                    ".messageExpression: Required value: messageExpression must be "
                    "non-empty if specified");
  }
  const json* reason = member(&rule, "reason");
  if (reason != nullptr && !(reason->is_string() && supported_reason(reason->get<std::string>()))) {
    c.out.push_back(rp + ".reason: Unsupported value: " + dump(*reason) +
                    ": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", "
                    "\"FieldValueInvalid\", \"FieldValueRequired\"");
  }
  std::string field_path = string_member(&rule, "fieldPath");
  if (!field_path.empty() && (trim(field_path).empty() || has_newline(field_path) ||
                              !normalize_field_path(trim(field_path), schema))) {
    c.out.push_back(rp + ".fieldPath: fieldPath must be a valid path");
  }
}

void check_rule_expressions(Check& c, const json& rule, const std::string& rp,
                            const std::optional<std::string>& uncorrelatable) {
  std::string text = string_member(&rule, "rule");
  bool uses_old_self = false;
  if (!trim(text).empty()) {
    std::string error;
    auto program = compile_cached(text, &error);
    if (!program) {
      c.out.push_back(rp + ".rule: compilation failed: " + error);
    } else {
      const std::string& type = program->result_type();
      if (!type.empty() && type != "bool") {
        c.out.push_back(rp + ".rule: cel expression must evaluate to a bool");
      }
      uses_old_self = program->uses_old_self();
    }
  }
  std::string msg_expr = string_member(&rule, "messageExpression");
  if (!trim(msg_expr).empty()) {
    std::string error;
    auto program = compile_cached(msg_expr, &error);
    if (!program) {
      c.out.push_back(rp + ".messageExpression: messageExpression compilation failed: " + error);
    } else if (!program->result_type().empty() && program->result_type() != "string") {
      c.out.push_back(rp + ".messageExpression: messageExpression must evaluate to a string");
    }
  }
  if (uses_old_self && uncorrelatable) {
    c.out.push_back(rp +
                    ".rule: oldSelf cannot be used on the uncorrelatable portion of the "
                    "schema within " +
                    *uncorrelatable);
  } else if (!uses_old_self && member(&rule, "optionalOldSelf") != nullptr) {
    c.out.push_back(rp + ".optionalOldSelf: may not be set if oldSelf is not used in rule");
  }
}

void check_node(Check& c, const json& schema, const std::string& path,
                const std::optional<std::string>& uncorrelatable, int depth) {
  if (!schema.is_object() || depth > kMaxSchemaDepth) return;
  const json* rules = member(&schema, "x-kubernetes-validations");
  if (rules != nullptr && rules->is_array()) {
    for (std::size_t i = 0; i < rules->size(); ++i) {
      const json& rule = (*rules)[i];
      if (!rule.is_object()) continue;
      std::string rp = path + ".x-kubernetes-validations[" + std::to_string(i) + "]";
      check_rule_fields(c, rule, rp, schema);
      check_rule_expressions(c, rule, rp, uncorrelatable);
    }
  }
  if (const json* props = object_member(&schema, "properties")) {
    for (auto it = props->begin(); it != props->end(); ++it) {
      check_node(c, *it, path + ".properties[" + it.key() + "]", uncorrelatable, depth + 1);
    }
  }
  if (const json* items = object_member(&schema, "items")) {
    std::optional<std::string> next = uncorrelatable;
    if (!next && string_member(&schema, "x-kubernetes-list-type") != "map") next = path;
    check_node(c, *items, path + ".items", next, depth + 1);
  }
  if (const json* additional = object_member(&schema, "additionalProperties")) {
    check_node(c, *additional, path + ".additionalProperties", uncorrelatable, depth + 1);
  }
  for (const char* key : {"allOf", "anyOf", "oneOf"}) {
    const json* subs = member(&schema, key);
    if (subs == nullptr || !subs->is_array()) continue;
    for (std::size_t i = 0; i < subs->size(); ++i) {
      check_node(c, (*subs)[i], path + "." + key + "[" + std::to_string(i) + "]", uncorrelatable,
                 depth + 1);
    }
  }
  if (const json* n = object_member(&schema, "not")) {
    check_node(c, *n, path + ".not", uncorrelatable, depth + 1);
  }
}

}  // namespace

void validate_rules(const json& schema, const json& obj, const json* old, FieldErrors& errs) {
  try {
    Walk w{errs};
    Site root{schema, obj, present(old), "", true};
    validate_node(w, schema, root, 0);
  } catch (const std::exception& e) {
    errs.push_back(
        FieldError{FieldError::Type::kInvalid, "<nil>",
                   std::string("internal error evaluating validation rules: ") + e.what(),
                   string_member(&schema, "type")});
  }
}

std::vector<std::string> check_rules(const json& schema, const std::string& path) {
  std::vector<std::string> out;
  try {
    Check c{out};
    check_node(c, schema, path, std::nullopt, 0);
  } catch (const std::exception& e) {
    out.push_back(path + ": internal error checking validation rules: " + e.what());
  }
  return out;
}

}  // namespace vkube::apiserver::crd::cel
