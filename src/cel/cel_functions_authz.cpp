// kube's CEL authorizer library, as admission expressions see it: `authorizer` and
// `authorizer.requestResource`, the builders (path, group, serviceAccount, resource,
// subresource, namespace, name, fieldSelector, labelSelector), check() calling the server's
// authorizer, and the Decision accessors. Values are immutable: every builder returns a copy.
#include <cctype>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel::detail {
namespace {

using Type = AuthzObject::Type;

// One check() costs as much as kube charges, so an expression can make two of them.
constexpr int64_t kCheckCost = 350000;

Value object_value(AuthzObject o) {
  Value v;
  v.kind = Kind::kObject;
  v.object = std::make_shared<const AuthzObject>(std::move(o));
  return v;
}

const AuthzObject* as(const Value& v, Type t) {
  return v.kind == Kind::kObject && v.object && v.object->type == t ? v.object.get() : nullptr;
}

bool blank(std::string_view s) {
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}

// RFC 1123 label: lower-case alphanumerics and '-', starting and ending alphanumeric.
bool dns_label(std::string_view s, std::size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (c != '-' || i == 0 || i + 1 == s.size())) return false;
  }
  return true;
}

bool dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = s.find('.', start);
    std::string_view part = s.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (!dns_label(part, 253)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

Value check(const AuthzObject& target, std::string_view verb, Ctx& ctx) {
  if (!ctx.charge(kCheckCost)) return make_error(kCostExceeded);
  AuthzObject d;
  d.type = Type::kDecision;
  d.attrs = target.attrs;
  d.attrs.verb = std::string(verb);
  d.attrs.resource_request = target.type == Type::kResourceCheck;
  d.authorizer = target.authorizer;
  if (target.authorizer == nullptr || !target.authorizer->authorize) {
    d.decision.error = "no authorizer";
  } else {
    d.decision = target.authorizer->authorize(d.attrs);
  }
  return object_value(std::move(d));
}

}  // namespace

std::string_view authz_type_name(const AuthzObject& o) {
  switch (o.type) {
    case Type::kAuthorizer:
      return "kubernetes.authorization.Authorizer";
    case Type::kPathCheck:
      return "kubernetes.authorization.PathCheck";
    case Type::kGroupCheck:
      return "kubernetes.authorization.GroupCheck";
    case Type::kResourceCheck:
      return "kubernetes.authorization.ResourceCheck";
    case Type::kDecision:
      return "kubernetes.authorization.Decision";
  }
  return "object";
}

Value authorizer_value(const Ctx& ctx) {
  if (ctx.authorizer == nullptr) return make_error("no such attribute: authorizer");
  AuthzObject o;
  o.authorizer = ctx.authorizer;
  o.attrs.user = ctx.authorizer->user;
  o.attrs.groups = ctx.authorizer->groups;
  return object_value(std::move(o));
}

Value authz_field(const Value& target, std::string_view name) {
  const AuthzObject* a = as(target, Type::kAuthorizer);
  if (a == nullptr || name != "requestResource" || a->authorizer == nullptr)
    return make_error("no such key: " + std::string(name));
  // The request's own resource, checked for the requester (kube's NewResourceAuthorizerVal).
  AuthzObject r;
  r.type = Type::kResourceCheck;
  r.authorizer = a->authorizer;
  r.attrs.user = a->authorizer->user;
  r.attrs.groups = a->authorizer->groups;
  r.attrs.group = a->authorizer->group;
  r.attrs.resource = a->authorizer->resource;
  r.attrs.subresource = a->authorizer->subresource;
  r.attrs.ns = a->authorizer->ns;
  r.attrs.name = a->authorizer->name;
  return object_value(std::move(r));
}

Value authz_function(Fn fn, const std::vector<Value>& a, Ctx& ctx) {
  // Every method takes string arguments after its receiver.
  for (std::size_t i = 1; i < a.size(); ++i)
    if (a[i].kind != Kind::kString) return no_overload();
  const std::string_view arg = a.size() > 1 ? a[1].str() : std::string_view();
  switch (fn) {
    case Fn::kAuthzPath:
    case Fn::kAuthzGroup:
    case Fn::kAuthzServiceAccount: {
      const AuthzObject* o = as(a[0], Type::kAuthorizer);
      if (o == nullptr) return no_overload();
      AuthzObject r = *o;
      if (fn == Fn::kAuthzPath) {
        if (blank(arg)) return make_error("path must not be empty");
        r.type = Type::kPathCheck;
        r.attrs.path = std::string(arg);
      } else if (fn == Fn::kAuthzGroup) {
        r.type = Type::kGroupCheck;
        r.attrs.group = std::string(arg);
      } else {
        const std::string_view name = a[2].str();
        // kube: a service account name is a DNS subdomain, its namespace a DNS label.
        if (!dns_subdomain(name)) return make_error("Invalid service account name");
        if (!dns_label(arg, 63)) return make_error("Invalid service account namespace");
        const std::string ns(arg);
        r.attrs = {};
        r.attrs.user = "system:serviceaccount:" + ns + ":" + std::string(name);
        r.attrs.groups = {"system:serviceaccounts", "system:serviceaccounts:" + ns};
      }
      return object_value(std::move(r));
    }
    case Fn::kAuthzResource: {
      const AuthzObject* o = as(a[0], Type::kGroupCheck);
      if (o == nullptr) return no_overload();
      if (blank(arg)) return make_error("resource must not be empty");
      AuthzObject r = *o;
      r.type = Type::kResourceCheck;
      r.attrs.resource = std::string(arg);
      return object_value(std::move(r));
    }
    case Fn::kAuthzSubresource:
    case Fn::kAuthzNamespace:
    case Fn::kAuthzName:
    case Fn::kAuthzFieldSelector:
    case Fn::kAuthzLabelSelector: {
      const AuthzObject* o = as(a[0], Type::kResourceCheck);
      if (o == nullptr) return no_overload();
      AuthzObject r = *o;
      std::string value(arg);
      if (fn == Fn::kAuthzSubresource) r.attrs.subresource = std::move(value);
      if (fn == Fn::kAuthzNamespace) r.attrs.ns = std::move(value);
      if (fn == Fn::kAuthzName) r.attrs.name = std::move(value);
      // RBAC does not look at selectors; they are kept for an authorizer that would.
      if (fn == Fn::kAuthzFieldSelector) r.field_selector = std::move(value);
      if (fn == Fn::kAuthzLabelSelector) r.label_selector = std::move(value);
      return object_value(std::move(r));
    }
    case Fn::kAuthzCheck: {
      const AuthzObject* o = as(a[0], Type::kResourceCheck);
      if (o == nullptr) o = as(a[0], Type::kPathCheck);
      if (o == nullptr) return no_overload();
      return check(*o, arg, ctx);
    }
    case Fn::kAuthzAllowed:
    case Fn::kAuthzReason:
    case Fn::kAuthzErrored:
    case Fn::kAuthzError: {
      const AuthzObject* d = as(a[0], Type::kDecision);
      if (d == nullptr) return no_overload();
      if (fn == Fn::kAuthzAllowed)
        return make_bool(d->decision.allowed && d->decision.error.empty());
      if (fn == Fn::kAuthzErrored) return make_bool(!d->decision.error.empty());
      return make_string(fn == Fn::kAuthzReason ? d->decision.reason : d->decision.error);
    }
    default:
      return no_overload();
  }
}

}  // namespace vkube::cel::detail
