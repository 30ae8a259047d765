// Static checks of an admission expression against the OpenAPI schemas of what it reads, the
// part of cel-go's type checker a policy author most needs (kube reports it in a
// ValidatingAdmissionPolicy's status.typeChecking): field selections, and operators applied to
// a number and a string or bool. Types it cannot know (int-or-string, preserved unknown fields,
// timestamps, variables, request) are dynamic and never reported.
#include <string>
#include <string_view>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel {
namespace detail {
namespace {

struct T {
  const json* schema = nullptr;  // resolved; nullptr: dynamic
  std::string prim;              // the CEL type when known: int, double, string, bool, list, map
  bool optional = false;         // read through .? or [?]: an optional of the type
};

bool numeric(const std::string& p) {
  return p == "int" || p == "uint" || p == "double";
}

bool scalar(const std::string& p) {
  return numeric(p) || p == "string" || p == "bool" || p == "bytes";
}

class Checker {
 public:
  Checker(std::string_view src, const TypeEnv& env) : src_(src), env_(env) {}

  std::vector<std::string> run(const Node& root) {
    // Each variable is typed from its expression, seeing the ones before it; what its own
    // expression gets wrong is not this expression's to report (kube reports validations only).
    for (const auto& [name, program] : env_.variables) {
      T t;
      if (program != nullptr) {
        const std::string_view src = src_;
        src_ = program->source();
        t = check(program->root());
        src_ = src;
        issues_.clear();
      }
      variables_.emplace_back(name, t);
    }
    check(root);
    return std::move(issues_);
  }

 private:
  void issue(int offset, std::string message) {
    issues_.push_back(issue_text(src_, Issue{offset, std::move(message)}));
  }

  // Follows "$ref" and a lone allOf wrapper (how kube's documents reference components).
  const json* resolve(const json* s) const {
    for (int hops = 0; s != nullptr && s->is_object() && hops < 16; ++hops) {
      auto ref = s->find("$ref");
      if (ref != s->end() && ref->is_string()) {
        s = env_.resolve ? env_.resolve(ref->get<std::string>()) : nullptr;
        continue;
      }
      auto all = s->find("allOf");
      if (all != s->end() && all->is_array() && all->size() == 1 && !s->contains("properties") &&
          !s->contains("type")) {
        s = &(*all)[0];
        continue;
      }
      return s;
    }
    return nullptr;
  }

  T of_schema(const json* raw) const {
    T t;
    t.schema = resolve(raw);
    if (t.schema == nullptr || !t.schema->is_object()) return {};
    const json& s = *t.schema;
    if (s.value("x-kubernetes-int-or-string", false)) return {};
    const std::string type = s.value("type", "");
    const std::string format = s.value("format", "");
    if (type == "integer") t.prim = "int";
    if (type == "number") t.prim = "double";
    if (type == "boolean") t.prim = "bool";
    if (type == "string" && format != "date-time" && format != "duration" && format != "byte" &&
        format != "date")
      t.prim = "string";
    if (type == "array") t.prim = "list";
    if (type == "object") t.prim = "map";
    return t;
  }

  // The schema of field `name` of `t`, dynamic when the schema leaves it open.
  T field(const T& t, const std::string& name, int offset) {
    if (scalar(t.prim)) {
      issue(offset, "type '" + t.prim + "' does not support field selection");
      return {};
    }
    if (t.schema == nullptr) return {};
    const json& s = *t.schema;
    auto props = s.find("properties");
    if (props != s.end() && props->is_object()) {
      auto p = props->find(name);
      if (p != props->end()) return of_schema(&*p);
    }
    auto extra = s.find("additionalProperties");
    if (extra != s.end()) return extra->is_object() ? of_schema(&*extra) : T{};
    if (s.value("x-kubernetes-preserve-unknown-fields", false)) return {};
    if (props != s.end() && props->is_object() && !props->empty()) {
      issue(offset, "undefined field '" + name + "'");
    }
    return {};
  }

  T element(const T& t) {
    if (t.schema == nullptr) return {};
    const json& s = *t.schema;
    if (t.prim == "list" && s.contains("items")) return of_schema(&s["items"]);
    if (t.prim == "map" && s.contains("additionalProperties") &&
        s["additionalProperties"].is_object())
      return of_schema(&s["additionalProperties"]);
    return {};
  }

  T variable(const std::string& name) const {
    if (name == "object" || name == "oldObject") return of_schema(env_.object);
    if (name == "params") return of_schema(env_.params);
    if (name == "namespaceObject") return of_schema(env_.namespace_object);
    return {};
  }

  T select(const Node& n) {
    const Node& target = *n.args[0];
    if (target.kind == NodeKind::kIdent && target.slot == kSlotSelf) return variable(n.name);
    if (target.kind == NodeKind::kSelect && target.name == "variables" &&
        target.args[0]->kind == NodeKind::kIdent && target.args[0]->slot == kSlotSelf) {
      for (const auto& [name, t] : variables_)
        if (name == n.name) return t;
      return {};
    }
    T t = check(target);
    T out = field(t, n.name, n.offset);
    out.optional = out.optional || t.optional || n.optional;
    return out;
  }

  void operands(const Node& n, const T& a, const T& b) {
    if (a.optional || b.optional || a.prim.empty() || b.prim.empty()) return;
    const bool same = a.prim == b.prim;
    const bool arithmetic = n.fn >= Fn::kAdd && n.fn <= Fn::kMod;
    const bool ok = same || (!arithmetic && numeric(a.prim) && numeric(b.prim)) ||
                    (!scalar(a.prim) || !scalar(b.prim));
    if (!ok)
      issue(n.offset, "found no matching overload for '" + n.name + "' applied to '(" + a.prim +
                          ", " + b.prim + ")'");
  }

  T call(const Node& n) {
    std::vector<T> args;
    for (const auto& a : n.args) args.push_back(check(*a));
    if (n.fn >= Fn::kAdd && n.fn <= Fn::kGe && args.size() == 2) {
      operands(n, args[0], args[1]);
      if (n.fn >= Fn::kEq) return {nullptr, "bool", false};
      if (n.fn == Fn::kSub && args[0].prim == "google.protobuf.Timestamp" &&
          args[1].prim == args[0].prim)
        return {nullptr, "google.protobuf.Duration", false};
      if (args[0].prim == args[1].prim && !args[0].optional) return {nullptr, args[0].prim, false};
      return {};
    }
    if ((n.fn == Fn::kOptValue || n.fn == Fn::kOptOrValue) && !args.empty()) {
      T inner = args[0];
      inner.optional = false;
      return inner;
    }
    return {nullptr, std::string(function_result(n.fn)), false};
  }

  T comprehension(const Node& n) {
    T range = check(*n.args[0]);
    T var = range.prim == "map" ? T{nullptr, "string", false} : element(range);
    // Two variables: the index (a list's) or key, then the element or value.
    T second = element(range);
    if (!n.name2.empty() && range.prim == "list") var = {nullptr, "int", false};
    if (range.optional) var = second = {};
    auto slot = static_cast<std::size_t>(n.slot);
    if (vars_.size() <= slot + 1) vars_.resize(slot + 2);
    vars_[slot] = var;
    vars_[slot + 1] = n.name2.empty() ? T{} : second;
    for (std::size_t i = 1; i < n.args.size(); ++i) check(*n.args[i]);
    vars_[slot] = vars_[slot + 1] = {};
    if (n.macro == Macro::kFilter) return range;
    if (n.macro == Macro::kMap || n.macro == Macro::kTransformList) return {nullptr, "list", false};
    if (n.macro == Macro::kTransformMap || n.macro == Macro::kTransformMapEntry)
      return {nullptr, "map", false};
    return {nullptr, "bool", false};
  }

  T check(const Node& n) {
    switch (n.kind) {
      case NodeKind::kLiteral:
        switch (n.lit.kind) {
          case LitKind::kBool:
            return {nullptr, "bool", false};
          case LitKind::kInt:
            return {nullptr, "int", false};
          case LitKind::kUint:
            return {nullptr, "uint", false};
          case LitKind::kDouble:
            return {nullptr, "double", false};
          case LitKind::kString:
            return {nullptr, "string", false};
          case LitKind::kBytes:
            return {nullptr, "bytes", false};
          default:
            return {};
        }
      case NodeKind::kIdent: {
        if (n.slot < 0) return {};
        auto slot = static_cast<std::size_t>(n.slot);
        return slot < vars_.size() ? vars_[slot] : T{};
      }
      case NodeKind::kSelect:
        return select(n);
      case NodeKind::kHas:
        select(n);
        return {nullptr, "bool", false};
      case NodeKind::kIndex: {
        T t = check(*n.args[0]);
        check(*n.args[1]);
        T e = element(t);
        e.optional = e.optional || t.optional || n.optional;
        return e;
      }
      case NodeKind::kCall:
        return call(n);
      case NodeKind::kComprehension:
        return comprehension(n);
      case NodeKind::kCond: {
        check(*n.args[0]);
        T a = check(*n.args[1]);
        T b = check(*n.args[2]);
        return a.prim == b.prim && !a.optional && !b.optional ? T{nullptr, a.prim, false} : T{};
      }
      case NodeKind::kAnd:
      case NodeKind::kOr:
      case NodeKind::kNot:
        for (const auto& a : n.args) check(*a);
        return {nullptr, "bool", false};
      case NodeKind::kList:
      case NodeKind::kMap:
        for (const auto& a : n.args) check(*a);
        return {nullptr, n.kind == NodeKind::kList ? "list" : "map", false};
      case NodeKind::kNeg: {
        T t = check(*n.args[0]);
        return numeric(t.prim) ? T{nullptr, t.prim, false} : T{};
      }
    }
    return {};
  }

  std::string_view src_;
  const TypeEnv& env_;
  std::vector<T> vars_;                               // comprehension variables by slot
  std::vector<std::pair<std::string, T>> variables_;  // the policy's variables, typed
  std::vector<std::string> issues_;
};

}  // namespace
}  // namespace detail

std::vector<std::string> check_types(const Program& program, const TypeEnv& env) {
  try {
    return detail::Checker(program.source(), env).run(program.root());
  } catch (const std::exception&) {
    return {};  // a schema of an unexpected shape: nothing to report
  }
}

}  // namespace vkube::cel
